//! Small SVG charts: lines with points and confidence bands, horizontal
//! bars with ranges.
//!
//! Text and axes use `currentColor` and the background is a rectangle of
//! class `bg`, so a page can recolour both for dark mode with CSS while a
//! standalone SVG (or its PNG) stays dark on white. Every string is escaped:
//! series and axis names come from study files and server banners.

use std::fmt::Write;

use crate::escape::xml;

/// Colours that read on white and on a dark background alike (Okabe–Ito,
/// with the yellow darkened).
pub const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#b8a000", "#7f7f7f",
];

const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// Confidence band (low, high) around y.
    pub band: Option<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// Index into `PALETTE` (wraps).
    pub color: usize,
    pub dashed: bool,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Ticks only at whole numbers: x counts things (cores) that come in
    /// no fractions.
    pub whole_x: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub color: usize,
    /// Whisker (low, high) drawn over the bar.
    pub range: Option<(f64, f64)>,
    /// Text after the value, e.g. "valid" or "transfer 0.4–1.2 s".
    pub note: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub x_label: String,
    pub bars: Vec<Bar>,
}

const WIDTH: f64 = 760.0;

/// Axis ticks at 1, 2 or 5 times a power of ten covering [lo, hi].
/// Returns (axis low, axis high, ticks).
pub fn nice_ticks(lo: f64, hi: f64, max_ticks: usize) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else if hi == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - hi.abs() * 0.5, hi + hi.abs() * 0.5)
    };
    let raw = (hi - lo) / max_ticks.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let last = (hi / step).ceil() * step;
    let count = ((last - first) / step).round() as usize;
    let ticks = (0..=count).map(|i| first + i as f64 * step).collect();
    (first, last, ticks)
}

/// Ticks from zero at whole numbers only, as [`nice_ticks`] would place
/// them where its step is one or more.
pub fn whole_ticks(hi: f64, max_ticks: usize) -> (f64, f64, Vec<f64>) {
    let (lo, hi, ticks) = nice_ticks(0.0, hi.max(1.0), max_ticks);
    if ticks.len() < 2 || ticks[1] - ticks[0] >= 1.0 {
        return (lo, hi, ticks);
    }
    let last = hi.ceil();
    (0.0, last, (0..=last as u32).map(f64::from).collect())
}

/// Short tick text: 1500 → "1.5k", 2000000 → "2M", 0.25 → "0.25".
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The value axis of a chart of horizontal bars: a faint line and a
/// label at each tick, the axis line at `left`, its label centred below.
pub(crate) fn value_axis(
    out: &mut String,
    ticks: &[f64],
    sx: &dyn Fn(f64) -> f64,
    (left, right): (f64, f64),
    (top, bottom): (f64, f64),
    label: &str,
) {
    for t in ticks {
        let x = sx(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
            bottom + 18.0,
            si(*t)
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom}\" stroke=\"currentColor\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
        (left + right) / 2.0,
        bottom + 38.0,
        xml(label)
    );
}

pub(crate) fn open(out: &mut String, height: f64, title: &str) {
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" \
         width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\" color=\"#1f2328\" \
         font-family=\"{FONT}\" font-size=\"12\">\n\
         <title>{t}</title>\n\
         <rect class=\"bg\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#ffffff\"/>\n\
         <text x=\"{x}\" y=\"22\" font-size=\"15\" font-weight=\"bold\" fill=\"currentColor\">{t}</text>\n",
        t = xml(title),
        x = 12,
    );
}

/// Line chart: x and y axes from zero, one line per series, bands as
/// translucent polygons under the lines, legend on the right.
pub fn line_chart(c: &LineChart) -> String {
    let height = 420.0;
    let (left, right, top, bottom) = (72.0, 580.0, 44.0, height - 52.0);
    let pts = c.series.iter().flat_map(|s| s.points.iter());
    let (mut xmax, mut ymax) = (0.0f64, 0.0f64);
    for p in pts {
        xmax = xmax.max(p.x);
        ymax = ymax.max(p.y).max(p.band.map_or(0.0, |b| b.1));
    }
    let (x0, x1, xt) = if c.whole_x {
        whole_ticks(xmax, 8)
    } else {
        nice_ticks(0.0, xmax, 8)
    };
    let (y0, y1, yt) = nice_ticks(0.0, ymax, 6);
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * (right - left);
    let sy = |y: f64| bottom - (y - y0) / (y1 - y0) * (bottom - top);

    let mut out = String::new();
    open(&mut out, height, &c.title);
    axes(&mut out, left, right, top, bottom);
    for t in &yt {
        let y = sy(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right}\" y2=\"{y:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"currentColor\">{}</text>",
            left - 6.0,
            y + 4.0,
            si(*t)
        );
    }
    for t in &xt {
        let x = sx(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{bottom}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"currentColor\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
            bottom + 5.0,
            bottom + 18.0,
            si(*t)
        );
    }
    axis_labels(&mut out, &c.x_label, &c.y_label, left, right, top, bottom);

    for s in &c.series {
        let color = PALETTE[s.color % PALETTE.len()];
        let banded: Vec<&Point> = s.points.iter().filter(|p| p.band.is_some()).collect();
        if banded.len() >= 2 {
            let mut poly = String::new();
            for p in &banded {
                let _ = write!(poly, "{:.1},{:.1} ", sx(p.x), sy(p.band.unwrap().1));
            }
            for p in banded.iter().rev() {
                let _ = write!(poly, "{:.1},{:.1} ", sx(p.x), sy(p.band.unwrap().0));
            }
            let _ = writeln!(
                out,
                "<polygon points=\"{}\" fill=\"{color}\" fill-opacity=\"0.18\" stroke=\"none\"/>",
                poly.trim_end()
            );
        }
    }
    for s in &c.series {
        let color = PALETTE[s.color % PALETTE.len()];
        let dash = if s.dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        if s.points.len() >= 2 {
            let d: Vec<String> = s
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", sx(p.x), sy(p.y)))
                .collect();
            let _ = writeln!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
                d.join(" ")
            );
        }
        for p in &s.points {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"><title>{}: {} at {}</title></circle>",
                sx(p.x),
                sy(p.y),
                xml(&s.name),
                si(p.y),
                si(p.x)
            );
        }
    }
    // Legend.
    for (i, s) in c.series.iter().enumerate() {
        let color = PALETTE[s.color % PALETTE.len()];
        let y = top + 6.0 + i as f64 * 20.0;
        let dash = if s.dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"currentColor\">{}</text>",
            right + 16.0,
            right + 40.0,
            right + 46.0,
            y + 4.0,
            xml(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// Horizontal bar chart: one bar per row, value and note written after it.
pub fn bar_chart(c: &BarChart) -> String {
    let row = 28.0;
    let (left, right, top) = (170.0, 560.0, 44.0);
    let bottom = top + row * c.bars.len().max(1) as f64;
    let height = bottom + 52.0;
    let vmax = c
        .bars
        .iter()
        .map(|b| b.value.max(b.range.map_or(0.0, |r| r.1)))
        .fold(0.0f64, f64::max);
    let (x0, x1, xt) = nice_ticks(0.0, vmax, 6);
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * (right - left);

    let mut out = String::new();
    open(&mut out, height, &c.title);
    value_axis(&mut out, &xt, &sx, (left, right), (top, bottom), &c.x_label);
    for (i, b) in c.bars.iter().enumerate() {
        let color = PALETTE[b.color % PALETTE.len()];
        let y = top + i as f64 * row + 5.0;
        let h = row - 10.0;
        let w = (sx(b.value) - left).max(0.0);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"currentColor\">{}</text>\
             <rect x=\"{left}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{color}\"><title>{}: {}</title></rect>",
            left - 8.0,
            y + h / 2.0 + 4.0,
            xml(&b.label),
            xml(&b.label),
            si(b.value)
        );
        let mut text_x = sx(b.value);
        if let Some((lo, hi)) = b.range {
            let cy = y + h / 2.0;
            let _ = writeln!(
                out,
                "<path d=\"M{:.1},{:.1}V{:.1}M{:.1},{cy:.1}H{:.1}M{:.1},{:.1}V{:.1}\" stroke=\"currentColor\" stroke-width=\"1.5\" fill=\"none\"/>",
                sx(lo),
                cy - 5.0,
                cy + 5.0,
                sx(lo),
                sx(hi),
                sx(hi),
                cy - 5.0,
                cy + 5.0
            );
            text_x = text_x.max(sx(hi));
        }
        let note = if b.note.is_empty() {
            String::new()
        } else {
            format!("  {}", b.note)
        };
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"currentColor\">{}{}</text>",
            text_x + 6.0,
            y + h / 2.0 + 4.0,
            si(b.value),
            xml(&note)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn axes(out: &mut String, left: f64, right: f64, top: f64, bottom: f64) {
    let _ = writeln!(
        out,
        "<path d=\"M{left},{top}V{bottom}H{right}\" stroke=\"currentColor\" fill=\"none\"/>"
    );
}

fn axis_labels(
    out: &mut String,
    x_label: &str,
    y_label: &str,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
) {
    let cy = (top + bottom) / 2.0;
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>\
         <text x=\"16\" y=\"{cy:.1}\" text-anchor=\"middle\" fill=\"currentColor\" transform=\"rotate(-90 16 {cy:.1})\">{}</text>",
        (left + right) / 2.0,
        bottom + 38.0,
        xml(x_label),
        xml(y_label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers_covering_the_range() {
        assert_eq!(
            nice_ticks(0.0, 1000.0, 8),
            (0.0, 1000.0, vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0])
        );
        assert_eq!(
            nice_ticks(0.0, 37_500.0, 6),
            (
                0.0,
                40_000.0,
                vec![0.0, 10_000.0, 20_000.0, 30_000.0, 40_000.0]
            )
        );
        let (lo, hi, t) = nice_ticks(0.0, 0.0, 6);
        assert_eq!((lo, hi), (0.0, 1.0));
        let shown: Vec<String> = t.iter().map(|v| si(*v)).collect();
        assert_eq!(shown, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
    }

    #[test]
    fn whole_ticks_skip_fractions() {
        assert_eq!(whole_ticks(2.0, 8), (0.0, 2.0, vec![0.0, 1.0, 2.0]));
        assert_eq!(whole_ticks(4.0, 8).2, [0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            whole_ticks(64.0, 8).2,
            [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
        );
    }

    #[test]
    fn si_is_short() {
        assert_eq!(si(1500.0), "1.5k");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(15_000.0), "15k");
        assert_eq!(si(2_500_000.0), "2.5M");
        assert_eq!(si(0.25), "0.25");
        assert_eq!(si(0.0), "0");
    }

    #[test]
    fn hostile_names_are_text() {
        let c = BarChart {
            title: "<script>alert(1)</script>".into(),
            x_label: "a&b".into(),
            bars: vec![Bar {
                label: "\"><img src=x onerror=alert(1)>".into(),
                value: 1.0,
                color: 0,
                range: None,
                note: "<b>".into(),
            }],
        };
        let s = bar_chart(&c);
        assert!(!s.contains("<script"));
        assert!(!s.contains("<img"));
        assert!(!s.contains("<b>"));
        assert!(s.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(s.contains("a&amp;b"));
    }
}
