//! Figures: `codedb eval --plot` (precision–recall, recall@R, mAP against code length) and
//! `codedb bench scan --plot` / `codedb bench plot` (scan throughput against N and threads,
//! with the measured read bandwidth as a bound; FAISS beside codedb when
//! `tools/bench_vs_faiss.py` measured both). Drawn with plotters as SVG or PNG ([`canvas`]: the
//! PNG's text with a bundled font, no system font library). One file per chart; [`target`]
//! chooses the format from the file name and writes the file whole or not at all.

mod canvas;
pub mod eval_figure;
mod legend;
mod map_bits_chart;
mod pr_chart;
mod recall_chart;
pub mod scan_figure;
pub mod scan_records;
mod style;
pub mod target;

pub use eval_figure::eval_plot;
pub use scan_figure::scan_plot;
pub use scan_records::{ScanPoint, scan_points_from_json, scan_points_from_results};
pub use target::{Format, PlotError, PlotTarget};
