//! The figure of `codedb eval --plot`: three panels side by side — precision–recall curves,
//! recall@R against R, mAP against bits — over a shared legend of the pipelines.

use plotters::prelude::*;

use super::style::{self, Look, Marker};
use super::target::PlotError;
use super::{legend, map_bits_chart, pr_chart, recall_chart};
use crate::eval::PipelineScores;

const PANEL_W: u32 = 520;
const PANEL_H: u32 = 440;
const TITLE_H: u32 = 40;
const LEGEND_COLUMNS: usize = 5;

/// The SVG text of the figure; `title` names the data. Relevance is ITQ's Euclidean ground truth
/// (the one every evaluation has); recall@R is the exact nearest neighbour's.
pub fn eval_svg(pipelines: &[PipelineScores], title: &str) -> Result<String, PlotError> {
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
    let legend_h = legend::height(looks.len(), LEGEND_COLUMNS);
    let size = (3 * PANEL_W, TITLE_H + PANEL_H + legend_h);
    let mut svg = String::new();
    {
        let err = || PlotError::draw::<DrawingAreaErrorKind<std::io::Error>>("the eval figure");
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err())?;
        let (head, rest) = root.split_vertically(TITLE_H);
        head.draw(&Text::new(
            title.to_string(),
            (20, 10),
            (style::FONT, 22).into_font(),
        ))
        .map_err(err())?;
        let (panels, foot) = rest.split_vertically(PANEL_H);
        let panels = panels.split_evenly((1, 3));
        pr_chart::draw(&panels[0], pipelines, &looks)?;
        recall_chart::draw(&panels[1], pipelines, &looks)?;
        map_bits_chart::draw(&panels[2], pipelines, &looks)?;
        legend::draw(&foot, &looks, LEGEND_COLUMNS)?;
        root.present().map_err(err())?;
    }
    Ok(svg)
}
