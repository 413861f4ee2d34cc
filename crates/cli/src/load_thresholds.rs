//! `--threshold` and `--junit`: limits on what a run measured, read once
//! before it starts, and the lines and the JUnit report that say which
//! were crossed. `throng lab` words a study's the same way.

use std::path::{Path, PathBuf};

use anyhow::Result;
use throng_load::junit::Case;
use throng_load::thresholds::{Threshold, ThresholdError};
use throng_model::ThresholdCheck;

/// The exit code of a run that crossed a threshold, as k6's.
pub const CROSSED: u8 = 99;

#[derive(clap::Args, Debug, Default)]
pub struct ThresholdArgs {
    /// A limit the run must keep, such as 'p99<50ms', 'errors<0.1%',
    /// 'rps>=10k', 'first_byte.p90<10ms' (repeatable; figures and units:
    /// README "Thresholds"). A crossed one is printed with its figure and
    /// throng exits with 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Stop the run as soon as a threshold is crossed, judged once a
    /// second from the totals it keeps per second: completed or errors
    /// under a limit, errors as a share (%), rps and mb_per_sec. Others
    /// are refused, as is --hosts: an agent reports its totals only when
    /// its share ends, so no second of theirs can be judged during it.
    #[arg(long, requires = "thresholds", conflicts_with = "hosts")]
    pub threshold_abort: bool,
    /// Write a JUnit XML report, one test case per --threshold, for CI.
    #[arg(long, value_name = "FILE", value_parser = crate::args::out_path,
          requires = "thresholds")]
    pub junit: Option<PathBuf>,
}

/// The expressions read, or the first bad one in one line.
pub fn parse(a: &ThresholdArgs) -> Result<Vec<Threshold>> {
    let read = a
        .thresholds
        .iter()
        .map(|t| Threshold::parse(t).map_err(|e| refused("--threshold", t, &e)))
        .collect::<Result<Vec<_>>>()?;
    if let Some(f) = &a.junit {
        check_writable("--junit", f)?;
    }
    if let Some(t) = read
        .iter()
        .find(|t| a.threshold_abort && !t.judged_running())
    {
        anyhow::bail!(
            "--threshold-abort: {:?} cannot be judged while the run goes on; only completed or \
             errors under a limit, errors as a share (%), rps and mb_per_sec can",
            t.expression
        );
    }
    Ok(read)
}

/// A bad expression, named by where it came from.
pub fn refused(origin: &str, text: &str, e: &ThresholdError) -> anyhow::Error {
    anyhow::anyhow!("{origin} {text:?}: {e}")
}

/// A report that could not be written is said before the load, not after
/// it has run: its folder must be there.
pub fn check_writable(option: &str, file: &Path) -> Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "{option} {}: the folder {} does not exist",
            file.display(),
            dir.display()
        );
    }
    Ok(())
}

/// `--threshold-abort`'s watch over a running load.
pub struct Abort {
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Option<String>>,
}

/// With `--threshold-abort`, a thread that judges the run's totals once a
/// second of its measured phase and stops it at the first crossing;
/// `control` must be [`throng_engine::Control::watching`].
pub fn watch(
    a: &ThresholdArgs,
    ts: &[Threshold],
    control: &throng_engine::Control,
    warmup: std::time::Duration,
) -> Option<Abort> {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::{Duration, Instant};
    if !a.threshold_abort {
        return None;
    }
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let (ts, control) = (ts.to_vec(), control.clone());
    let start = Instant::now() + warmup;
    let thread = std::thread::spawn(move || {
        // Bounded by the run: its end drops the sender.
        for second in 1u64.. {
            // A little past the second, so each thread has turned to the
            // next and published the one before.
            let at = start + Duration::from_secs(second) + Duration::from_millis(100);
            match finished.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return None,
            }
            let t = control.running()?;
            let so_far = throng_load::thresholds::SoFar {
                seconds: second,
                completed: t.completed,
                errors: t.errors,
                bytes_read: t.bytes_read,
            };
            for th in &ts {
                if let Some(c) = th.judge_so_far(&so_far).filter(|c| !c.passed) {
                    control.stop();
                    return Some(format!(
                        "{} after {second} s: the run was stopped there (--threshold-abort)",
                        crossed_line(th, &c)
                    ));
                }
            }
        }
        None
    });
    Some(Abort { done, thread })
}

impl Abort {
    /// The run has ended: the line of the crossing that stopped it, if one did.
    pub fn finish(self) -> Option<String> {
        drop(self.done);
        self.thread.join().ok().flatten()
    }
}

/// "threshold p99<50ms crossed: p99 was 73.213 ms".
pub fn crossed_line(t: &Threshold, c: &ThresholdCheck) -> String {
    let was = match c.figure {
        Some(f) => format!("{} was {}", t.name(), with_unit(f, t.unit_suffix())),
        None if t.of_responses() => "no response was measured".to_string(),
        None => "no request was sent".to_string(),
    };
    format!("threshold {} crossed: {was}", t.expression)
}

/// A figure as judged: at most three decimals, none for a whole number.
fn with_unit(f: f64, unit: &str) -> String {
    let mut n = format!("{f:.3}");
    if n.contains('.') {
        n = n.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    match unit {
        "" => n,
        "%" | "k" => format!("{n}{unit}"),
        u => format!("{n} {u}"),
    }
}

/// The summary's lines for its thresholds: each one that held, then,
/// last and unindented as warnings are, each one crossed with its figure.
pub fn lines(ts: &[Threshold], checks: &[ThresholdCheck]) -> String {
    let mut o = String::new();
    let judged = || ts.iter().zip(checks);
    for (t, c) in judged().filter(|(_, c)| c.passed) {
        let f = c
            .figure
            .map_or("-".into(), |f| with_unit(f, t.unit_suffix()));
        o.push_str(&format!(
            "  threshold    {} held: {} was {f}\n",
            t.expression,
            t.name()
        ));
    }
    for (t, c) in judged().filter(|(_, c)| !c.passed) {
        o.push_str(&crossed_line(t, c));
        o.push('\n');
    }
    o
}

/// The test cases of one judged run (or step), in order.
pub fn cases(class: &str, ts: &[Threshold], checks: &[ThresholdCheck]) -> Vec<Case> {
    ts.iter()
        .zip(checks)
        .map(|(t, c)| Case {
            class: class.to_string(),
            name: t.expression.clone(),
            failure: (!c.passed).then(|| crossed_line(t, c)),
        })
        .collect()
}

/// A load's thresholds said after its summary (with `--json`, the
/// crossed ones on stderr, since stdout holds the document alone) and
/// written to `--junit`; whether any was crossed.
pub fn report(
    a: &ThresholdArgs,
    ts: &[Threshold],
    s: &throng_model::Summary,
    json: bool,
) -> Result<bool> {
    if json {
        for (t, c) in ts.iter().zip(&s.thresholds).filter(|(_, c)| !c.passed) {
            eprintln!("{}", crossed_line(t, c));
        }
    } else {
        out!("{}", lines(ts, &s.thresholds))?;
    }
    if let Some(f) = &a.junit {
        let cases = cases("throng.load", ts, &s.thresholds);
        write_junit(f, "throng load", &cases, s.duration_s)?;
    }
    Ok(s.thresholds.iter().any(|c| !c.passed))
}

/// The JUnit report written whole or not at all.
pub fn write_junit(file: &Path, suite: &str, cases: &[Case], time_s: f64) -> Result<()> {
    let xml = throng_load::junit::document(suite, cases, time_s);
    crate::args::write_whole(file, xml.as_bytes())
        .map_err(|e| anyhow::anyhow!("--junit {}: cannot write it: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crossed_threshold_says_its_figure_in_its_unit() {
        let t = Threshold::parse("p99<50ms").unwrap();
        let c = ThresholdCheck {
            expression: t.expression.clone(),
            figure: Some(73.2),
            passed: false,
        };
        assert_eq!(
            crossed_line(&t, &c),
            "threshold p99<50ms crossed: p99 was 73.2 ms"
        );
        let t = Threshold::parse("completed < 1").unwrap();
        let c = t.judge(&throng_model::Summary {
            completed: 200,
            ..Default::default()
        });
        assert_eq!(
            crossed_line(&t, &c),
            "threshold completed<1 crossed: completed was 200"
        );
        let t = Threshold::parse("errors<0.1%").unwrap();
        let c = t.judge(&throng_model::Summary::default());
        assert_eq!(
            crossed_line(&t, &c),
            "threshold errors<0.1% crossed: no request was sent"
        );
        assert_eq!(with_unit(10.2345, "k"), "10.235k");
        assert_eq!(with_unit(0.5, "%"), "0.5%");
    }
}
