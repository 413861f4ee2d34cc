//! A chart's figures as a table, for a format that cannot show the
//! picture (Markdown without images beside it): the reader of a text
//! report gets every number the page draws, rather than nothing where
//! the chart was.

use crate::svg::{BarChart, LineChart};
use crate::table::{Cell, Column, Table};

/// A line chart as a table: one row per x, one column per series, each
/// value with its band when it has one; "–" where a series has no point.
pub fn of_line(chart: &LineChart) -> Table {
    let mut xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut columns = vec![Column::right(&chart.x_label)];
    columns.extend(chart.series.iter().map(|s| {
        Column::with_head(
            Cell::text(&s.name).aside(chart.y_label.clone()),
            crate::table::Align::Right,
        )
    }));
    let mut t = Table::new(columns);
    for x in xs {
        let mut row = vec![Cell::lit(fmt_num(x))];
        for s in &chart.series {
            row.push(match s.points.iter().find(|p| p.x == x) {
                Some(p) => match p.band {
                    Some((lo, hi)) => Cell::lit(format!(
                        "{} [{}–{}]",
                        fmt_num(p.y),
                        fmt_num(lo),
                        fmt_num(hi)
                    )),
                    None => Cell::lit(fmt_num(p.y)),
                },
                None => Cell::none(),
            });
        }
        t.push(row);
    }
    t
}

/// A chart's value as a reader would read it off the axis: three
/// significant figures or so, no trailing zeros.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let text = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A bar chart as a table: a row a bar, its value, whisker and note.
pub fn of_bars(chart: &BarChart) -> Table {
    let mut t = Table::new(vec![
        Column::left(""),
        Column::right(&chart.x_label),
        Column::left("range"),
        Column::left("note"),
    ]);
    for b in &chart.bars {
        t.push(vec![
            Cell::text(&b.label),
            Cell::lit(fmt_num(b.value)),
            match b.range {
                Some((lo, hi)) => Cell::lit(format!("{}–{}", fmt_num(lo), fmt_num(hi))),
                None => Cell::none(),
            },
            if b.note.is_empty() {
                Cell::none()
            } else {
                Cell::text(&b.note)
            },
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svg::{Bar, Point, Series};

    #[test]
    fn a_line_charts_table_has_a_row_per_x_and_a_dash_where_a_series_has_no_point() {
        let point = |x, y, band| Point { x, y, band };
        let chart = LineChart {
            title: "t".into(),
            x_label: "connections".into(),
            y_label: "req/s".into(),
            series: vec![
                Series {
                    name: "nginx".into(),
                    color: 0,
                    dashed: false,
                    points: vec![
                        point(10.0, 100.0, Some((90.0, 110.0))),
                        point(20.0, 150.0, None),
                    ],
                },
                Series {
                    name: "h2o".into(),
                    color: 1,
                    dashed: false,
                    points: vec![point(20.0, 160.0, None)],
                },
            ],
            whole_x: true,
        };
        let t = of_line(&chart);
        let texts: Vec<Vec<&str>> = t
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.text.as_str()).collect())
            .collect();
        assert_eq!(
            texts,
            vec![vec!["10", "100 [90–110]", "–"], vec!["20", "150", "160"]]
        );
        assert_eq!(t.columns[1].head.text, "nginx");
    }

    #[test]
    fn a_bar_charts_table_has_a_row_per_bar() {
        let chart = BarChart {
            title: "t".into(),
            x_label: "MB".into(),
            bars: vec![Bar {
                label: "nginx".into(),
                value: 12.5,
                color: 0,
                range: Some((12.0, 13.0)),
                note: String::new(),
            }],
        };
        let t = of_bars(&chart);
        let row: Vec<&str> = t.rows[0].iter().map(|c| c.text.as_str()).collect();
        assert_eq!(row, vec!["nginx", "12.5", "12–13", "–"]);
    }
}
