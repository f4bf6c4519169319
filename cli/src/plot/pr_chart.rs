//! Precision against recall of the first n ranked items, one curve per pipeline
//! ([`crate::eval::precision_recall`]).

use plotters::prelude::*;

use super::style::{self, Area, Look, Marker};
use super::target::PlotError;
use crate::eval::PipelineScores;

pub(crate) fn draw<DB: DrawingBackend>(
    area: &Area<DB>,
    pipelines: &[PipelineScores],
    looks: &[Look],
) -> Result<(), PlotError> {
    let err = || PlotError::draw("precision-recall");
    let caption = "Precision-recall (Euclidean neighbours)";
    let mut chart = style::panel(area, caption, 58)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)
        .map_err(err())?;
    style::mesh(
        &mut chart,
        "recall (share of relevant items retrieved)",
        "precision",
    )
    .x_labels(6)
    .y_labels(6)
    .draw()
    .map_err(err())?;
    for (p, look) in pipelines.iter().zip(looks) {
        let curve = &p.pr_curve;
        let points: Vec<(f64, f64)> = curve
            .recall
            .iter()
            .zip(&curve.precision)
            .map(|(&r, &q)| (r, q))
            .collect();
        // Lines only: 40 markers per curve would hide where the curves cross.
        let line = Look {
            marker: Marker::None,
            ..look.clone()
        };
        style::series(&mut chart, &points, &line)?;
    }
    Ok(())
}
