//! The lab beside the engine: what the `codedb` binary needs and an embedder does not — dataset
//! readers and writers ([`io`]: .npy, .fvecs/.bvecs/.ivecs, gzip IDX, TSV), the papers'
//! evaluation protocols ([`eval`]), the built-in demo ([`demo_tour`]) and the `codedb bench`
//! harness ([`bench`]). The engine is the `codedb` crate; ARCHITECTURE.md draws the line.

pub mod bench;
pub mod demo_tour;
pub mod error;
pub mod eval;
pub mod io;
pub mod plot;

pub use error::Error;
