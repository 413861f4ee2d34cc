//! Forest plots: ratios with their 95% intervals, a row each, on one log
//! axis. A ratio of 0.8 and one of 1.25 are the same distance from 1 on it,
//! so a reader sees B beating A and A beating B by the same factor alike.
//! Each launch's own ratio is a dot under its interval, the decision band
//! (1 ± the study's threshold) is shaded, and a ratio no interval bounds
//! is a hollow point with the words why.
//!
//! What the rows hold is decided by the callers (`charts` for a run,
//! `agreement` for two runs); this draws them, escaping every string.

use std::fmt::Write;

use crate::escape::xml;
use crate::svg::{self, PALETTE};

/// The colour a row that needs reading twice is marked in.
const ALARM: &str = "#cf222e";

/// One figure in a row: a ratio, its interval, its launches.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// What tells marks of one row apart ("run 3"); empty when alone.
    pub name: String,
    pub ratio: f64,
    /// The 95% interval; `None` when the pairs are too few to bound it.
    pub interval: Option<(f64, f64)>,
    pub pairs: u32,
    /// Each launch's own ratio.
    pub launches: Vec<f64>,
    /// Index into `PALETTE` (wraps).
    pub color: usize,
    /// The figures written after the row ("0.80× [0.79–0.81]").
    pub text: String,
}

/// One row: what is compared, and its marks one under another.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// "lighttpd / nginx": B over A.
    pub label: String,
    /// "tiny, 1 core, all levels".
    pub detail: String,
    pub marks: Vec<Mark>,
    /// A word that marks the row apart ("disagree"), drawn in alarm.
    pub flag: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    pub title: String,
    pub rows: Vec<Row>,
    /// The relative threshold of the decision band around 1 (0.02 = ±2%).
    pub band: Option<f64>,
}

/// Where the axis lies on the page.
const LEFT: f64 = 260.0;
const RIGHT: f64 = 560.0;
const TOP: f64 = 44.0;
const MARK_HEIGHT: f64 = 20.0;
const ROW_PAD: f64 = 12.0;

/// A log axis: its ends and where a value falls between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
}

impl Axis {
    /// The values' range, widened by 8% of its span (in logs) at each end
    /// so no mark sits on the frame; never narrower than 0.95–1.05, so a
    /// tight interval is not drawn as wide as a loose one.
    pub fn over(values: impl IntoIterator<Item = f64>) -> Axis {
        let (mut lo, mut hi) = (1.0f64, 1.0f64);
        for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        lo = lo.min(0.95);
        hi = hi.max(1.05);
        let pad = (hi / lo).powf(0.08);
        Axis {
            lo: lo / pad,
            hi: hi * pad,
        }
    }

    /// The page's x of `v`.
    pub fn x(&self, v: f64) -> f64 {
        LEFT + (v / self.lo).ln() / (self.hi / self.lo).ln() * (RIGHT - LEFT)
    }

    /// Ticks at round ratios inside the axis: steps of 0.01 to 0.5 when
    /// they give seven or fewer, 1, 2 and 5 times powers of ten beyond.
    pub fn ticks(&self) -> Vec<f64> {
        let inside = |t: f64| t >= self.lo && t <= self.hi;
        if self.hi / self.lo <= 5.0 {
            for step in [0.01, 0.02, 0.05, 0.1, 0.2, 0.5] {
                let first = (self.lo / step).ceil() as i64;
                let last = (self.hi / step).floor() as i64;
                if last - first < 7 {
                    return (first..=last)
                        .map(|i| (i as f64 * step * 100.0).round() / 100.0)
                        .filter(|t| *t > 0.0 && inside(*t))
                        .collect();
                }
            }
        }
        (-4..=4)
            .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
            .filter(|t| inside(*t))
            .collect()
    }
}

/// A row's marks, or its three lines of words (label, detail, flag)
/// when it has a flag, whichever is taller.
fn row_height(r: &Row) -> f64 {
    let marks = MARK_HEIGHT * r.marks.len().max(1) as f64 + ROW_PAD;
    if r.flag.is_some() {
        marks.max(52.0)
    } else {
        marks
    }
}

/// The plot as a standalone SVG.
pub fn render(f: &Forest) -> String {
    let band = f.band.map(|t| [1.0 - t, 1.0 + t]);
    let axis = Axis::over(
        f.rows
            .iter()
            .flat_map(|r| &r.marks)
            .flat_map(|m| {
                let (lo, hi) = m.interval.unwrap_or((m.ratio, m.ratio));
                [m.ratio, lo, hi].into_iter().chain(m.launches.clone())
            })
            .chain(band.into_iter().flatten()),
    );
    let bottom = TOP + f.rows.iter().map(row_height).sum::<f64>().max(MARK_HEIGHT);
    let height = bottom + 70.0;
    let mut out = String::new();
    svg::open(&mut out, height, &f.title);
    if let Some(t) = f.band {
        let (x0, x1) = (axis.x(1.0 - t), axis.x(1.0 + t));
        let _ = writeln!(
            out,
            "<rect class=\"band\" x=\"{x0:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" \
             fill=\"currentColor\" fill-opacity=\"0.1\"><title>1 ± {}%: equal within noise</title></rect>",
            x1 - x0,
            bottom - TOP,
            svg::si(t * 100.0)
        );
    }
    for t in axis.ticks() {
        let x = axis.x(t);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.12\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"currentColor\">{}</text>",
            bottom + 16.0,
            svg::si(t)
        );
    }
    let one = axis.x(1.0);
    let _ = writeln!(
        out,
        "<line class=\"one\" x1=\"{one:.1}\" y1=\"{TOP}\" x2=\"{one:.1}\" y2=\"{bottom:.1}\" stroke=\"currentColor\" stroke-dasharray=\"4 3\"/>\
         <path d=\"M{LEFT},{bottom:.1}H{RIGHT}\" stroke=\"currentColor\" fill=\"none\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"currentColor\">B / A requests per second (log scale)</text>",
        (LEFT + RIGHT) / 2.0,
        bottom + 34.0
    );
    let mut legend =
        String::from("square: the ratio, with its 95% interval; circles: each launch's own ratio");
    if let Some(t) = f.band {
        let _ = write!(legend, "; shaded: 1 ± {}%", svg::si(t * 100.0));
    }
    let _ = writeln!(
        out,
        "<text x=\"12\" y=\"{:.1}\" font-size=\"11\" fill=\"currentColor\" fill-opacity=\"0.75\">{}</text>",
        bottom + 56.0,
        xml(&legend)
    );
    let mut y = TOP;
    for r in &f.rows {
        row(&mut out, r, &axis, y);
        y += row_height(r);
    }
    out.push_str("</svg>\n");
    out
}

fn row(out: &mut String, r: &Row, axis: &Axis, y: f64) {
    let h = row_height(r);
    out.push_str("<g class=\"row\">\n");
    if r.flag.is_some() {
        let _ = writeln!(
            out,
            "<rect class=\"flagged\" x=\"4\" y=\"{:.1}\" width=\"752\" height=\"{:.1}\" fill=\"{ALARM}\" fill-opacity=\"0.08\"/>",
            y + 2.0,
            h - 4.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"12\" y=\"{:.1}\" font-weight=\"bold\" fill=\"currentColor\">{}</text>\
         <text x=\"12\" y=\"{:.1}\" font-size=\"11\" fill=\"currentColor\" fill-opacity=\"0.75\">{}</text>",
        y + 17.0,
        xml(&r.label),
        y + 31.0,
        xml(&r.detail)
    );
    for (i, m) in r.marks.iter().enumerate() {
        mark(out, m, axis, y + 14.0 + MARK_HEIGHT * i as f64);
    }
    if let Some(flag) = &r.flag {
        let _ = writeln!(
            out,
            "<text class=\"flag\" x=\"12\" y=\"{:.1}\" font-weight=\"bold\" fill=\"{ALARM}\">{}</text>",
            y + 45.0,
            xml(flag)
        );
    }
    out.push_str("</g>\n");
}

/// One mark centred on `cy`: interval, ratio, launches under them, and its
/// figures after the axis.
fn mark(out: &mut String, m: &Mark, axis: &Axis, cy: f64) {
    let color = PALETTE[m.color % PALETTE.len()];
    let x = axis.x(m.ratio);
    let name = if m.name.is_empty() {
        String::new()
    } else {
        format!("{}: ", m.name)
    };
    match m.interval {
        Some((lo, hi)) => {
            let (x0, x1) = (axis.x(lo), axis.x(hi));
            let _ = writeln!(
                out,
                "<path class=\"ci\" d=\"M{x0:.1},{:.1}V{:.1}M{x0:.1},{cy:.1}H{x1:.1}M{x1:.1},{:.1}V{:.1}\" stroke=\"{color}\" stroke-width=\"2\" fill=\"none\"/>\
                 <rect class=\"ratio\" x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"{color}\"><title>{}</title></rect>",
                cy - 4.0,
                cy + 4.0,
                cy - 4.0,
                cy + 4.0,
                x - 4.0,
                cy - 4.0,
                xml(&format!("{name}{}", m.text))
            );
        }
        None => {
            // The words beside the point, on the side with room for them.
            let (wx, anchor) = if x < (LEFT + RIGHT) / 2.0 {
                (x + 8.0, "start")
            } else {
                (x - 8.0, "end")
            };
            let words = throng_model::unbounded_words(m.pairs, &m.launches);
            let _ = writeln!(
                out,
                "<circle class=\"ratio unbounded\" cx=\"{x:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"><title>{}</title></circle>\
                 <text class=\"unbounded\" x=\"{wx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" font-size=\"11\" font-style=\"italic\" fill=\"{color}\">{words}</text>",
                xml(&format!("{name}{}", m.text)),
                cy + 4.0
            );
        }
    }
    for (i, l) in m.launches.iter().enumerate() {
        let _ = writeln!(
            out,
            "<circle class=\"launch\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"none\" stroke=\"{color}\"><title>{}launch {}: {:.3}×</title></circle>",
            axis.x(*l),
            cy + 7.0,
            xml(&name),
            i + 1,
            l
        );
    }
    let _ = writeln!(
        out,
        "<text class=\"figure\" x=\"{:.1}\" y=\"{:.1}\" fill=\"currentColor\">{}</text>",
        RIGHT + 10.0,
        cy + 4.0,
        xml(&format!("{name}{}", m.text))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(ratio: f64, interval: Option<(f64, f64)>, launches: Vec<f64>) -> Mark {
        Mark {
            name: String::new(),
            ratio,
            interval,
            pairs: 3,
            launches,
            color: 0,
            text: "t".into(),
        }
    }

    fn row(label: &str, marks: Vec<Mark>) -> Row {
        Row {
            label: label.into(),
            detail: "tiny, 1 core, all levels".into(),
            marks,
            flag: None,
        }
    }

    /// The `attr` of each element of `class` in `svg`, in order.
    fn attrs(svg: &str, class: &str, attr: &str) -> Vec<String> {
        svg.split(&format!("class=\"{class}\""))
            .skip(1)
            .map(|rest| {
                let tag = &rest[..rest.find('>').unwrap()];
                let at = tag.find(&format!(" {attr}=\"")).unwrap() + attr.len() + 3;
                tag[at..at + tag[at..].find('"').unwrap()].to_string()
            })
            .collect()
    }

    #[test]
    fn the_axis_is_logarithmic_and_even_about_one() {
        // 0.5 and 2 lie as far from 1 either way: 1 is the middle of the
        // axis, 8% of the span beyond each.
        let a = Axis::over([0.5, 2.0]);
        assert_eq!(a.x(1.0), (LEFT + RIGHT) / 2.0);
        assert_eq!(format!("{:.1}", a.x(2.0)), "539.3");
        assert_eq!(format!("{:.1}", a.x(0.5)), "280.7");
        assert_eq!(a.ticks(), [0.5, 1.0, 1.5, 2.0]);
        assert_eq!(Axis::over([0.9, 1.1]).ticks(), [0.9, 0.95, 1.0, 1.05, 1.1]);
        assert_eq!(
            Axis::over([0.05, 3.0]).ticks(),
            [0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
        );
    }

    #[test]
    fn rows_band_launches_and_an_unbounded_ratio_are_drawn() {
        let f = Forest {
            title: "Paired ratios".into(),
            rows: vec![
                row(
                    "lighttpd / nginx",
                    vec![mark(1.0, Some((0.9, 1.1)), vec![0.5, 2.0])],
                ),
                row(
                    "apache2-event / nginx",
                    vec![mark(0.6, Some((0.58, 0.62)), vec![])],
                ),
                row("h2o / nginx", vec![mark(1.2, None, vec![])]),
            ],
            band: Some(0.02),
        };
        let svg = render(&f);
        assert_eq!(svg.matches("<g class=\"row\">").count(), 3);
        // The launches set the axis at 0.5–2, so 1 is its middle and 2 lies
        // at 1.08/1.16 of its width.
        assert_eq!(attrs(&svg, "launch", "cx"), ["280.7", "539.3"]);
        assert_eq!(attrs(&svg, "one", "x1"), ["410.0"]);
        // 1 ± 2% on that axis: 0.98 at 406.2, 1.02 at 413.7.
        assert_eq!(attrs(&svg, "band", "x"), ["406.2"]);
        assert_eq!(attrs(&svg, "band", "width"), ["7.5"]);
        assert_eq!(attrs(&svg, "ratio", "x").len(), 2);
        assert_eq!(attrs(&svg, "ratio unbounded", "cx").len(), 1);
        // Right of 1 on this axis, so its words lie to its left.
        assert!(svg.contains(
            "text-anchor=\"end\" font-size=\"11\" font-style=\"italic\" fill=\"#0072b2\">too few \
             pairs to bound: 3</text>"
        ));
        assert_eq!(svg.matches("class=\"ci\"").count(), 2);
        assert!(svg.contains("<title>1 ± 2%: equal within noise</title>"));
        assert!(svg.contains("shaded: 1 ± 2%"));
    }

    #[test]
    fn a_flagged_row_is_marked_and_names_are_text() {
        let mut r = row("<b>", vec![mark(1.0, Some((0.9, 1.1)), vec![])]);
        r.flag = Some("disagree".into());
        let svg = render(&Forest {
            title: "t".into(),
            rows: vec![r],
            band: None,
        });
        assert_eq!(svg.matches("class=\"flagged\"").count(), 1);
        assert!(svg.contains(">disagree</text>"));
        assert!(svg.contains(">&lt;b&gt;</text>"));
        assert!(!svg.contains("class=\"band\""));
    }
}
