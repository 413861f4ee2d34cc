//! `throng lab STUDY`: runs a study and shows its progress; the measuring
//! and storing is the lab crate's, the printing is here.

use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use throng_lab::{Event, Interrupt, LabOptions, Observer, Recipes, Store, Study};
use throng_model::{StepRecord, StepStatus};

#[derive(clap::Args)]
pub struct LabArgs {
    /// A built-in study (quick, static-sweep, acme) or a study TOML file.
    pub study: String,
    /// SQLite database the run is stored in.
    #[arg(long, default_value = "throng.db")]
    pub db: PathBuf,
    /// Folder of recipe TOML files that add to or replace the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub recipes: Option<PathBuf>,
    /// Where servers' run directories are made (default: the temp dir).
    #[arg(long, value_name = "DIR")]
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
}

struct Progress {
    bar: ProgressBar,
    quiet: bool,
    min_rounds: u64,
    steps_total: u64,
    steps_done: u64,
    rounds: u64,
}

pub fn step_line(s: &StepRecord) -> String {
    let head = format!(
        "{:<16} {:>2} cores {:<11} c={:<5}",
        s.server, s.cores, s.workload, s.concurrency
    );
    match s.status {
        StepStatus::Ok => {
            let t = &s.throughput;
            let ci = (t.ci_high - t.ci_low) / 2.0;
            let p99 = s
                .p99_us()
                .map(|p| format!("{:.2} ms", p as f64 / 1000.0))
                .unwrap_or_default();
            let cpu = s.median_of(|r| r.server.cpu_utilisation()).unwrap_or(0.0);
            let rss = s
                .rounds
                .iter()
                .map(|r| r.server.rss_peak_bytes)
                .max()
                .unwrap_or(0);
            // A 21 MB transfer is measured by its bandwidth and by how long
            // one transfer takes at best and at worst.
            let large = if s.workload == "large" {
                let mb = s.median_of(|r| r.summary.mb_per_sec).unwrap_or(0.0);
                let min = s
                    .rounds
                    .iter()
                    .map(|r| r.summary.latency_us.min)
                    .min()
                    .unwrap_or(0);
                let max = s
                    .rounds
                    .iter()
                    .map(|r| r.summary.latency_us.max)
                    .max()
                    .unwrap_or(0);
                format!(
                    "  {mb:.1} MB/s, transfer {:.1}–{:.1} ms",
                    min as f64 / 1000.0,
                    max as f64 / 1000.0
                )
            } else {
                String::new()
            };
            format!(
                "{head} {:>10.0} req/s ± {:<5.1}% p99 {:>9}  cpu {:>4.0}%  rss {:>9}  {} rounds  {}{large}",
                t.mean,
                if t.mean > 0.0 { ci / t.mean * 100.0 } else { 0.0 },
                p99,
                cpu * 100.0,
                throng_report::figures::mib(rss),
                t.n,
                s.verdict.label()
            )
        }
        status => {
            let word = match status {
                StepStatus::Failed => "FAILED",
                StepStatus::Skipped => "skipped",
                _ => "unsupported",
            };
            let why = s
                .failure
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("");
            format!("{head} {word}: {why}")
        }
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

    fn line(&self, text: String) {
        if self.quiet {
            println!("{text}");
        } else {
            self.bar.println(text);
        }
    }
}

impl Observer for Progress {
    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Planned {
                run_id,
                steps,
                estimated_s,
            } => {
                self.steps_total = steps;
                self.bar.set_length(steps * self.min_rounds);
                self.line(format!(
                    "run {run_id}: {steps} steps, about {:.0} min",
                    (estimated_s / 60.0).max(1.0)
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
            }
        }
    }
}

pub fn run(args: LabArgs) -> anyhow::Result<u8> {
    let recipes = Recipes::load(args.recipes.as_deref())?;
    let study = Study::load(&args.study, &recipes)?;
    // Before the database is created: a study that cannot start leaves
    // nothing behind.
    study.check_installed()?;
    let mut store = Store::open(&args.db)?;
    let interrupt = Interrupt::new();
    let trigger = interrupt.clone();
    crate::signals::on_interrupt(move || trigger.trigger())?;
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
        quiet: args.quiet,
        min_rounds: study.precision.min_rounds as u64,
        steps_total: 0,
        steps_done: 0,
        rounds: 0,
    };
    let opts = LabOptions {
        workdir: args.workdir,
        keep_workdir: args.keep_workdir,
    };
    let result = throng_lab::run_study(&study, &mut store, &opts, &mut progress, &interrupt);
    bar.finish_and_clear();
    let outcome = result?;
    if interrupt.is_set() {
        eprintln!(
            "interrupted: run {} keeps what it measured and is marked incomplete ({})",
            outcome.run_id,
            args.db.display()
        );
        return Ok(crate::signals::INTERRUPTED);
    }
    println!(
        "run {} stored in {}{}",
        outcome.run_id,
        args.db.display(),
        if outcome.failed_steps > 0 {
            format!(" ({} steps failed)", outcome.failed_steps)
        } else {
            String::new()
        }
    );
    if outcome.failed_steps > 0 {
        return Ok(1);
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
