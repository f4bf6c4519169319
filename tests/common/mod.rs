#![allow(dead_code)]
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
pub mod files;
pub mod golden;
pub mod golden_v1_1;
pub mod golden_v1_2;
pub mod golden_v1_3;
pub mod golden_v1_4;
pub mod golden_v1_5;
pub mod golden_v1_6;
pub mod golden_v1_6_hom;
pub mod golden_v1_6_ivf;
pub mod golden_v1_6_mih;
pub mod golden_v1_7;
pub mod golden_v1_8;
pub mod npy;
