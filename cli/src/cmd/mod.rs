//! The commands, one file per group: each holds its `#[derive(Args)]` struct (options, help
//! lines, examples) and the function that runs it.
//! `search` and `eval` run several kinds (k-NN, `--text`, `--examples`; retrieve, classify,
//! text), and none of the kinds imports another: `main.rs` sends a search to its kind, and the
//! text and example kinds take their options and output from `search.rs`; the kinds of `eval`
//! take their arguments from `eval_args.rs`.

pub mod bench;
pub mod build;
pub mod classes;
pub mod columns;
pub mod compact_gc;
pub mod demo;
pub mod eval;
pub mod eval_args;
pub mod eval_text;
pub mod inspect_verify;
pub mod rows;
pub mod search;
pub mod search_examples;
pub mod search_text;
pub mod spec;
pub mod train;
pub mod train_text;
pub mod versions;
