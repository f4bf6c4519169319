//! recall@R (the exact nearest neighbour among the first R) against R on a log axis, one line
//! per pipeline: the PQ / FAISS measure.

use plotters::prelude::*;

use super::style::{self, Area, Look};
use super::target::PlotError;
use crate::eval::PipelineScores;

/// The (R, recall@R) points of a pipeline, R increasing.
fn points(p: &PipelineScores) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = p
        .recall_at_r
        .iter()
        .filter_map(|(r, &v)| r.parse::<f64>().ok().map(|r| (r, v)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

pub(crate) fn draw<DB: DrawingBackend>(
    area: &Area<DB>,
    pipelines: &[PipelineScores],
    looks: &[Look],
) -> Result<(), PlotError> {
    let err = || PlotError::draw("recall@R");
    let all: Vec<Vec<(f64, f64)>> = pipelines.iter().map(points).collect();
    let (lo, hi) = style::log_range(all.iter().flatten().map(|p| p.0), 1.3).ok_or_else(|| {
        PlotError::NoData {
            what: "recall@R",
            detail: "no R value".into(),
        }
    })?;
    let mut chart = style::panel(area, "Recall@R (exact 1-NN in the top R)", 58)
        .build_cartesian_2d(style::log10_axis(lo, hi), 0f64..1f64)
        .map_err(err())?;
    style::mesh(&mut chart, "R (items retrieved, log scale)", "recall@R")
        .x_label_formatter(&|v| style::log_tick(*v))
        .y_labels(6)
        .draw()
        .map_err(err())?;
    for (pts, look) in all.iter().zip(looks) {
        style::series(&mut chart, pts, look)?;
    }
    Ok(())
}
