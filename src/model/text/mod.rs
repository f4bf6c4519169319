//! Text → image retrieval (PAMIR, Grangier, Monay & Bengio 2006): a model's optional text
//! head scores a text query against the projected vectors its codes encode.
//!
//! - [`tokenize`]: lower-cased words, split on non-letters (Unicode-aware).
//! - [`Vocabulary`]: training words with idf; [`TextVector`]: tf-idf-norm query (eq. 7).
//! - [`TextHead`]: `W` (T × D) and the vocabulary, stored as stage kind 9 (OPTIONAL).
//! - [`train_pamir`]: passive-aggressive training with validation selection of C and m.
//! - [`RankingMetrics`]: AvgP, BEP, P10 (§5).

mod pamir;
mod ranking_metrics;
mod text_head;
mod tfidf;
mod tokenize;
mod vocabulary;

pub use pamir::{
    MARGIN_NAMES, MarginPolicy, PAMIR_DEFAULT_ITERATIONS, PamirCheckpoint, PamirOptions,
    PamirReport, PamirStop, PamirTrial, UnknownMargin, train_pamir,
};
pub use ranking_metrics::RankingMetrics;
pub use text_head::{TextHead, TextQuery};
pub use tfidf::TextVector;
pub use tokenize::tokenize;
pub use vocabulary::{MAX_TEXT_WEIGHTS, MAX_VOCABULARY, MAX_WORD_BYTES, Vocabulary};
