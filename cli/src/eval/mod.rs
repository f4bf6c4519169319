//! Evaluation: exact ground truth and the retrieval/classification metrics of the papers.
//!
//! - [`knn_l2`], [`within_radius`]: exact Euclidean search (deterministic, f64 accumulation).
//! - [`euclidean_ground_truth`]: ITQ §4.2's neighbours within the mean 50th-NN distance.
//! - [`GroundTruth`]: relevance by neighbour sets or by class label, and per-query AP,
//!   precision@k and hash-lookup scores; [`mean_average_precision`],
//!   [`mean_precision_at_k`], [`class_label_map`], [`class_label_precision_at_k`].
//! - [`PrCurve`]: precision–recall of the first n ranked items, n log-spaced.
//! - [`recall_at_r`] (PQ/FAISS protocol), [`top_k_error`] (NCM protocol).
//! - [`classify_eval`]: fit classifier SPECs on a split and report top-1 / top-5 error.
//! - [`rank_by_score`], [`top_k_by_score`]: rankings with ties broken by smaller index.
//! - [`EncodedDatabase`]: a database encoded by a model, ranked with the scan kernels.
//! - [`retrieval_eval`]: the whole ITQ §4.2 protocol for several pipelines (`codedb eval`).
//! - [`text_eval`]: PAMIR §5 text → image retrieval (AvgP, BEP, P10) against baselines.
//!
//! All functions are pure; inputs of the wrong shape give an [`EvalError`].

pub mod classification;
pub mod classify_eval;
pub mod code_ranking;
pub mod euclidean_truth;
pub mod ground_truth;
pub mod hash_lookup;
pub mod knn;
pub mod precision_recall;
pub mod ranked_metrics;
pub mod ranking;
pub mod retrieval_eval;
pub mod text_eval;

pub use crate::error::EvalError;
pub use classification::top_k_error;
pub use classify_eval::{ClassifyRow, classify_eval};
pub use code_ranking::{CodeScan, EncodedDatabase};
pub use euclidean_truth::{
    EuclideanTruth, ITQ_NEIGHBOUR_RANK, euclidean_ground_truth, mean_neighbour_distance,
};
pub use ground_truth::GroundTruth;
pub use hash_lookup::{LookupScores, hamming_ball, hamming_balls};
pub use knn::{Neighbor, knn_l2, within_radius};
pub use precision_recall::{PrCurve, PrSums, log_spaced_cutoffs};
pub use ranked_metrics::{
    MeanScore, class_label_map, class_label_precision_at_k, mean_average_precision,
    mean_precision_at_k, recall_at_r,
};
pub use ranking::{Order, rank_by_score, top_k_by_score};
pub use retrieval_eval::{
    EvalProgress, LookupResult, PipelineScores, RetrievalData, RetrievalOptions, RetrievalReport,
    rank_with_model, retrieval_eval,
};
pub use text_eval::{
    TextEvalData, TextEvalOptions, TextEvalQuery, TextRanker, TextReport, TextScores, text_eval,
};
