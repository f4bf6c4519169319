//! mAP against code length: one marker per pipeline in its colour, and a grey line through the
//! pipelines of one family (the SPEC without its sizes: `pca-itq:32`, `pca-itq:64` → `pca-itq`),
//! named at its longest code.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::style::{self, Area, Look, Marker};
use super::target::PlotError;
use crate::eval::PipelineScores;

/// The SPEC without its numeric tokens: `pq:8x8` → `pq`, `ncmml:16,itq,bits` → `ncmml:itq,bits`.
pub(crate) fn family(spec: &str) -> String {
    let (head, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let words: Vec<&str> = rest
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.chars().all(|c| c.is_ascii_digit() || c == 'x'))
        .collect();
    if words.is_empty() {
        head.trim().to_string()
    } else {
        format!("{}:{}", head.trim(), words.join(","))
    }
}

pub(crate) fn draw<DB: DrawingBackend>(
    area: &Area<DB>,
    pipelines: &[PipelineScores],
    looks: &[Look],
) -> Result<(), PlotError> {
    let err = || PlotError::draw("mAP against bits");
    let (lo, hi) =
        style::log_range(pipelines.iter().map(|p| p.bits as f64), 1.4).ok_or_else(|| {
            PlotError::NoData {
                what: "mAP against bits",
                detail: "no pipeline".into(),
            }
        })?;
    let top = pipelines.iter().map(|p| p.map_euclid).fold(0f64, f64::max);
    let top = ((top * 1.15).min(1.0) * 10.0).ceil() / 10.0;
    let caption = "mAP (Euclidean neighbours) vs code length";
    let mut chart = style::panel(area, caption, 58)
        .build_cartesian_2d((lo..hi).log_scale().base(2.0), 0f64..top.max(0.1))
        .map_err(err())?;
    style::mesh(&mut chart, "bits per code (log scale)", "mAP")
        .x_label_formatter(&|v| style::log_tick(*v))
        .y_labels(6)
        .draw()
        .map_err(err())?;
    let mut families: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in pipelines {
        families
            .entry(family(&p.pipeline))
            .or_default()
            .push((p.bits as f64, p.map_euclid));
    }
    for (name, mut pts) in families {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let grey = Look {
            label: name.clone(),
            color: style::GREY,
            dash: style::Dash::Solid,
            marker: Marker::None,
        };
        if pts.len() > 1 {
            style::series(&mut chart, &pts, &grey)?;
        }
        if let Some(&last) = pts.last() {
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(last)
                        + Text::new(name, (10, -8), style::label_font().color(&style::GREY)),
                ))
                .map_err(err())?;
        }
    }
    for (p, look) in pipelines.iter().zip(looks) {
        let point = [(p.bits as f64, p.map_euclid)];
        style::series(&mut chart, &point, look)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn family_drops_sizes() {
        assert_eq!(super::family("pca-itq:64"), "pca-itq");
        assert_eq!(super::family("pq:8x8"), "pq");
        assert_eq!(super::family("ncmml:16,itq,bits"), "ncmml:itq,bits");
        assert_eq!(super::family("lsh"), "lsh");
    }
}
