//! The figure of `codedb eval --plot`: three panels side by side — precision–recall curves,
//! recall@R against R, mAP against bits — over a shared legend of the pipelines.

use plotters::prelude::*;

use super::canvas::{self, Figure, TITLE_H};
use super::style::{Area, Look, Marker};
use super::target::{Format, PlotError};
use super::{legend, map_bits_chart, pr_chart, recall_chart};
use crate::eval::PipelineScores;

const PANEL_W: u32 = 520;
const PANEL_H: u32 = 440;
const LEGEND_COLUMNS: usize = 5;

/// The three panels over the legend.
struct EvalFigure<'a> {
    pipelines: &'a [PipelineScores],
    title: &'a str,
    looks: Vec<Look>,
}

impl Figure for EvalFigure<'_> {
    fn size(&self) -> (u32, u32) {
        let legend_h = legend::height(self.looks.len(), LEGEND_COLUMNS);
        (3 * PANEL_W, TITLE_H + PANEL_H + legend_h)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<(), PlotError> {
        let (panels, foot) = canvas::titled(root, self.title, PANEL_H)?;
        let panels = panels.split_evenly((1, 3));
        pr_chart::draw(&panels[0], self.pipelines, &self.looks)?;
        recall_chart::draw(&panels[1], self.pipelines, &self.looks)?;
        map_bits_chart::draw(&panels[2], self.pipelines, &self.looks)?;
        legend::draw(&foot, &self.looks, LEGEND_COLUMNS)
    }
}

/// The figure encoded as `format`; `title` names the data. Relevance is ITQ's Euclidean ground
/// truth (the one every evaluation has); recall@R is the exact nearest neighbour's.
pub fn eval_plot(
    pipelines: &[PipelineScores],
    title: &str,
    format: Format,
) -> Result<Vec<u8>, PlotError> {
    if pipelines.is_empty() {
        return Err(PlotError::NoData {
            what: "eval figure",
            detail: "no pipeline".into(),
        });
    }
    let looks: Vec<Look> = pipelines
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Look::nth(
                i,
                format!("{} ({} bits)", p.pipeline, p.bits),
                Marker::Circle,
            )
        })
        .collect();
    let figure = EvalFigure {
        pipelines,
        title,
        looks,
    };
    canvas::render(&figure, format)
}
