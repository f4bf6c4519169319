//! Throughput benchmarks run by `codedb bench`: generated segments, the machine's own read
//! bandwidth as the yardstick, and scan cases measured against it.

pub mod bandwidth;
pub mod encode_case;
pub mod generated_segment;
pub mod ivf_case;
pub mod mih_case;
pub mod scan_case;
