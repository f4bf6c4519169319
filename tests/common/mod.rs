#![allow(dead_code)]
pub mod golden;
pub mod golden_v1_1;
pub mod golden_v1_2;
pub mod golden_v1_3;
pub mod golden_v1_4;
pub mod npy;
