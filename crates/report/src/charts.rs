//! The report's charts, built from a run: which figures, grouped how.

use throng_model::RunData;

use crate::chart_data;
use crate::escape::slug;
use crate::figures::{
    self, best, core_counts, is_large, labelled, measured, server_names, workload_names,
    StepFigures,
};
use crate::svg::{self, Bar, BarChart, LineChart, Point, Series};
use crate::table::Table;

/// A bar's value, optional whisker and note.
type BarValue = Option<(f64, Option<(f64, f64)>, String)>;

/// A rendered chart with a stable, file-safe id (the PNG's file name).
#[derive(Debug, Clone, PartialEq)]
pub struct NamedChart {
    pub id: String,
    pub title: String,
    /// What the reader should know to read it.
    pub caption: String,
    pub svg: String,
    /// Its figures as a table, for a format that cannot show the picture;
    /// `None` for a drawing of figures the report's tables already hold
    /// (the forest plots of the paired comparisons).
    pub data: Option<Table>,
}

impl NamedChart {
    /// A line chart, drawn and kept as a table.
    pub fn line(id: String, caption: String, chart: LineChart) -> NamedChart {
        NamedChart {
            id,
            title: chart.title.clone(),
            caption,
            svg: svg::line_chart(&chart),
            data: Some(chart_data::of_line(&chart)),
        }
    }

    /// A bar chart, drawn and kept as a table.
    pub fn bars(id: String, caption: String, chart: BarChart) -> NamedChart {
        NamedChart {
            id,
            title: chart.title.clone(),
            caption,
            svg: svg::bar_chart(&chart),
            data: Some(chart_data::of_bars(&chart)),
        }
    }
}

/// "1 server core", "2 server cores"; `None` when the cores are not known
/// (0, a server throng did not start).
fn cores_text(c: u32) -> Option<String> {
    match c {
        0 => None,
        1 => Some("1 server core".to_string()),
        c => Some(format!("{c} server cores")),
    }
}

/// Latency against the rate offered, per server, as wrk2's users draw it:
/// p50 and p99 from each request's intended send time, so a server that
/// falls behind its schedule shows the wait, up to the first rate it did
/// not keep up with (the sweep offers it no higher one).
fn latency_under_load(
    w: &str,
    cores: u32,
    offered: &[&StepFigures],
    servers: &[String],
) -> NamedChart {
    let mut series = Vec::new();
    for (color, s) in servers.iter().enumerate() {
        for (q, dashed) in [("p50", false), ("p99", true)] {
            let mut points: Vec<Point> = offered
                .iter()
                .filter(|f| &f.server == s)
                .filter_map(|f| {
                    let v = if q == "p50" { f.p50_us } else { f.p99_us }?;
                    Some(Point {
                        x: f.rate?,
                        y: v as f64 / 1000.0,
                        band: None,
                    })
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{s} {q}"),
                    color,
                    dashed,
                    points,
                });
            }
        }
    }
    let id = if cores > 0 {
        format!("{}-{}c", slug(w), cores)
    } else {
        slug(w)
    };
    let title = labelled([Some(format!("Latency under load, {w}")), cores_text(cores)]);
    NamedChart::line(
        format!("latency-rate-{id}"),
        "Median over rounds of each round's p50 (solid) and p99 (dashed) latency, \
                  counted from each request's intended send time, against the rate offered; a \
                  server's lines end at the first rate it did not keep up with."
            .into(),
        LineChart {
            title,
            x_label: "offered requests per second".into(),
            y_label: "latency (ms)".into(),
            series,
            whole_x: true,
        },
    )
}

/// Completed sessions per second against the users walking them, a line
/// per server, as the throughput chart draws requests against
/// connections: users who think send far fewer requests than their
/// connections could, so what they get done is sessions. `None` when no
/// step of `steps` had users walking sessions.
fn sessions_per_sec(
    w: &str,
    cores: u32,
    steps: &[&StepFigures],
    servers: &[String],
) -> Option<NamedChart> {
    let mut series = Vec::new();
    for (color, s) in servers.iter().enumerate() {
        let mut points: Vec<Point> = steps
            .iter()
            .filter(|f| &f.server == s)
            .filter_map(|f| {
                Some(Point {
                    x: f64::from(f.concurrency),
                    y: f.sessions.as_ref()?.sessions_per_sec,
                    band: None,
                })
            })
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        if !points.is_empty() {
            series.push(Series {
                name: s.clone(),
                color,
                dashed: false,
                points,
            });
        }
    }
    if series.is_empty() {
        return None;
    }
    let id = if cores > 0 {
        format!("{}-{}c", slug(w), cores)
    } else {
        slug(w)
    };
    let title = labelled([Some(format!("Sessions, {w}")), cores_text(cores)]);
    Some(NamedChart::line(
        format!("sessions-{id}"),
        "Median over rounds of completed sessions per second, against the users \
                  walking sessions at once."
            .into(),
        LineChart {
            title,
            x_label: "users".into(),
            y_label: "completed sessions per second".into(),
            series,
            whole_x: true,
        },
    ))
}

/// Every chart of the report, in reading order.
pub fn charts(run: &RunData, figs: &[StepFigures]) -> Vec<NamedChart> {
    let servers = server_names(run);
    let color = |name: &str| servers.iter().position(|s| s == name).unwrap_or(0);
    let mut out = Vec::new();

    for w in workload_names(run) {
        let large = is_large(figs, &w);
        for c in core_counts(run) {
            let (offered, steps): (Vec<&StepFigures>, Vec<&StepFigures>) = figs
                .iter()
                .filter(|f| f.workload == w && f.cores == c && measured(f))
                .partition(|f| f.rate.is_some());
            if !offered.is_empty() {
                out.push(latency_under_load(&w, c, &offered, &servers));
            }
            if steps.is_empty() {
                continue;
            }
            let series_of = |server: &str, y: &dyn Fn(&StepFigures) -> Option<Point>| {
                steps
                    .iter()
                    .filter(|f| f.server == server)
                    .filter_map(|f| y(f))
                    .collect::<Vec<Point>>()
            };
            let mut tput = Vec::new();
            let mut transfer = Vec::new();
            let mut lat = Vec::new();
            for s in &servers {
                let pts = series_of(s, &|f| Some(throughput_point(f64::from(f.concurrency), f)));
                if !pts.is_empty() {
                    tput.push(Series {
                        name: s.clone(),
                        color: color(s),
                        dashed: false,
                        points: pts,
                    });
                }
                let pts = series_of(s, &|f| {
                    Some(Point {
                        x: f64::from(f.concurrency),
                        y: f.mb_per_sec,
                        band: None,
                    })
                });
                if !pts.is_empty() {
                    transfer.push(Series {
                        name: s.clone(),
                        color: color(s),
                        dashed: false,
                        points: pts,
                    });
                }
                for (q, dashed) in [("p50", false), ("p99", true)] {
                    let pts = series_of(s, &|f| {
                        let v = if q == "p50" { f.p50_us } else { f.p99_us }?;
                        Some(Point {
                            x: f64::from(f.concurrency),
                            y: v as f64 / 1000.0,
                            band: None,
                        })
                    });
                    if !pts.is_empty() {
                        lat.push(Series {
                            name: format!("{s} {q}"),
                            color: color(s),
                            dashed,
                            points: pts,
                        });
                    }
                }
            }
            let id = if c > 0 {
                format!("{}-{}c", slug(&w), c)
            } else {
                slug(&w)
            };
            // A lone level drawn on ticks at fractions of a connection
            // (0.2, 0.4, …) would read as levels that were never run.
            let one_level = steps.iter().all(|f| f.concurrency == steps[0].concurrency);
            let level = one_level.then_some(steps[0].concurrency);
            if !large {
                let title = labelled([Some(format!("Throughput, {w}")), cores_text(c)]);
                out.push(sweep_chart(
                    format!("throughput-{id}"),
                    "Mean requests per second over rounds; the band is the 95% confidence interval of the mean.".into(),
                    LineChart {
                        title,
                        x_label: "concurrent connections".into(),
                        y_label: "requests per second".into(),
                        series: tput,
                        whole_x: one_level,
                    },
                    level,
                ));
            } else {
                // A large file's requests per second is a handful whatever
                // the server: bytes per second is the figure that differs,
                // drawn against concurrency as the Apache/lighttpd/nginx/
                // Varnish article drew its 21 MB file.
                let title = labelled([Some(format!("Transfer rate, {w}")), cores_text(c)]);
                out.push(sweep_chart(
                    format!("transfer-{id}"),
                    "Mean MB/s over rounds (bytes read from the socket, headers included), the figure the summary and the best-per-workload table use.".into(),
                    LineChart {
                        title,
                        x_label: "concurrent connections".into(),
                        y_label: "MB/s".into(),
                        series: transfer,
                        whole_x: one_level,
                    },
                    level,
                ));
            }
            let title = labelled([Some(format!("Latency, {w}")), cores_text(c)]);
            out.push(sweep_chart(
                format!("latency-{id}"),
                "Median over rounds of each round's p50 (solid) and p99 (dashed) latency.".into(),
                LineChart {
                    title,
                    x_label: "concurrent connections".into(),
                    y_label: "latency (ms)".into(),
                    series: lat,
                    whole_x: one_level,
                },
                level,
            ));
            out.extend(sessions_per_sec(&w, c, &steps, &servers));
        }
        if !large {
            out.extend(scaling(run, figs, &w, &servers));
        }
    }

    let bar = |server: &str, label: String, (value, range, note)| Bar {
        label,
        value,
        color: color(server),
        range,
        note,
    };
    let bars_per_server = |value: &dyn Fn(&str) -> BarValue| {
        servers
            .iter()
            .filter_map(|s| value(s).map(|v| bar(s, s.clone(), v)))
            .collect::<Vec<Bar>>()
    };
    // Memory and time depend on the cores a server was given (more
    // workers, more parallel requests), so they get a bar per core count,
    // grouped by it; a run of one core count keeps one bar per server.
    let cores = core_counts(run);
    let bars_per_server_and_cores = |value: &dyn Fn(&str, u32) -> BarValue| {
        let mut bars = Vec::new();
        for &c in &cores {
            for s in &servers {
                if let Some(v) = value(s, c) {
                    let label = if cores.len() > 1 {
                        labelled([Some(s.clone()), figures::known_cores(c)])
                    } else {
                        s.clone()
                    };
                    bars.push(bar(s, label, v));
                }
            }
        }
        bars
    };

    let memory = bars_per_server_and_cores(&|s, c| {
        // A server that was not sampled has no bar rather than one of 0.
        let of: Vec<&StepFigures> = figs
            .iter()
            .filter(|f| f.server == s && f.cores == c && f.rounds > 0 && f.pss_peak_bytes.is_some())
            .collect();
        let pss = of.iter().filter_map(|f| f.pss_peak_bytes).max()?;
        let rss = of
            .iter()
            .filter_map(|f| f.rss_peak_bytes)
            .max()
            .unwrap_or(0);
        Some((
            pss as f64 / 1048576.0,
            None,
            format!("MiB (RSS {})", figures::mib(rss)),
        ))
    });
    if !memory.is_empty() {
        let title = "Server memory, peak PSS".to_string();
        out.push(NamedChart::bars(
            "memory".into(),
            "Highest proportional set size of the server's whole process tree over the steps at each core count; shared pages are split between the processes that share them, so forked workers are not counted many times.".into(),
            BarChart {
                title,
                x_label: "MiB".into(),
                bars: memory,
            },
        ));
    }

    for w in workload_names(run) {
        let large = is_large(figs, &w);
        let ws = slug(&w);
        if !large {
            // The "total time" of the 2016 Linux web server benchmark, whose
            // weighttp runs each served a fixed 100,000 requests; rounds here
            // are timed, so the same figure is derived from throughput.
            let total = bars_per_server_and_cores(&|s, c| {
                let steps: Vec<&StepFigures> = figs
                    .iter()
                    .filter(|f| f.server == s && f.workload == w && f.cores == c && measured(f))
                    .filter(|f| f.throughput.mean > 0.0)
                    .collect();
                if steps.is_empty() {
                    return None;
                }
                let secs: f64 = steps.iter().map(|f| 100_000.0 / f.throughput.mean).sum();
                let n = steps.len();
                let unit = if n == 1 { "step" } else { "steps" };
                Some((secs, None, format!("s over {n} {unit}")))
            });
            if !total.is_empty() {
                let title = format!("Time to serve 100,000 requests per step, {w}");
                out.push(NamedChart::bars(
                    format!("total-time-{ws}"),
                    "Sum over the sweep's steps at each core count of 100,000 requests divided by the step's mean throughput, as if each step had served a fixed number of requests.".into(),
                    BarChart {
                        title,
                        x_label: "seconds".into(),
                        bars: total,
                    },
                ));
            }
        }

        let cpu = bars_per_server(&|s| {
            let per: Vec<f64> = figs
                .iter()
                .filter(|f| f.server == s && f.workload == w && measured(f))
                .filter_map(|f| f.cpu_us_per_request)
                .collect();
            let (cpu, req) = figs
                .iter()
                .filter(|f| f.server == s && f.workload == w && measured(f))
                .filter_map(|f| {
                    f.cpu_us_per_request
                        .map(|c| (c * f.completed as f64, f.completed))
                })
                .fold((0.0, 0u64), |a, b| (a.0 + b.0, a.1 + b.1));
            if req == 0 {
                return None;
            }
            let lo = per.iter().copied().fold(f64::MAX, f64::min);
            let hi = per.iter().copied().fold(0.0, f64::max);
            Some((cpu / req as f64, Some((lo, hi)), "µs".into()))
        });
        if !cpu.is_empty() {
            let title = format!("Server CPU per request, {w}");
            out.push(NamedChart::bars(
                format!("cpu-{ws}"),
                "Server CPU time (user + system, whole process tree) per completed request over all steps; the whisker spans the steps' lowest and highest.".into(),
                BarChart {
                    title,
                    x_label: "µs of CPU per request".into(),
                    bars: cpu,
                },
            ));
        }

        if large {
            let mb = bars_per_server(&|s| {
                let f = best(figs, s, &w, true)?;
                let note = match (f.min_us, f.max_us) {
                    (Some(lo), Some(hi)) => format!(
                        "MB/s, transfer {}–{}",
                        figures::duration_us(lo),
                        figures::duration_us(hi)
                    ),
                    _ => "MB/s".into(),
                };
                Some((f.mb_per_sec, None, note))
            });
            if !mb.is_empty() {
                let title = format!("Large-file transfer, {w}");
                out.push(NamedChart::bars(
                    format!("large-{ws}"),
                    "Best mean MB/s over the sweep, with the fastest and slowest single transfer at that step.".into(),
                    BarChart {
                        title,
                        x_label: "MB/s".into(),
                        bars: mb,
                    },
                ));
            }
        }
    }
    out
}

/// A chart of a sweep: lines against concurrency, or with one `level`
/// only, bars (a line of one dot a server draws nothing to follow).
fn sweep_chart(id: String, caption: String, chart: LineChart, level: Option<u32>) -> NamedChart {
    let Some(level) = level else {
        return NamedChart::line(id, caption, chart);
    };
    let bars = chart
        .series
        .iter()
        .flat_map(|s| {
            s.points.iter().map(|p| Bar {
                label: s.name.clone(),
                value: p.y,
                color: s.color,
                range: p.band,
                note: String::new(),
            })
        })
        .collect();
    let connections = if level == 1 {
        "connection"
    } else {
        "connections"
    };
    NamedChart::bars(
        id,
        caption,
        BarChart {
            title: format!("{}, {level} {connections}", chart.title),
            x_label: chart.y_label,
            bars,
        },
    )
}

/// A step's mean requests per second at `x`, banded by its 95% interval
/// when it has one.
fn throughput_point(x: f64, f: &StepFigures) -> Point {
    let t = &f.throughput;
    Point {
        x,
        y: t.mean,
        band: (t.n >= 2).then_some((t.ci_low.max(0.0), t.ci_high)),
    }
}

/// Requests per second against server cores, a line per server through
/// its best step at each core count (the summary's choice: valid steps
/// first), as scaling articles plot throughput against cores; `None` with
/// fewer than two core counts, where there is no line to draw.
fn scaling(
    run: &RunData,
    figs: &[StepFigures],
    workload: &str,
    servers: &[String],
) -> Option<NamedChart> {
    let mut series = Vec::new();
    for (color, s) in servers.iter().enumerate() {
        let mut points = Vec::new();
        for c in core_counts(run) {
            let at: Vec<StepFigures> = figs.iter().filter(|f| f.cores == c).cloned().collect();
            if let Some(f) = best(&at, s, workload, false) {
                points.push(throughput_point(f64::from(c), f));
            }
        }
        if !points.is_empty() {
            series.push(Series {
                name: s.clone(),
                color,
                dashed: false,
                points,
            });
        }
    }
    let cores: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    let first = cores.first()?;
    if cores.iter().all(|c| c == first) {
        return None;
    }
    let title = format!("Throughput by server cores, {workload}");
    Some(NamedChart::line(
        format!("scaling-{}", slug(workload)),
        "Each server's best mean requests per second at each core count, over its \
                  concurrency levels (valid steps first, as in the summary); the band is that \
                  step's 95% confidence interval."
            .into(),
        LineChart {
            title,
            x_label: "server cores".into(),
            y_label: "requests per second".into(),
            series,
            whole_x: true,
        },
    ))
}
