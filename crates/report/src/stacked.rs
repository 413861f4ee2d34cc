//! A horizontal stacked bar chart: one bar per row, split into parts that
//! keep one colour each across rows, and a legend naming them in the order
//! the bars stack them.
//!
//! Drawn as the report's other charts are (`svg`): text in `currentColor`
//! on a background a page recolours, every string escaped.

use std::fmt::Write;

use crate::escape::xml;
use crate::svg::{nice_ticks, open, value_axis, PALETTE};

/// One part of every bar: its name and its colour (an index into
/// [`PALETTE`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub color: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StackedBar {
    pub label: String,
    /// One value per part, in the parts' order.
    pub values: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StackedChart {
    pub title: String,
    pub x_label: String,
    /// Written after each bar's total: "µs".
    pub unit: String,
    pub parts: Vec<Part>,
    pub bars: Vec<StackedBar>,
}

pub const LEFT: f64 = 170.0;
pub const RIGHT: f64 = 560.0;
const ROW: f64 = 28.0;
const TOP: f64 = 44.0;
/// Legend entries a line holds.
const LEGEND_PER_LINE: usize = 4;

impl StackedChart {
    /// The axis's end: the value the plot's full width stands for.
    pub fn axis_end(&self) -> f64 {
        let most = self
            .bars
            .iter()
            .map(|b| b.values.iter().sum::<f64>())
            .fold(0.0f64, f64::max);
        nice_ticks(0.0, most, 6).1
    }
}

/// The chart as SVG. A part worth nothing in a bar draws nothing there.
pub fn stacked_bar_chart(c: &StackedChart) -> String {
    let bottom = TOP + ROW * c.bars.len().max(1) as f64;
    let legend_lines = c.parts.len().div_ceil(LEGEND_PER_LINE).max(1);
    let height = bottom + 52.0 + 20.0 * legend_lines as f64;
    let most = c
        .bars
        .iter()
        .map(|b| b.values.iter().sum::<f64>())
        .fold(0.0f64, f64::max);
    let (x0, x1, ticks) = nice_ticks(0.0, most, 6);
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * (RIGHT - LEFT);

    let mut out = String::new();
    open(&mut out, height, &c.title);
    value_axis(
        &mut out,
        &ticks,
        &sx,
        (LEFT, RIGHT),
        (TOP, bottom),
        &c.x_label,
    );
    for (i, b) in c.bars.iter().enumerate() {
        let y = TOP + i as f64 * ROW + 5.0;
        let h = ROW - 10.0;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"currentColor\">{}</text>",
            LEFT - 8.0,
            y + h / 2.0 + 4.0,
            xml(&b.label)
        );
        let mut at = 0.0;
        for (part, v) in c.parts.iter().zip(&b.values) {
            if *v <= 0.0 {
                continue;
            }
            let (x, w) = (sx(at), sx(at + v) - sx(at));
            at += v;
            let _ = writeln!(
                out,
                "<rect class=\"part\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{}: {} {:.1} {}</title></rect>",
                PALETTE[part.color % PALETTE.len()],
                xml(&b.label),
                xml(&part.name),
                v,
                xml(&c.unit)
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"currentColor\">{:.1} {}</text>",
            sx(at) + 6.0,
            y + h / 2.0 + 4.0,
            at,
            xml(&c.unit)
        );
    }
    let legend_top = bottom + 58.0;
    for (i, p) in c.parts.iter().enumerate() {
        let x = 12.0 + (i % LEGEND_PER_LINE) as f64 * 185.0;
        let y = legend_top + (i / LEGEND_PER_LINE) as f64 * 20.0;
        let _ = writeln!(
            out,
            "<rect class=\"key\" x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{y:.1}\" fill=\"currentColor\">{}</text>",
            y - 10.0,
            PALETTE[p.color % PALETTE.len()],
            x + 18.0,
            xml(&p.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_laid_end_to_end_at_the_axis_scale() {
        let c = StackedChart {
            title: "t".into(),
            x_label: "µs".into(),
            unit: "µs".into(),
            parts: vec![
                Part {
                    name: "a".into(),
                    color: 0,
                },
                Part {
                    name: "b".into(),
                    color: 1,
                },
            ],
            bars: vec![StackedBar {
                label: "<x>".into(),
                values: vec![3.0, 7.0],
            }],
        };
        // 0 to 10 over 390 px: 39 px a unit.
        assert_eq!(c.axis_end(), 10.0);
        let svg = stacked_bar_chart(&c);
        assert!(svg.contains("<rect class=\"part\" x=\"170.0\" y=\"49.0\" width=\"117.0\" height=\"18.0\" fill=\"#0072b2\"><title>&lt;x&gt;: a 3.0 µs</title></rect>"), "{svg}");
        assert!(
            svg.contains("<rect class=\"part\" x=\"287.0\" y=\"49.0\" width=\"273.0\""),
            "{svg}"
        );
        assert!(svg.contains(">10.0 µs</text>"));
        assert_eq!(svg.matches("<rect class=\"key\"").count(), 2);
        assert!(!svg.contains("<x>"));
    }
}
