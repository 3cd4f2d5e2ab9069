//! `toolgate compare --plot FILE.svg`: recall against active-set size for
//! both policies (the threshold swept over [0, 1], see
//! `toolgate::replay::curve`), with each policy's operating point marked.
//! Drawn with plotters' SVG backend (text is left to the SVG viewer; no font
//! files are read).

use std::path::Path;

use plotters::prelude::*;
use toolgate::replay::curve::CurvePoint;
use toolgate::replay::stats::Summary;

/// One policy on the plot.
pub struct Series<'a> {
    /// Legend label.
    pub label: String,
    /// The swept curve.
    pub curve: &'a [CurvePoint],
    /// The policy's real replay (its operating point).
    pub summary: &'a Summary,
}

/// Checks that `path` names an SVG file (`.svg`, any case): the plot is
/// drawn with plotters' SVG backend only, so `--plot x.png` would write SVG
/// text under a PNG name.
///
/// # Errors
/// The message naming `--plot`, the path and the extension (exit 2).
pub fn svg_path(path: &Path) -> Result<(), String> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => Ok(()),
        other => Err(format!(
            "--plot {}: the plot is written as SVG only, so the file must end in .svg{} (convert it afterwards for another format, e.g. `rsvg-convert -o plot.png plot.svg`)",
            toolgate::diag::echo(&path.display().to_string()),
            other
                .map(|e| format!(", not .{}", toolgate::diag::echo(e)))
                .unwrap_or_default()
        )),
    }
}

/// Writes the SVG to `path`.
pub fn draw(path: &Path, title: &str, series: &[Series<'_>]) -> Result<(), String> {
    let x_max = series
        .iter()
        .flat_map(|s| {
            s.curve
                .iter()
                .map(|p| p.mean_active)
                .chain([s.summary.active.mean])
        })
        .fold(1.0f64, f64::max)
        * 1.05;
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw {}: {e}", path.display());
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, 0.0..100.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("active set: mean tools per call (threshold swept from 1 to 0)")
        .y_desc("recall: called tool active (%)")
        .draw()
        .map_err(err)?;
    let colors = [RGBColor(200, 60, 40), RGBColor(30, 90, 200)];
    for (k, s) in series.iter().enumerate() {
        let color = colors[k % colors.len()];
        chart
            .draw_series(LineSeries::new(
                s.curve.iter().map(|p| (p.mean_active, 100.0 * p.recall)),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(s.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        let (x, y) = (s.summary.active.mean, 100.0 * s.summary.recall);
        chart
            .draw_series(std::iter::once(Circle::new((x, y), 6, color.filled())))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!(
                    "{}: {:.1}% at {:.1} tools",
                    if k == 0 { "A" } else { "B" },
                    100.0 * s.summary.recall,
                    s.summary.active.mean
                ),
                (x + 0.012 * x_max, y + 2.0 - 5.0 * k as f64),
                ("sans-serif", 14).into_font().color(&color),
            )))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
