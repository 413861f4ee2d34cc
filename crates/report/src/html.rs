//! The report as one self-contained HTML file: inline CSS and SVG, no script,
//! nothing fetched from the network, light and dark colour schemes.

use std::fmt::Write;

use throng_model::{RunData, Severity};

use crate::charts::NamedChart;
use crate::escape::xml as esc;
use crate::figures::{self, duration_us, grouped, mib, rate_with_ci, StepFigures, SummaryRow};
use crate::Analysis;

const CSS: &str = r#"
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --line: #d1d9e0;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --code: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d;
    --ok: #3fb950; --warn: #d29922; --bad: #f85149; --code: #161b22; }
}
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
  color: var(--fg); background: var(--bg); max-width: 1120px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.2em; margin-top: 2em; }
.meta { color: var(--muted); }
table { border-collapse: collapse; margin: 1em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; vertical-align: top; }
th { font-weight: 600; }
.t { text-align: left; }
.scroll { overflow-x: auto; }
.valid { color: var(--ok); }
.suspect, .warn { color: var(--warn); }
.failed, .fail { color: var(--bad); }
.v { font-size: 0.85em; display: block; }
figure.chart { margin: 1.5em 0; }
figure.chart svg { color: var(--fg); max-width: 100%; height: auto; }
figure.chart svg .bg { fill: var(--bg); }
figcaption { color: var(--muted); font-size: 0.9em; max-width: 760px; }
pre { background: var(--code); padding: 10px; overflow-x: auto; font-size: 0.85em; }
details { margin: 0.4em 0; }
summary { cursor: pointer; }
code { font-size: 0.9em; }
"#;

fn verdict_class(label: &str) -> &'static str {
    if label == "valid" {
        "valid"
    } else {
        "suspect"
    }
}

/// A number with its verdict under it; the reasons in the tooltip.
fn with_verdict(value: &str, verdict: &str, reasons: &[String]) -> String {
    format!(
        "{value}<span class=\"v {}\" title=\"{}\">{}</span>",
        verdict_class(verdict),
        esc(&reasons.join("; ")),
        esc(verdict)
    )
}

pub fn render(run: &RunData, a: &Analysis) -> String {
    let mut o = String::new();
    let r = &run.run;
    let env = &r.environment;
    let study = if r.study.is_empty() {
        "study"
    } else {
        &r.study
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>throng report: {} (run {})</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(study),
        r.id
    );
    let _ = writeln!(o, "<h1>Web server benchmark: {}</h1>", esc(study));
    let finished = r
        .finished_unix_s
        .map(figures::utc)
        .unwrap_or_else(|| "not finished".into());
    let _ = writeln!(
        o,
        "<p class=\"meta\">Run {} · started {} · finished {} · {} · measured by throng {} on {}</p>",
        r.id,
        esc(&figures::utc(r.started_unix_s)),
        esc(&finished),
        if r.complete {
            "<span class=\"valid\">complete</span>"
        } else {
            "<span class=\"failed\">incomplete: interrupted or the lab failed; numbers cover only what was measured</span>"
        },
        esc(&env.throng_version),
        esc(&env.hostname)
    );
    let fails: Vec<&throng_model::Finding> = r
        .doctor
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .collect();
    if !fails.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"warn\">The machine check found {} problem(s) before the run; see <a href=\"#environment\">Environment</a>.</p>",
            fails.len()
        );
    }

    summary_table(&mut o, &a.summary);
    features_table(&mut o, run);
    best_table(&mut o, run, &a.steps);

    o.push_str("<h2 id=\"charts\">Charts</h2>\n");
    if a.charts.is_empty() {
        o.push_str("<p>No step was measured, so there is nothing to draw.</p>\n");
    }
    for c in &a.charts {
        chart(&mut o, c);
    }

    steps_table(&mut o, &a.steps);
    failures(&mut o, run);
    environment(&mut o, run);
    servers(&mut o, run);

    o.push_str("<h2 id=\"study\">Study file</h2>\n");
    if r.study_toml.is_empty() {
        o.push_str("<p>The study file was not stored.</p>\n");
    } else {
        let _ = writeln!(
            o,
            "<p>Save this as <code>study.toml</code> and run <code>throng lab study.toml</code> to measure again.</p>\n<pre>{}</pre>",
            esc(&r.study_toml)
        );
    }
    let _ = writeln!(
        o,
        "<p class=\"meta\">Generated from run {} by <code>throng report</code>.</p>\n</body>\n</html>",
        r.id
    );
    o
}

fn chart(o: &mut String, c: &NamedChart) {
    let _ = writeln!(
        o,
        "<figure class=\"chart\" id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
        esc(&c.id),
        c.svg,
        esc(&c.caption)
    );
}

fn summary_table(o: &mut String, rows: &[SummaryRow]) {
    o.push_str("<h2 id=\"summary\">Summary</h2>\n<div class=\"scroll\"><table>\n<tr><th class=\"t\">Server</th><th class=\"t\">Version</th><th class=\"t\">Model</th><th>Small files, req/s</th><th>Large files, MB/s</th><th>Max users</th><th>Memory (peak PSS)</th><th>Executable</th></tr>\n");
    for s in rows {
        let small = match (&s.small_rps, &s.small_verdict, &s.small_workload) {
            (Some(v), Some(verdict), Some(w)) => with_verdict(
                &format!("{} <small>({})</small>", grouped(v.round() as u64), esc(w)),
                verdict,
                &[],
            ),
            _ => "–".into(),
        };
        let large = match (&s.large_mb_per_sec, &s.large_verdict, &s.large_workload) {
            (Some(v), Some(verdict), Some(w)) => {
                with_verdict(&format!("{v:.1} <small>({})</small>", esc(w)), verdict, &[])
            }
            _ => "–".into(),
        };
        let users = match (s.max_users, s.max_users_tested) {
            (Some(u), Some(t)) if u == t => format!("{u}+"),
            (Some(u), _) => u.to_string(),
            (None, Some(_)) => "none".into(),
            _ => "–".into(),
        };
        let _ = writeln!(
            o,
            "<tr><td class=\"t\">{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{small}</td><td>{large}</td><td>{users}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.server),
            esc(&s.version),
            esc(&s.model),
            s.memory_bytes.map(mib).unwrap_or_else(|| "–".into()),
            if s.exe_bytes > 0 { grouped(s.exe_bytes) + " B" } else { "–".into() }
        );
    }
    o.push_str("</table></div>\n<p class=\"meta\">Req/s and MB/s: best mean over core counts and concurrency levels. Max users: highest concurrency with no error and p99 under 3 s (a + means the sweep stopped before the server did). Memory: peak PSS of the server's process tree.</p>\n");
}

fn best_table(o: &mut String, run: &RunData, figs: &[StepFigures]) {
    let workloads = figures::workload_names(run);
    if workloads.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"best\">Best per workload</h2>\n<div class=\"scroll\"><table>\n<tr><th class=\"t\">Server</th>");
    for w in &workloads {
        let unit = if figures::is_large(figs, w) {
            "MB/s, transfer min–max"
        } else {
            "req/s [95% CI]"
        };
        let _ = write!(o, "<th>{} <small>{unit}</small></th>", esc(w));
    }
    o.push_str("</tr>\n");
    for s in figures::server_names(run) {
        let _ = write!(o, "<tr><td class=\"t\">{}</td>", esc(&s));
        for w in &workloads {
            let large = figures::is_large(figs, w);
            match figures::best(figs, &s, w, large) {
                Some(f) => {
                    let value = if large {
                        let range = match (f.min_us, f.max_us) {
                            (Some(lo), Some(hi)) => {
                                format!(", {}–{}", duration_us(lo), duration_us(hi))
                            }
                            _ => String::new(),
                        };
                        format!("{:.1}{range}", f.mb_per_sec)
                    } else {
                        rate_with_ci(&f.throughput)
                    };
                    let _ = write!(
                        o,
                        "<td>{}<small class=\"meta\">{} core(s), c={}</small></td>",
                        with_verdict(&value, &f.verdict, &f.verdict_reasons),
                        f.cores,
                        f.concurrency
                    );
                }
                None => o.push_str("<td>–</td>"),
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table></div>\n");
}

fn steps_table(o: &mut String, figs: &[StepFigures]) {
    o.push_str("<h2 id=\"steps\">Every step</h2>\n<div class=\"scroll\"><table>\n<tr><th class=\"t\">Server</th><th>Cores</th><th class=\"t\">Workload</th><th>Conc.</th><th>Rounds</th><th>req/s [95% CI]</th><th>MB/s</th><th>p50</th><th>p99</th><th>Errors</th><th>CPU/req</th><th>Server CPU</th><th>PSS peak</th><th class=\"t\">Verdict</th></tr>\n");
    for f in figs {
        let verdict = if f.status == "ok" {
            format!(
                "<span class=\"{}\" title=\"{}\">{}</span>",
                verdict_class(&f.verdict),
                esc(&f.verdict_reasons.join("; ")),
                esc(&f.verdict)
            )
        } else {
            format!(
                "<span class=\"failed\">{}{}</span>",
                esc(&f.status),
                f.failure
                    .as_deref()
                    .map(|e| format!(": {}", esc(e)))
                    .unwrap_or_default()
            )
        };
        let opt_us = |v: Option<u64>| v.map(duration_us).unwrap_or_else(|| "–".into());
        let _ = writeln!(
            o,
            "<tr><td class=\"t\">{}</td><td>{}{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"t\">{verdict}</td></tr>",
            esc(&f.server),
            f.cores,
            if f.shared_cores { " <small class=\"suspect\">shared</small>" } else { "" },
            esc(&f.workload),
            f.concurrency,
            f.rounds,
            if f.rounds > 0 { rate_with_ci(&f.throughput) } else { "–".into() },
            f.mb_per_sec,
            opt_us(f.p50_us),
            opt_us(f.p99_us),
            grouped(f.errors),
            f.cpu_us_per_request.map(|c| format!("{c:.1} µs")).unwrap_or_else(|| "–".into()),
            f.cpu_utilisation.map(|c| format!("{:.0}%", c * 100.0)).unwrap_or_else(|| "–".into()),
            if f.pss_peak_bytes > 0 { mib(f.pss_peak_bytes) } else { "–".into() },
        );
    }
    o.push_str("</table></div>\n<p class=\"meta\">req/s: mean over rounds with the 95% confidence interval of the mean (Student's t). p50/p99: median over rounds. Server CPU: user + system time of the server's process tree per second of wall time (100% = one core).</p>\n");
}

fn failures(o: &mut String, run: &RunData) {
    let failed: Vec<_> = run
        .steps
        .iter()
        .filter(|s| s.failure.is_some() || s.log_tail.is_some())
        .collect();
    if failed.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"failures\">Failures</h2>\n");
    for s in failed {
        let _ = writeln!(
            o,
            "<h3>{}, {} core(s), {}, concurrency {}</h3>\n<p class=\"failed\">{}</p>",
            esc(&s.server),
            s.cores,
            esc(&s.workload),
            s.concurrency,
            esc(s.failure.as_deref().unwrap_or("failed"))
        );
        if let Some(t) = &s.log_tail {
            let _ = writeln!(o, "<pre>{}</pre>", esc(t));
        }
    }
}

fn environment(o: &mut String, run: &RunData) {
    let e = &run.run.environment;
    o.push_str("<h2 id=\"environment\">Environment</h2>\n<table>\n");
    let rows = [
        ("Host", e.hostname.clone()),
        ("CPU", e.cpu_model.clone()),
        ("CPUs online", e.cpus_online.to_string()),
        ("Memory", mib(e.memory_bytes)),
        ("Kernel", e.kernel.clone()),
        ("OS", e.os.clone()),
        (
            "Open files (soft / hard)",
            format!("{} / {}", e.nofile.0, e.nofile.1),
        ),
        ("throng", e.throng_version.clone()),
    ];
    for (k, v) in rows {
        let _ = writeln!(
            o,
            "<tr><th class=\"t\">{k}</th><td class=\"t\">{}</td></tr>",
            esc(&v)
        );
    }
    o.push_str("</table>\n");
    if !e.sysctls.is_empty() {
        o.push_str("<details><summary>Kernel settings</summary><table>\n");
        for (k, v) in &e.sysctls {
            let _ = writeln!(
                o,
                "<tr><td class=\"t\"><code>{}</code></td><td class=\"t\"><code>{}</code></td></tr>",
                esc(k),
                esc(v)
            );
        }
        o.push_str("</table></details>\n");
    }
    if !run.run.doctor.is_empty() {
        o.push_str("<h3>Machine check</h3>\n<table>\n<tr><th class=\"t\">Check</th><th class=\"t\">Result</th><th class=\"t\">Finding</th><th class=\"t\">Fix</th></tr>\n");
        for f in &run.run.doctor {
            let (class, word) = match f.severity {
                Severity::Ok => ("valid", "ok"),
                Severity::Warn => ("warn", "warn"),
                Severity::Fail => ("fail", "fail"),
            };
            let _ = writeln!(
                o,
                "<tr><td class=\"t\"><code>{}</code></td><td class=\"t {class}\">{word}</td><td class=\"t\">{}</td><td class=\"t\">{}</td></tr>",
                esc(&f.check),
                esc(&f.message),
                if f.fix.is_empty() { String::new() } else { format!("<code>{}</code>", esc(&f.fix)) }
            );
        }
        o.push_str("</table>\n");
    }
}

fn servers(o: &mut String, run: &RunData) {
    if run.servers.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"servers\">Servers and their configurations</h2>\n");
    for s in &run.servers {
        let _ = writeln!(
            o,
            "<h3>{}</h3>\n<p>{} {} · recipe <code>{}</code> · package <code>{}</code> · {} · executable {}</p>",
            esc(&s.name),
            esc(&s.name),
            esc(&s.version),
            esc(&s.recipe),
            esc(if s.package.is_empty() { "–" } else { &s.package }),
            esc(&s.model),
            if s.exe_bytes > 0 { grouped(s.exe_bytes) + " bytes" } else { "size unknown".into() }
        );
        for c in &s.configs {
            let _ = writeln!(
                o,
                "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
                esc(&c.path),
                esc(&c.content)
            );
        }
    }
}

/// Seed 004's feature table, as probed live; the evidence is each cell's title.
fn features_table(o: &mut String, run: &RunData) {
    if run
        .servers
        .iter()
        .all(|s| s.features.is_empty() && s.max_users.is_empty())
    {
        return;
    }
    o.push_str("<h2 id=\"features\">Features</h2>\n<div class=\"scroll\"><table>\n<tr><th class=\"t\">Server</th><th class=\"t\">Model</th>");
    for f in throng_model::FEATURES {
        let _ = write!(
            o,
            "<th class=\"t\">{}</th>",
            esc(&figures::feature_title(f))
        );
    }
    o.push_str("<th>Package</th><th>Executable</th></tr>\n");
    for s in &run.servers {
        let _ = write!(
            o,
            "<tr><td class=\"t\">{}</td><td class=\"t\">{}</td>",
            esc(&s.name),
            esc(&s.model)
        );
        for f in throng_model::FEATURES {
            match s.features.iter().find(|x| x.name == *f) {
                Some(x) => {
                    let _ = write!(
                        o,
                        "<td class=\"t feature-{}\" title=\"{}\">{}</td>",
                        x.status.label(),
                        esc(&x.evidence),
                        x.status.label()
                    );
                }
                None => o.push_str("<td class=\"t\">–</td>"),
            }
        }
        let size = |b: u64| if b > 0 { mib(b) } else { "–".into() };
        let _ = writeln!(
            o,
            "<td>{}</td><td>{}</td></tr>",
            size(s.installed_bytes),
            size(s.exe_bytes)
        );
    }
    o.push_str("</table></div>\n<p>Every answer was seen on the running server; hover a cell for what was seen.</p>\n");
    if run.servers.iter().any(|s| !s.max_users.is_empty()) {
        o.push_str("<h3>Max users, searched</h3>\n<div class=\"scroll\"><table>\n<tr><th class=\"t\">Server</th><th>Cores</th><th class=\"t\">Workload</th><th>Max users</th><th>Broke at</th><th class=\"t\">What broke</th></tr>\n");
        for s in &run.servers {
            for m in &s.max_users {
                let _ = writeln!(
                    o,
                    "<tr><td class=\"t\">{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td class=\"t\">{}</td></tr>",
                    esc(&s.name),
                    m.cores,
                    esc(&m.workload),
                    m.level.map(|v| grouped(v as u64)).unwrap_or_else(|| "none".into()),
                    m.broke_at.map(|v| grouped(v as u64)).unwrap_or_else(|| "–".into()),
                    esc(&m.broke_by)
                );
            }
        }
        o.push_str("</table></div>\n");
    }
}
