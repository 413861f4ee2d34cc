//! `throng lab STUDY`: runs a study and shows its progress; the measuring
//! and storing is the lab crate's, the printing is here.

use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use throng_lab::run::RunEstimate;
use throng_lab::{Event, Interrupt, LabOptions, Observer, Recipes, Store, Study};
use throng_model::{Comparison, StepRecord, StepStatus, WorkloadKind};
use throng_report::figures;

#[derive(clap::Args)]
#[command(after_help = builtin_help())]
pub struct LabArgs {
    /// A built-in study (listed below) or a study TOML file.
    pub study: String,
    /// SQLite database the run is stored in.
    #[arg(long, default_value = "throng.db", value_parser = crate::args::out_path)]
    pub db: PathBuf,
    /// Folder of recipe TOML files that add to or replace the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub recipes: Option<PathBuf>,
    /// Where servers' run directories are made (default: the temp dir).
    #[arg(long, value_name = "DIR", value_parser = crate::args::out_path)]
    pub workdir: Option<PathBuf>,
    /// Keep the run directory (rendered configs, server logs) afterwards.
    #[arg(long)]
    pub keep_workdir: bool,
    /// No progress bar; one line per step only.
    #[arg(long, short)]
    pub quiet: bool,
    /// Exit with code 1 when any step's verdict is suspect (for CI).
    #[arg(long)]
    pub strict: bool,
    /// No diagnostic round after each step (it counts the server's
    /// syscalls per request with perf or strace, and costs about 2 s per
    /// step). Same as `diagnose = false` in the study.
    #[arg(long)]
    pub no_diagnose: bool,
    /// Write a JUnit XML report of the study's [thresholds], one test
    /// case per step and threshold, for CI.
    #[arg(long, value_name = "FILE", value_parser = crate::args::out_path)]
    pub junit: Option<PathBuf>,
}

/// The built-in studies with their descriptions, for `--help`: drawn
/// from the studies themselves, so the list cannot miss one.
pub fn builtin_help() -> String {
    let mut o = String::from("Built-in studies:");
    for (name, text) in throng_lab::study::BUILTIN {
        o.push_str(&format!("\n  {name:<13} {}", description_of(text)));
    }
    o
}

/// A study's top-level `description = "..."`, read without the recipes a
/// whole study needs.
fn description_of(toml: &str) -> &str {
    toml.lines()
        .find_map(|l| l.strip_prefix("description = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or("")
}

struct Progress {
    bar: ProgressBar,
    /// Lines go to standard output as plain text: asked for (--quiet), or
    /// standard output is no terminal (a pipe, a CI log), where the bar's
    /// own printing would show nothing until the run's end.
    plain: bool,
    min_rounds: u64,
    steps_total: u64,
    steps_done: u64,
    rounds: u64,
    /// What the study should take, from the lab's estimate.
    estimate: RunEstimate,
    gates: crate::lab_thresholds::StepGates,
    /// Revised steps not yet told: a sweep revises its steps one after
    /// another, and they are told together once it has.
    revised: Vec<StepRecord>,
}

/// "lighttpd/nginx c=10: 1.62× (95% CI 1.57–1.67, 12 pairs) higher".
pub fn comparison_line(c: &Comparison) -> String {
    let level = match (c.concurrency, c.rate) {
        (Some(n), Some(r)) => format!("c={n} at {r} req/s"),
        (Some(n), None) => format!("c={n}"),
        (None, _) => "all levels".to_string(),
    };
    let interval = if !c.bounded() {
        c.unbounded_words()
    } else if c.launch_ratios.is_empty() {
        format!("95% CI {:.3}–{:.3}, {} pairs", c.ci_low, c.ci_high, c.pairs)
    } else {
        let over = match c.next_run_runs {
            Some(n) if n > 1 => format!(" over {n} runs"),
            _ => String::new(),
        };
        let next = c
            .next_run
            .map(|[lo, hi]| format!(", next run {lo:.3}–{hi:.3}{over}"))
            .unwrap_or_default();
        format!(
            "95% CI {:.3}–{:.3}{next}, {} pairs over {} launches",
            c.ci_low,
            c.ci_high,
            c.pairs,
            c.launch_ratios.len()
        )
    };
    format!(
        "{}/{} {} {} {level}: {:.3}× ({interval}) {}",
        c.b,
        c.a,
        figures::cores_label(c.cores),
        c.workload,
        c.ratio,
        c.decision.name()
    )
}

/// A step's level: its connections, and its offered rate where it has one
/// (two rates over the same connections are different steps).
fn level(s: &StepRecord) -> String {
    match s.rate {
        Some(r) => format!("{} at {r} req/s", s.concurrency),
        None => s.concurrency.to_string(),
    }
}

/// The start of a step's console line: which server, cores, workload and
/// level.
fn step_head(s: &StepRecord) -> String {
    steps_head(s, &level(s))
}

fn steps_head(s: &StepRecord, levels: &str) -> String {
    format!(
        "{:<16} {:<7} {:<11} c={:<5}",
        s.server,
        figures::cores_label(s.cores),
        s.workload,
        levels
    )
}

/// Steps whose verdicts their sweep changed after their own lines were
/// printed: the console must not leave `valid` standing where the report
/// says more. Steps of one sweep given the same verdict (a reason of the
/// whole sweep, such as its launches differing, goes to every level) are
/// told in one line that names their levels, not in a line each.
pub fn revised_lines(steps: &[StepRecord]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = steps;
    while let Some(first) = rest.first() {
        let same = rest
            .iter()
            .take_while(|s| {
                s.server == first.server
                    && s.cores == first.cores
                    && s.workload == first.workload
                    && s.verdict == first.verdict
            })
            .count();
        let levels: Vec<String> = rest[..same].iter().map(level).collect();
        let why: Vec<String> = first
            .verdict
            .reasons
            .iter()
            .map(|r| format!("{}: {}", r.code, r.message))
            .collect();
        lines.push(format!(
            "{} verdict now {}, from its whole sweep: {}",
            steps_head(first, &levels.join(", ")),
            first.verdict.label(),
            why.join("; ")
        ));
        rest = &rest[same..];
    }
    lines
}

pub fn step_line(s: &StepRecord) -> String {
    let head = step_head(s);
    match s.status {
        StepStatus::Ok => {
            // The report's own reduction: latency only from rounds that
            // completed a response.
            let f = figures::step_figures(s);
            let t = &f.throughput;
            let ci = (t.ci_high - t.ci_low) / 2.0;
            let p99 = f
                .p99_us
                .map(|p| format!("{:.2} ms", p as f64 / 1000.0))
                .unwrap_or_else(|| "–".into());
            let cpu = f.cpu_utilisation.unwrap_or(0.0);
            let rounds = if f.empty_rounds > 0 {
                format!("{} rounds ({} empty)", f.rounds, f.empty_rounds)
            } else {
                format!("{} rounds", f.rounds)
            };
            // A 21 MB transfer is measured by its bandwidth and by how long
            // one transfer takes at best and at worst.
            let large = if WorkloadKind::parse(&s.workload).is_some_and(WorkloadKind::is_large) {
                let span = match (f.min_us, f.max_us) {
                    (Some(min), Some(max)) => format!(
                        "transfer {:.1}–{:.1} ms",
                        min as f64 / 1000.0,
                        max as f64 / 1000.0
                    ),
                    _ => "no transfer completed".into(),
                };
                format!("  {:.1} MB/s, {span}", f.mb_per_sec)
            } else {
                String::new()
            };
            format!(
                "{head} {:>10.0} req/s ± {:<5.1}% p99 {:>9}  server cpu {:>4.2} cores, rss {:>9}  {rounds}  {}{large}",
                t.mean,
                if t.mean > 0.0 { ci / t.mean * 100.0 } else { 0.0 },
                p99,
                cpu,
                f.rss_peak_bytes.map_or_else(|| "–".into(), figures::mib),
                f.verdict.label()
            )
        }
        status => {
            let word = match status {
                StepStatus::Failed => "FAILED",
                StepStatus::Skipped => "skipped",
                _ => "unsupported",
            };
            format!("{head} {word}: {}", s.failure_head())
        }
    }
}

/// "about 2–3 min": the study's estimate in whole minutes, its longer end
/// rounded up.
pub fn duration_range(e: &RunEstimate) -> String {
    let lo = (e.min_s / 60.0).round().max(1.0);
    let hi = (e.max_s / 60.0).ceil().max(lo);
    if e.max_s < 60.0 {
        "under a minute".to_string()
    } else if lo == hi {
        format!("about {lo:.0} min")
    } else {
        format!("about {lo:.0}–{hi:.0} min")
    }
}

impl Progress {
    /// The bar counts rounds: those done plus the minimum of each step still
    /// to come, so precision loops that need more rounds push the ETA out.
    fn rescale(&self) {
        let left = self.steps_total.saturating_sub(self.steps_done) * self.min_rounds;
        self.bar.set_length(self.rounds + left);
        self.bar.set_position(self.rounds);
    }

    /// Tells the revised steps held back, before anything else is told
    /// and at the run's end.
    fn tell_revised(&mut self) {
        for l in revised_lines(&std::mem::take(&mut self.revised)) {
            self.line(l);
        }
    }

    fn line(&self, text: String) {
        if self.plain {
            // A lab run goes on, and is stored, whatever became of the
            // terminal.
            let _ = outln!("{text}");
        } else {
            self.bar.println(text);
        }
    }
}

impl Observer for Progress {
    fn event(&mut self, e: Event<'_>) {
        if let Event::Revised(s) = e {
            self.revised.push(s.clone());
            return;
        }
        self.tell_revised();
        match e {
            Event::Planned { run_id, steps, .. } => {
                self.steps_total = steps;
                self.bar.set_length(steps * self.min_rounds);
                self.line(format!(
                    "run {run_id}: {steps} steps, {}",
                    duration_range(&self.estimate)
                ));
            }
            Event::Note(n) => self.line(n.to_string()),
            Event::ServerStarted {
                server,
                cores,
                workload,
                ..
            } => {
                self.bar
                    .set_message(format!("{server} on {cores} cores, {workload}"));
            }
            Event::ServerFailed {
                server,
                cores,
                workload,
                message,
            } => {
                self.line(format!(
                    "{server} ({cores} cores, {workload}) failed: {message}"
                ));
            }
            Event::Round {
                server,
                concurrency,
                ..
            } => {
                self.rounds += 1;
                self.bar.set_message(format!("{server} c={concurrency}"));
                self.rescale();
            }
            Event::Step(s) => {
                self.steps_done += 1;
                self.rescale();
                self.line(step_line(s));
                for l in self.gates.step(s) {
                    self.line(l);
                }
            }
            // Held back above.
            Event::Revised(_) => {}
            Event::Compared(cs) => {
                for c in cs {
                    self.line(comparison_line(c));
                }
            }
        }
    }
}

pub fn run(args: LabArgs) -> anyhow::Result<u8> {
    let recipes = Recipes::load(args.recipes.as_deref())?;
    let mut study = Study::load(&args.study, &recipes)?;
    if args.no_diagnose {
        study.diagnose = false;
    }
    // Before the database is created: a study that cannot start leaves
    // nothing behind.
    study.check_installed()?;
    study.check_reachable(throng_servers::process::RunAs::unprivileged().as_ref())?;
    study.check_duet(throng_engine::affinity::own_cpus().len())?;
    study.check_open_files(throng_engine::max_connections())?;
    let workdir = args
        .workdir
        .as_deref()
        .map(throng_servers::rundir::check_base)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--workdir {e}"))?;
    crate::cmd_runs::check_db(Some(&args.db))?;
    if let Some(f) = &args.junit {
        crate::load_thresholds::check_writable("--junit", f)?;
    }
    // A database made here and left without a run, by a study refused on
    // a later check (its hosts, say), is removed again.
    let fresh = !args.db.exists();
    let mut store = Store::open(&args.db)?;
    let interrupt = Interrupt::new();
    let trigger = interrupt.clone();
    crate::signals::on_interrupt(move || {
        trigger.trigger();
        throng_servers::launch::abandon_waits();
    })?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(1);
        b.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {percent:>3}% eta {eta}  {msg}",
            )?
            .progress_chars("=> "),
        );
        b.enable_steady_tick(Duration::from_millis(250));
        b
    };
    let mut progress = Progress {
        bar: bar.clone(),
        plain: args.quiet || !std::io::IsTerminal::is_terminal(&std::io::stdout()),
        min_rounds: u64::from(study.precision.least_rounds()),
        steps_total: 0,
        steps_done: 0,
        rounds: 0,
        estimate: throng_lab::run::estimate(&study),
        gates: crate::lab_thresholds::StepGates::new(&study),
        revised: Vec::new(),
    };
    let started = std::time::Instant::now();
    let opts = LabOptions {
        workdir,
        keep_workdir: args.keep_workdir,
    };
    let result = throng_lab::run_study(&study, &mut store, &opts, &mut progress, &interrupt);
    progress.tell_revised();
    bar.finish_and_clear();
    if result.is_err() && fresh && store.latest_run().ok().flatten().is_none() {
        drop(store);
        for suffix in ["", "-wal", "-shm"] {
            let mut p = args.db.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
        return result.map(|_| 0);
    }
    let outcome = result?;
    if let Some(f) = &args.junit {
        let suite = format!("throng lab {}", study.name);
        progress
            .gates
            .write(f, &suite, started.elapsed().as_secs_f64())?;
    }
    if interrupt.is_set() {
        eprintln!(
            "interrupted: run {} keeps what it measured and is marked incomplete ({})",
            outcome.run_id,
            args.db.display()
        );
        return Ok(crate::signals::INTERRUPTED);
    }
    outln!(
        "run {} stored in {}{}",
        outcome.run_id,
        args.db.display(),
        if outcome.failed_steps > 0 {
            format!(" ({} steps failed)", outcome.failed_steps)
        } else {
            String::new()
        }
    )?;
    if outcome.failed_steps > 0 {
        return Ok(1);
    }
    if progress.gates.crossed_steps > 0 {
        let n = progress.gates.crossed_steps;
        eprintln!(
            "{n} step{} crossed a threshold of [thresholds]",
            if n == 1 { "" } else { "s" }
        );
        return Ok(crate::load_thresholds::CROSSED);
    }
    if args.strict {
        // Sweep-level verdicts are set after the last step: read them back.
        let run = store.load_run(outcome.run_id)?;
        let suspect = run.steps.iter().filter(|s| !s.verdict.is_valid()).count();
        if suspect > 0 {
            eprintln!(
                "--strict: {suspect} of {} steps are suspect (see `throng report`)",
                run.steps.len()
            );
            return Ok(1);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Latency, ReasonCode, RoundRecord, ServerUsage, Summary};

    fn round(completed: u64, min_us: u64, max_us: u64, cpu_s: f64) -> RoundRecord {
        RoundRecord {
            summary: Summary {
                completed,
                requests_per_sec: completed as f64 / 2.0,
                mb_per_sec: 210.0,
                in_flight_at_end: 4,
                latency_us: Latency {
                    count: completed,
                    min: min_us,
                    p99: max_us,
                    max: max_us,
                    ..Latency::default()
                },
                ..Summary::default()
            },
            server: ServerUsage {
                cpu_user_s: cpu_s,
                wall_s: 2.0,
                rss_peak_bytes: 9 << 20,
                ..ServerUsage::default()
            },
            ..RoundRecord::default()
        }
    }

    #[test]
    fn a_step_line_says_whose_cpu_and_leaves_empty_rounds_out_of_latency() {
        let mut s = StepRecord::new("nginx", 1, "large", 4);
        s.rounds = vec![
            round(20, 98_000, 290_000, 2.18),
            round(0, 0, 0, 2.2),
            round(20, 99_000, 305_900, 2.0),
        ];
        s.throughput = throng_stats::estimate(&[10.0, 0.0, 10.0]);
        let line = step_line(&s);
        assert!(
            line.starts_with("nginx            1 core  large       c=4    "),
            "{line}"
        );
        // 2.18 + 2.2 + 2.0 CPU seconds over the rounds' 6 s together.
        assert!(
            line.contains("server cpu 1.06 cores, rss   9.0 MiB"),
            "{line}"
        );
        assert!(line.contains("3 rounds (1 empty)  valid"), "{line}");
        assert!(
            line.ends_with("210.0 MB/s, transfer 98.0–305.9 ms"),
            "{line}"
        );
        s.rounds = vec![round(0, 0, 0, 2.0)];
        let line = step_line(&s);
        assert!(line.contains("p99         –"), "{line}");
        assert!(
            line.ends_with("210.0 MB/s, no transfer completed"),
            "{line}"
        );
    }

    #[test]
    fn a_sweeps_revised_steps_are_told_in_a_line_a_verdict() {
        let why = "its launches differed by 8%";
        let step = |server: &str, c: u32, code: Option<ReasonCode>| {
            let mut s = StepRecord::new(server, 1, "tiny", c);
            if let Some(code) = code {
                s.verdict.push(code, why);
            }
            s
        };
        let differ = Some(ReasonCode::LaunchesDiffer);
        let mut elsewhere = step("nginx", 200, differ);
        elsewhere
            .verdict
            .push(ReasonCode::BottleneckElsewhere, "flat");
        let lines = revised_lines(&[
            step("nginx", 10, differ),
            step("nginx", 50, differ),
            elsewhere,
            step("nginx", 400, differ),
            step("h2o", 10, differ),
        ]);
        let head = |server: &str, levels: &str| {
            format!("{server:<16} 1 core  tiny        c={levels:<5} verdict now suspect: ")
        };
        assert_eq!(
            lines,
            [
                format!(
                    "{}launches_differ, from its whole sweep: launches_differ: {why}",
                    head("nginx", "10, 50")
                ),
                format!(
                    "{}launches_differ, bottleneck_elsewhere, from its whole sweep: \
                     launches_differ: {why}; bottleneck_elsewhere: flat",
                    head("nginx", "200")
                ),
                format!(
                    "{}launches_differ, from its whole sweep: launches_differ: {why}",
                    head("nginx", "400")
                ),
                format!(
                    "{}launches_differ, from its whole sweep: launches_differ: {why}",
                    head("h2o", "10")
                ),
            ]
        );
        assert_eq!(revised_lines(&[]), Vec::<String>::new());
    }

    #[test]
    fn the_estimate_is_a_range_of_whole_minutes() {
        let e = |min_s, max_s| duration_range(&RunEstimate { min_s, max_s });
        assert_eq!(e(105.0, 148.0), "about 2–3 min");
        assert_eq!(e(120.0, 120.0), "about 2 min");
        assert_eq!(e(20.0, 50.0), "under a minute");
        assert_eq!(e(20.0, 70.0), "about 1–2 min");
    }

    #[test]
    fn a_comparison_line_says_over_how_many_runs_its_next_run_range_was_drawn() {
        let mut c = Comparison {
            interval: throng_model::IntervalKind::Launches,
            launch_ratios: vec![0.17, 0.18, 0.17],
            next_run: Some([0.121, 0.191]),
            next_run_runs: Some(5),
            runs_differ: true,
            ..throng_testkit::model::comparison(
                "nginx",
                "apache2-event",
                None,
                [0.172, 0.168, 0.177],
                48,
                throng_model::Decision::Lower,
            )
        };
        assert_eq!(
            comparison_line(&c),
            "apache2-event/nginx 1 core tiny all levels: 0.172× (95% CI 0.168–0.177, next run \
             0.121–0.191 over 5 runs, 48 pairs over 3 launches) lower"
        );
        c.next_run_runs = Some(1);
        assert!(comparison_line(&c).contains("next run 0.121–0.191, 48 pairs"));
    }
}
