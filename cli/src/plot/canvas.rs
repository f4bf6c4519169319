//! Drawing a figure on either backend: the [`Figure`] a chart module implements once, the titled
//! frame every figure shares, and [`render`], which encodes the figure as SVG or PNG.
//!
//! PNG text is drawn with DejaVu Sans, bundled in the binary (the `dejavu` crate) and registered
//! with plotters' pure-Rust `ab_glyph` renderer, so no system font library is linked. SVG text is
//! laid out with the same font's metrics and shown by the viewer in its own sans-serif.

use std::sync::OnceLock;

use plotters::prelude::*;

use super::style::{self, Area};
use super::target::{Format, PlotError};

/// The height of the title strip above the panels.
pub(crate) const TITLE_H: u32 = 40;

/// A figure drawn the same way on any plotters backend.
pub(crate) trait Figure {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws the whole figure on `root` (already white).
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<(), PlotError>;
}

/// Writes `title` in the strip at the top of `root` and splits the rest at `panel_h`: the
/// panels' area, then the legend's strip under it.
pub(crate) fn titled<DB: DrawingBackend>(
    root: &Area<DB>,
    title: &str,
    panel_h: u32,
) -> Result<(Area<DB>, Area<DB>), PlotError> {
    let (head, rest) = root.split_vertically(TITLE_H);
    head.draw(&Text::new(
        title.to_string(),
        (20, 10),
        (style::FONT, 22).into_font(),
    ))
    .map_err(PlotError::draw("the title"))?;
    Ok(rest.split_vertically(panel_h))
}

/// The figure encoded as `format`.
pub(crate) fn render(figure: &impl Figure, format: Format) -> Result<Vec<u8>, PlotError> {
    register_font()?;
    let (w, h) = figure.size();
    match format {
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(PlotError::draw("the figure"))?;
                figure.draw(&root)?;
                root.present().map_err(PlotError::draw("the figure"))?;
            }
            Ok(svg.into_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; w as usize * h as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(PlotError::draw("the figure"))?;
                figure.draw(&root)?;
                root.present().map_err(PlotError::draw("the figure"))?;
            }
            encode_png(&rgb, w, h)
        }
    }
}

/// An 8-bit RGB PNG of `rgb` (rows top to bottom, no padding).
fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, PlotError> {
    let err = || PlotError::draw("the PNG encoding");
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(err())?;
    writer.write_image_data(rgb).map_err(err())?;
    writer.finish().map_err(err())?;
    Ok(out)
}

/// Registers the bundled font under [`style::FONT`] once per process: plotters looks every
/// text's font up by family name, for layout (both backends) and for glyphs (PNG).
fn register_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(style::FONT, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the bundled DejaVu Sans could not be parsed".to_string())
        })
        .clone()
        .map_err(|detail| PlotError::Draw {
            what: "text",
            detail,
        })
}
