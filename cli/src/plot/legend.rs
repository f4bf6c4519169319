//! A legend drawn in its own strip under the charts, so it never covers data.

use plotters::prelude::*;

use super::style::{Area, Dash, Look, Marker, label_font};
use super::target::PlotError;

const ROW: i32 = 22;
const SAMPLE: i32 = 34;

/// The height a legend of `n` entries in `columns` columns needs.
pub(crate) fn height(n: usize, columns: usize) -> u32 {
    (n.div_ceil(columns.max(1)) as u32) * ROW as u32 + 12
}

/// Draws `entries` row by row in `columns` equal columns.
pub(crate) fn draw<DB: DrawingBackend>(
    area: &Area<DB>,
    entries: &[Look],
    columns: usize,
) -> Result<(), PlotError> {
    let err = || PlotError::draw("the legend");
    let (w, _) = area.dim_in_pixel();
    let columns = columns.max(1);
    let col_w = (w as i32 - 20) / columns as i32;
    for (i, e) in entries.iter().enumerate() {
        let x = 20 + (i % columns) as i32 * col_w;
        let y = 6 + (i / columns) as i32 * ROW + ROW / 2;
        let line = ShapeStyle::from(e.color).stroke_width(2);
        let segments: Vec<(i32, i32)> = match e.dash {
            Dash::Solid => vec![(0, SAMPLE)],
            Dash::Dashed => (0..SAMPLE).step_by(13).map(|s| (s, s + 8)).collect(),
            Dash::Dotted => (0..SAMPLE).step_by(6).map(|s| (s, s + 2)).collect(),
        };
        for (a, b) in segments {
            area.draw(&PathElement::new(
                vec![(x + a, y), (x + b.min(SAMPLE), y)],
                line,
            ))
            .map_err(err())?;
        }
        let mid = (x + SAMPLE / 2, y);
        let fill = ShapeStyle::from(e.color).filled();
        match e.marker {
            Marker::None => {}
            Marker::Circle => area.draw(&Circle::new(mid, 4, fill)).map_err(err())?,
            Marker::Triangle => area
                .draw(&TriangleMarker::new(mid, 6, fill))
                .map_err(err())?,
        }
        area.draw(&Text::new(
            e.label.clone(),
            (x + SAMPLE + 8, y - 7),
            label_font(),
        ))
        .map_err(err())?;
    }
    Ok(())
}
