//! Files and versions: the index directory layout, inspection and verification.
//! (The writer, snapshots, compaction and GC arrive with the storage-engine issue.)

pub mod inspect;
pub mod layout;
pub mod verify;
