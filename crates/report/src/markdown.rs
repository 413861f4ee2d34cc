//! The report in Markdown, for articles and README files.

use std::fmt::Write;

use throng_model::RunData;

use crate::escape::{md_cell as cell, md_fence};
use crate::figures::{self, duration_us, grouped, mib, rate_with_ci};
use crate::Analysis;

pub fn render(run: &RunData, a: &Analysis, image_dir: Option<&str>) -> String {
    let mut o = String::new();
    let r = &run.run;
    let env = &r.environment;
    let study = if r.study.is_empty() {
        "study"
    } else {
        &r.study
    };
    let _ = writeln!(o, "# Web server benchmark: {}\n", cell(study));
    let _ = writeln!(
        o,
        "Run {} · started {} · finished {} · {} · measured by throng {} on {}\n",
        r.id,
        figures::utc(r.started_unix_s),
        r.finished_unix_s
            .map(figures::utc)
            .unwrap_or_else(|| "not finished".into()),
        if r.complete {
            "complete"
        } else {
            "**incomplete**: interrupted or the lab failed"
        },
        cell(&env.throng_version),
        cell(&env.hostname)
    );

    o.push_str("## Summary\n\n| Server | Version | Model | Small files, req/s | Large files, MB/s | Max users | Memory (peak PSS) | Executable |\n|---|---|---|--:|--:|--:|--:|--:|\n");
    for s in &a.summary {
        let small = match (&s.small_rps, &s.small_verdict, &s.small_workload) {
            (Some(v), Some(verdict), Some(w)) => format!(
                "{} ({}) — {}",
                grouped(v.round() as u64),
                cell(w),
                cell(verdict)
            ),
            _ => "–".into(),
        };
        let large = match (&s.large_mb_per_sec, &s.large_verdict, &s.large_workload) {
            (Some(v), Some(verdict), Some(w)) => {
                format!("{v:.1} ({}) — {}", cell(w), cell(verdict))
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
            "| {} | {} | {} | {small} | {large} | {users} | {} | {} |",
            cell(&s.server),
            cell(&s.version),
            cell(&s.model),
            s.memory_bytes.map(mib).unwrap_or_else(|| "–".into()),
            if s.exe_bytes > 0 {
                grouped(s.exe_bytes) + " B"
            } else {
                "–".into()
            }
        );
    }
    o.push_str("\nReq/s and MB/s: best mean over core counts and concurrency levels, with its verdict. Max users: highest concurrency with no error and p99 under 3 s (+: the sweep stopped before the server did).\n\n");
    features(&mut o, run);

    if let Some(dir) = image_dir {
        o.push_str("## Charts\n\n");
        for c in &a.charts {
            let _ = writeln!(
                o,
                "![{}]({}/{}.png)\n\n{}\n",
                cell(&c.title),
                dir.trim_end_matches('/'),
                c.id,
                c.caption
            );
        }
    }

    o.push_str("## Every step\n\n| Server | Cores | Workload | Conc. | Rounds | req/s [95% CI] | MB/s | p50 | p99 | Errors | CPU/req | PSS peak | Verdict |\n|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for f in &a.steps {
        let verdict = if f.status == "ok" {
            f.verdict.clone()
        } else {
            match &f.failure {
                Some(e) => format!("{}: {e}", f.status),
                None => f.status.clone(),
            }
        };
        let opt_us = |v: Option<u64>| v.map(duration_us).unwrap_or_else(|| "–".into());
        let _ = writeln!(
            o,
            "| {} | {}{} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} |",
            cell(&f.server),
            f.cores,
            if f.shared_cores { " (shared)" } else { "" },
            cell(&f.workload),
            f.concurrency,
            f.rounds,
            if f.rounds > 0 {
                rate_with_ci(&f.throughput)
            } else {
                "–".into()
            },
            f.mb_per_sec,
            opt_us(f.p50_us),
            opt_us(f.p99_us),
            grouped(f.errors),
            f.cpu_us_per_request
                .map(|c| format!("{c:.1} µs"))
                .unwrap_or_else(|| "–".into()),
            if f.pss_peak_bytes > 0 {
                mib(f.pss_peak_bytes)
            } else {
                "–".into()
            },
            cell(&verdict)
        );
    }

    o.push_str("\n## Environment\n\n| | |\n|---|---|\n");
    let rows = [
        ("Host", env.hostname.clone()),
        ("CPU", env.cpu_model.clone()),
        ("CPUs online", env.cpus_online.to_string()),
        ("Memory", mib(env.memory_bytes)),
        ("Kernel", env.kernel.clone()),
        ("OS", env.os.clone()),
        (
            "Open files (soft / hard)",
            format!("{} / {}", env.nofile.0, env.nofile.1),
        ),
        ("throng", env.throng_version.clone()),
    ];
    for (k, v) in rows {
        let _ = writeln!(o, "| {k} | {} |", cell(&v));
    }
    for (k, v) in &env.sysctls {
        let _ = writeln!(o, "| {} | {} |", cell(k), cell(v));
    }
    if !r.doctor.is_empty() {
        o.push_str(
            "\n### Machine check\n\n| Check | Result | Finding | Fix |\n|---|---|---|---|\n",
        );
        for f in &r.doctor {
            let word = match f.severity {
                throng_model::Severity::Ok => "ok",
                throng_model::Severity::Warn => "warn",
                throng_model::Severity::Fail => "fail",
            };
            let _ = writeln!(
                o,
                "| {} | {word} | {} | {} |",
                cell(&f.check),
                cell(&f.message),
                cell(&f.fix)
            );
        }
    }

    if !run.servers.is_empty() {
        o.push_str("\n## Servers and their configurations\n");
        for s in &run.servers {
            let _ = writeln!(
                o,
                "\n### {}\n\n{} {}, recipe {}, package {}, {}, executable {} bytes\n",
                cell(&s.name),
                cell(&s.name),
                cell(&s.version),
                cell(&s.recipe),
                cell(&s.package),
                cell(&s.model),
                grouped(s.exe_bytes)
            );
            for c in &s.configs {
                let _ = writeln!(o, "{}:\n\n{}", cell(&c.path), md_fence(&c.content, ""));
            }
        }
    }

    if !r.study_toml.is_empty() {
        let _ = writeln!(
            o,
            "\n## Study file\n\nSave as `study.toml` and run `throng lab study.toml` to measure again.\n\n{}",
            md_fence(&r.study_toml, "toml")
        );
    }
    o
}

/// Seed 004's feature table, as probed live, with the search for max users.
fn features(o: &mut String, run: &RunData) {
    if run
        .servers
        .iter()
        .all(|s| s.features.is_empty() && s.max_users.is_empty())
    {
        return;
    }
    o.push_str(
        "## Features

| Server | Model | ",
    );
    for f in throng_model::FEATURES {
        let _ = write!(o, "{} | ", cell(&figures::feature_title(f)));
    }
    o.push_str("Package | Executable |\n|---|---|");
    for _ in throng_model::FEATURES {
        o.push_str("---|");
    }
    o.push_str("--:|--:|\n");
    for s in &run.servers {
        let _ = write!(o, "| {} | {} | ", cell(&s.name), cell(&s.model));
        for f in throng_model::FEATURES {
            let label = s
                .features
                .iter()
                .find(|x| x.name == *f)
                .map(|x| x.status.label())
                .unwrap_or("–");
            let _ = write!(o, "{label} | ");
        }
        let size = |b: u64| if b > 0 { mib(b) } else { "–".into() };
        let _ = writeln!(o, "{} | {} |", size(s.installed_bytes), size(s.exe_bytes));
    }
    o.push_str("\nEvery answer was seen on the running server:\n\n");
    for s in &run.servers {
        for f in &s.features {
            let _ = writeln!(
                o,
                "- {} {}: {} — {}",
                cell(&s.name),
                cell(&figures::feature_title(&f.name)),
                f.status.label(),
                cell(&f.evidence)
            );
        }
    }
    if run.servers.iter().any(|s| !s.max_users.is_empty()) {
        o.push_str("\n### Max users, searched\n\n| Server | Cores | Workload | Max users | Broke at | What broke |\n|---|--:|---|--:|--:|---|\n");
        for s in &run.servers {
            for m in &s.max_users {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} |",
                    cell(&s.name),
                    m.cores,
                    cell(&m.workload),
                    m.level.map(grouped_u32).unwrap_or_else(|| "none".into()),
                    m.broke_at.map(grouped_u32).unwrap_or_else(|| "–".into()),
                    cell(&m.broke_by)
                );
            }
        }
        let patience = run
            .servers
            .iter()
            .flat_map(|s| &s.max_users)
            .map(|m| m.patience_s)
            .next()
            .unwrap_or(3.0);
        let _ = writeln!(o, "\nMax users: highest concurrency with no error and p99 under {patience} s, stepping up past the sweep until the server broke.");
    }
    o.push('\n');
}

fn grouped_u32(v: u32) -> String {
    grouped(v as u64)
}
