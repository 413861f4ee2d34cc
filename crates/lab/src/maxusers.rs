//! Seed 003/004's "max users": the highest concurrency at which a server
//! still answers every request, without errors and with p99 under a
//! patience limit (3 s by default, httperf's timeout in seed 003). The
//! sweep's own levels come first; when the sweep never broke the server,
//! the search keeps doubling the concurrency past it until something
//! breaks or the cap (open files, the study's limit) is reached.

use std::time::Duration;

use throng_engine::{Control, LoadSpec, Order, Stop, Summary, Target};
use throng_model::{MaxUsers, StepRecord, StepStatus};

/// Default patience: a request slower than this is a user gone.
pub const DEFAULT_PATIENCE_S: f64 = 3.0;

/// What broke a level, or `None` when it was good.
pub fn broke_by(s: &Summary, patience: Duration) -> Option<String> {
    if s.errors_total > 0 {
        let mut kinds: Vec<(u64, &'static str)> = Vec::new();
        for (k, n) in &s.errors {
            if *n == 0 {
                continue;
            }
            let what = match k.as_str() {
                "connect_refused" => "refusals",
                "reset" | "closed" | "write" | "read" => "resets",
                "timeout" | "connect_timeout" => "timeouts",
                "addr_unavailable" => "client ports exhausted",
                "status" => "error statuses",
                "size_mismatch" | "checksum_mismatch" => "wrong bodies",
                _ => "other errors",
            };
            match kinds.iter_mut().find(|(_, w)| *w == what) {
                Some(e) => e.0 += n,
                None => kinds.push((*n, what)),
            }
        }
        kinds.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let list: Vec<String> = kinds.iter().map(|(n, w)| format!("{n} {w}")).collect();
        return Some(list.join(", "));
    }
    if s.completed == 0 {
        return Some("no response".to_string());
    }
    let p99 = Duration::from_micros(s.latency_us.p99);
    if p99 >= patience {
        return Some(format!(
            "p99 {:.2} s over the {:.1} s patience",
            p99.as_secs_f64(),
            patience.as_secs_f64()
        ));
    }
    None
}

/// Why a sweep step is not good, or `None` when it is.
fn step_broke_by(st: &StepRecord, patience: Duration) -> Option<String> {
    match st.status {
        StepStatus::Ok => {}
        StepStatus::Failed => {
            return Some(
                st.failure
                    .clone()
                    .unwrap_or_else(|| "the server failed".to_string()),
            )
        }
        // Not measured: says nothing either way.
        StepStatus::Skipped | StepStatus::Unsupported => return None,
    }
    let mut worst = None;
    for r in &st.rounds {
        if let Some(w) = broke_by(&r.summary, patience) {
            worst = Some(w);
            if r.summary.errors_total > 0 {
                break;
            }
        }
    }
    if worst.is_none()
        && st
            .p99_us()
            .is_some_and(|p| p >= patience.as_micros() as u64)
    {
        worst = Some(format!(
            "median p99 over the {:.1} s patience",
            patience.as_secs_f64()
        ));
    }
    worst
}

/// The sweep's answer: the highest good level below the first broken one,
/// and the broken one with what broke it.
pub fn from_sweep(
    steps: &[StepRecord],
    patience: Duration,
) -> (Option<u32>, Option<(u32, String)>) {
    let mut measured: Vec<&StepRecord> = steps
        .iter()
        .filter(|s| s.status == StepStatus::Failed || !s.rounds.is_empty())
        .filter(|s| s.status != StepStatus::Skipped && s.status != StepStatus::Unsupported)
        .collect();
    measured.sort_by_key(|s| s.concurrency);
    let mut good = None;
    for s in measured {
        match step_broke_by(s, patience) {
            None => good = Some(s.concurrency),
            Some(why) => return (good, Some((s.concurrency, why))),
        }
    }
    (good, None)
}

/// How the search loads the server beyond the sweep.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    pub patience: Duration,
    /// Highest concurrency tried.
    pub cap: u32,
    pub round_s: f64,
    pub warmup_s: f64,
    pub client_cpus: Vec<usize>,
    pub random_order: bool,
    pub client_naps: bool,
}

/// The open-file limit bounds the client's connections: one descriptor
/// each, with room for the rest of the process.
/// Processes the kernel's OOM killer has killed since boot
/// (`oom_kill` in /proc/vmstat), or `None` where the kernel does not say.
pub fn oom_kills() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/vmstat").ok()?;
    oom_kills_in(&text)
}

fn oom_kills_in(vmstat: &str) -> Option<u64> {
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

/// How a server that exited during a level is described: running out of
/// memory is the classic way a server stops taking users (seed 004), and the
/// OOM killer's counter moving while the level ran says it was that.
fn exit_cause(exit: &str, oom_before: Option<u64>, oom_after: Option<u64>) -> String {
    match (oom_before, oom_after) {
        (Some(a), Some(b)) if b > a => {
            format!("memory: the server {exit}, killed by the kernel's OOM killer")
        }
        _ => format!("the server {exit}"),
    }
}

pub fn cap_by_open_files(cap: u32) -> u32 {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(s, _)| s)
        .unwrap_or(1024);
    cap.min(soft.saturating_sub(256).min(u32::MAX as u64) as u32)
        .max(1)
}

/// Steps concurrency up from the sweep until a level breaks. `exited`
/// says whether the server (or its backend) has gone, and how.
pub fn search(
    targets: &[Target],
    sweep: &[StepRecord],
    opts: &SearchOptions,
    control: &Control,
    exited: &mut dyn FnMut() -> Option<String>,
) -> MaxUsers {
    let (sweep_good, sweep_broke) = from_sweep(sweep, opts.patience);
    let mut m = MaxUsers {
        cores: sweep.first().map(|s| s.cores).unwrap_or(0),
        workload: sweep
            .first()
            .map(|s| s.workload.clone())
            .unwrap_or_default(),
        patience_s: opts.patience.as_secs_f64(),
        level: sweep_good,
        broke_at: None,
        broke_by: String::new(),
    };
    if let Some((at, why)) = sweep_broke {
        m.broke_at = Some(at);
        m.broke_by = why;
        return m;
    }
    let Some(highest) = sweep_good else {
        m.broke_by = "the sweep measured no level".to_string();
        return m;
    };
    let cap = opts.cap.max(highest);
    let mut level = highest.saturating_mul(2).min(cap);
    if level <= highest {
        m.broke_by = format!("no failure up to the cap of {cap}");
        return m;
    }
    loop {
        let oom_before = oom_kills();
        if let Some(e) = exited() {
            m.broke_at = Some(level);
            m.broke_by = format!("the server {e}");
            return m;
        }
        let mut spec = LoadSpec::new(targets.to_vec());
        spec.connections = level as usize;
        spec.threads = opts.client_cpus.len().clamp(1, level as usize);
        spec.cpus = opts.client_cpus.clone();
        spec.stop = Stop::Duration(Duration::from_secs_f64(opts.round_s));
        spec.warmup = Duration::from_secs_f64(opts.warmup_s);
        // Past the patience a request is a timeout: no need to wait longer.
        spec.timeout = opts.patience + Duration::from_secs(1);
        spec.order = if opts.random_order {
            Order::Random
        } else {
            Order::Sequential
        };
        spec.checksum = true;
        spec.seed = level as u64;
        spec.coalesce = opts.client_naps;
        let res = throng_engine::run(&spec, control);
        let why = match res {
            Err(e) => Some(format!("the load engine failed: {e}")),
            Ok(r) => match exited() {
                Some(e) => Some(exit_cause(&e, oom_before, oom_kills())),
                None => broke_by(&r.summary, opts.patience),
            },
        };
        match why {
            Some(w) => {
                m.broke_at = Some(level);
                m.broke_by = w;
                return m;
            }
            None => m.level = Some(level),
        }
        if level >= cap {
            m.broke_by = format!("no failure up to the cap of {cap}");
            return m;
        }
        level = level.saturating_mul(2).min(cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_model::{Latency, RoundRecord, Verdict};

    fn summary(errors: &[(&str, u64)], p99_us: u64) -> Summary {
        Summary {
            completed: 100,
            errors: errors.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            errors_total: errors.iter().map(|(_, n)| n).sum(),
            latency_us: Latency {
                p99: p99_us,
                ..Latency::default()
            },
            ..Summary::default()
        }
    }

    fn step(c: u32, s: Summary, status: StepStatus) -> StepRecord {
        StepRecord {
            server: "x".into(),
            cores: 1,
            workload: "tiny".into(),
            concurrency: c,
            status,
            failure: (status == StepStatus::Failed).then(|| "the server exited".to_string()),
            log_tail: None,
            server_cpus: vec![0],
            client_cpus: vec![1],
            shared_cores: false,
            throughput: Default::default(),
            rounds: if status == StepStatus::Failed {
                vec![]
            } else {
                vec![RoundRecord {
                    summary: s,
                    ..RoundRecord::default()
                }]
            },
            verdict: Verdict::valid(),
        }
    }

    const P: Duration = Duration::from_secs(3);

    #[test]
    fn what_broke_is_named_by_kind() {
        assert_eq!(broke_by(&summary(&[], 2_999_999), P), None);
        assert_eq!(
            broke_by(&summary(&[], 3_500_000), P).unwrap(),
            "p99 3.50 s over the 3.0 s patience"
        );
        assert_eq!(
            broke_by(
                &summary(&[("connect_refused", 7), ("reset", 2), ("closed", 3)], 10),
                P
            )
            .unwrap(),
            "7 refusals, 5 resets"
        );
        assert_eq!(
            broke_by(&summary(&[("timeout", 4)], 10), P).unwrap(),
            "4 timeouts"
        );
    }

    #[test]
    fn the_sweep_answers_when_it_broke_the_server() {
        let steps = [
            step(100, summary(&[], 1000), StepStatus::Ok),
            step(10, summary(&[], 1000), StepStatus::Ok),
            step(500, summary(&[("reset", 9)], 1000), StepStatus::Ok),
            step(1000, summary(&[], 1000), StepStatus::Ok),
        ];
        assert_eq!(
            from_sweep(&steps, P),
            (Some(100), Some((500, "9 resets".into())))
        );
        let failed = [
            step(10, summary(&[], 1000), StepStatus::Ok),
            step(20, Summary::default(), StepStatus::Failed),
        ];
        assert_eq!(
            from_sweep(&failed, P),
            (Some(10), Some((20, "the server exited".into())))
        );
        let clean = [step(10, summary(&[], 1000), StepStatus::Ok)];
        assert_eq!(from_sweep(&clean, P), (Some(10), None));
    }

    #[test]
    fn a_sweep_that_broke_needs_no_more_load() {
        let steps = [
            step(10, summary(&[], 1000), StepStatus::Ok),
            step(20, summary(&[], 4_000_000), StepStatus::Ok),
        ];
        let opts = SearchOptions {
            patience: P,
            cap: 1000,
            round_s: 1.0,
            warmup_s: 0.0,
            client_cpus: vec![],
            random_order: false,
            client_naps: true,
        };
        // No targets: any load would fail, so a result proves none ran.
        let m = search(&[], &steps, &opts, &Control::new(), &mut || None);
        assert_eq!(m.level, Some(10));
        assert_eq!(m.broke_at, Some(20));
        assert_eq!(m.broke_by, "p99 4.00 s over the 3.0 s patience");
        assert_eq!(
            (m.cores, m.workload.as_str(), m.patience_s),
            (1, "tiny", 3.0)
        );
    }

    #[test]
    fn the_open_file_limit_bounds_the_cap() {
        let (soft, _) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
        let bound = soft.saturating_sub(256).max(1) as u32;
        assert_eq!(cap_by_open_files(u32::MAX), bound);
        assert_eq!(cap_by_open_files(1), 1);
    }

    #[test]
    fn an_oom_kill_during_the_level_is_named_memory() {
        assert_eq!(oom_kills_in("pgfault 12\noom_kill 3\nother 1\n"), Some(3));
        assert_eq!(oom_kills_in("pgfault 12\n"), None);
        assert_eq!(
            exit_cause("exited (signal 9)", Some(3), Some(4)),
            "memory: the server exited (signal 9), killed by the kernel's OOM killer"
        );
        assert_eq!(
            exit_cause("exited (signal 9)", Some(3), Some(3)),
            "the server exited (signal 9)"
        );
        assert_eq!(
            exit_cause("exited (status 1)", None, None),
            "the server exited (status 1)"
        );
    }
}
