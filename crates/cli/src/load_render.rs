//! A load's summary as people read it on a terminal: the headline, the
//! latency and connection lines, the timeline, and the verdict; kept apart
//! from the options and the run, which `throng load` and `throng load
//! --hosts` share with it.

use throng_engine::{LoadSpec, Stop};
use throng_model::{ErrorKind, IoBackend, Latency, Summary, Verdict};

use crate::fmt::{human_bytes, human_count, human_us};

/// The verdict's lines. An interrupted run is never called valid: its
/// checks only saw the part that ran.
pub fn render_verdict(v: &Verdict, interrupted: bool) -> String {
    if v.is_valid() {
        return if interrupted {
            "  verdict      INTERRUPTED: no check fired on the part that ran, \
             which is not the run asked for\n"
                .to_string()
        } else {
            "  verdict      valid: no check fired\n".to_string()
        };
    }
    let mut o = String::from(if interrupted {
        "  verdict      SUSPECT, and INTERRUPTED\n"
    } else {
        "  verdict      SUSPECT\n"
    });
    for r in &v.reasons {
        o.push_str(&format!("    {}: {}\n", r.code, r.message));
    }
    o
}

fn latency_line(l: &Latency) -> String {
    format!(
        "p50 {}  p75 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}  (mean {} ± {})",
        human_us(l.p50 as f64),
        human_us(l.p75 as f64),
        human_us(l.p90 as f64),
        human_us(l.p99 as f64),
        human_us(l.p999 as f64),
        human_us(l.p9999 as f64),
        human_us(l.max as f64),
        human_us(l.mean),
        human_us(l.stdev),
    )
}

/// A TLS handshake finished and its ALPN chose other than h2.
fn h1_chosen(s: &Summary) -> bool {
    s.tls
        .as_ref()
        .is_some_and(|t| t.version.is_some() && !matches!(t.alpn.as_deref(), Some("h2" | "h3")))
}

/// The first line of the summary: what was loaded, and how.
fn headline(o: &mut String, spec: &LoadSpec, s: &Summary) {
    use std::fmt::Write;
    let what = if spec.targets.len() == 1 {
        spec.targets[0].url.clone()
    } else {
        format!("{} URLs", spec.targets.len())
    };
    let model = match spec.rate {
        Some(r) if spec.ramp.is_some() => {
            format!(
                "open model in stages, {} req/s on average",
                human_count(r as u64)
            )
        }
        Some(r) => format!("open model at {} req/s", human_count(r as u64)),
        None => "closed model".to_string(),
    };
    let model = match spec.tick {
        Some(t) if spec.rate.is_some() => format!(
            "{model}, sent in ticks of {}",
            human_us(t.as_secs_f64() * 1e6)
        ),
        _ => model,
    };
    let _ = writeln!(
        o,
        "throng load {what}: {model}, {} connection{}{}{}{}, {} thread{}",
        spec.connections,
        if spec.connections == 1 { "" } else { "s" },
        if spec.keep_alive {
            ""
        } else {
            " (new connection per request)"
        },
        crate::load_conn::headline(spec),
        if spec.pipeline > 1 {
            format!(", pipeline {}", spec.pipeline)
        } else if spec.http.streams > 1 && !h1_chosen(s) {
            format!(", {} streams each", spec.http.streams)
        } else if spec.http.streams > 1 {
            // ALPN chose HTTP/1.1: the streams asked for were never there.
            format!(
                ", {} streams asked but HTTP/1.1 spoken: one request at a time each",
                spec.http.streams
            )
        } else {
            String::new()
        },
        s.threads,
        if s.threads == 1 { "" } else { "s" },
    );
}

/// The human summary. Everything the JSON has that a reader needs to judge
/// the numbers is here too; warnings come last and loud.
pub fn render(spec: &LoadSpec, s: &Summary, timeline: bool) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    if let Some(users) = &spec.users {
        let _ = writeln!(o, "{}", crate::load_sessions::headline(spec, users, s));
    } else {
        headline(&mut o, spec, s);
    }
    if s.interrupted {
        let _ = writeln!(o, "  interrupted  {}", interrupted_at(spec, s));
    }
    if let Some(w) = &s.warmup {
        let _ = writeln!(
            o,
            "  warmup       {:.1} s: {} responses, {} errors (not counted below)",
            w.duration_s,
            human_count(w.completed),
            human_count(w.errors)
        );
    }
    let _ = writeln!(
        o,
        "  completed    {} responses in {:.2} s: {:.1} req/s, {}/s read",
        human_count(s.completed),
        s.duration_s,
        s.requests_per_sec,
        human_bytes(s.mb_per_sec * 1e6)
    );
    let label = if s.rate.is_some() {
        "latency*"
    } else {
        "latency"
    };
    let _ = writeln!(o, "  {label:<12} {}", latency_line(&s.latency_us));
    if let Some(f) = s.first_byte_us.as_ref().filter(|f| f.count > 0) {
        let _ = writeln!(
            o,
            "  first byte   p50 {}  p99 {}  max {}  (from each request's send to its response's first byte)",
            human_us(f.p50 as f64),
            human_us(f.p99 as f64),
            human_us(f.max as f64),
        );
    }
    if let Some(u) = &s.latency_uncorrected_us {
        let _ = writeln!(o, "  uncorrected  {}", latency_line(u));
        let _ = writeln!(
            o,
            "               * from each request's intended send time (no coordinated omission)"
        );
    }
    o.push_str(&crate::load_sessions::lines(s));
    o.push_str(&crate::load_tls::line(s));
    o.push_str(&crate::load_h2::line(s));
    o.push_str(&crate::load_h3::line(s));
    if let Some(r) = &s.rate {
        let _ = writeln!(
            o,
            "  schedule     {} sends late by > 1 ms; lateness p50 {} p99 {} max {}{}",
            human_count(r.late_sends),
            human_us(r.lateness_us.p50 as f64),
            human_us(r.lateness_us.p99 as f64),
            human_us(r.lateness_us.max as f64),
            if r.unsent > 0 {
                format!("; {} due but never sent", human_count(r.unsent))
            } else {
                String::new()
            },
        );
    }
    let statuses: Vec<String> = s
        .status
        .iter()
        .map(|(k, v)| format!("{k}: {}", human_count(*v)))
        .collect();
    let _ = writeln!(
        o,
        "  status       {}",
        if statuses.is_empty() {
            "none".to_string()
        } else {
            statuses.join(", ")
        }
    );
    let errs: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| s.error_count(**k) > 0)
        .map(|k| format!("{} {}", k.name(), human_count(s.error_count(*k))))
        .collect();
    let _ = writeln!(
        o,
        "  errors       {}",
        if errs.is_empty() {
            "none".to_string()
        } else {
            format!("{} ({})", human_count(s.errors_total), errs.join(", "))
        }
    );
    let c = &s.connections;
    let _ = write!(
        o,
        "  connections  {} requested, {} established, {} reconnects",
        c.requested,
        c.established,
        human_count(c.reconnects)
    );
    if !spec.keep_alive {
        let _ = write!(
            o,
            "; {:.1} conn/s, connect p50 {} p99 {}",
            c.per_sec,
            human_us(c.connect_time_us.p50 as f64),
            human_us(c.connect_time_us.p99 as f64)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  transfer     {} read, {} written, {} of bodies",
        human_bytes(s.bytes_read as f64),
        human_bytes(s.bytes_written as f64),
        human_bytes(s.body_bytes as f64)
    );
    let _ = write!(o, "  in flight    {} at the end", s.in_flight_at_end);
    if s.resent > 0 {
        let _ = write!(
            o,
            "; {} sent again after their connection closed unanswered (the server may have served both copies)",
            human_count(s.resent)
        );
    }
    o.push('\n');
    let cpu = s.client_cpu_s.user + s.client_cpu_s.sys;
    let per_response = |cpu: f64| {
        if s.completed > 0 {
            human_us(cpu * 1e6 / s.completed as f64)
        } else {
            "-".into()
        }
    };
    // A thread that spun was busy by choice: its work is what is left.
    let worked = if s.client_cpu_s.spun > 0.0 {
        format!(
            " ({} less the time spun)",
            per_response((cpu - s.client_cpu_s.spun).max(0.0))
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "  client CPU   user {:.2} s, sys {:.2} s, waited {:.2} s for a CPU: {}, {} per response{worked}, \
         on {}",
        s.client_cpu_s.user,
        s.client_cpu_s.sys,
        s.client_cpu_s.runqueue,
        cpu_share(cpu, s.duration_s, s.threads),
        per_response(cpu),
        match s.io {
            Some(IoBackend::Uring) => "io_uring",
            Some(IoBackend::Ppoll) => "ppoll (the QUIC loop)",
            _ => "epoll",
        },
    );
    let waits = s.client_spins.unwrap_or_default();
    let answered = if waits.waits > 0 {
        format!(
            ", {:.0}% of them ended by one",
            waits.answered as f64 * 100.0 / waits.waits as f64
        )
    } else {
        String::new()
    };
    // A spin is worth its CPU only where that CPU is the client's own.
    let shared = if s.local_server.as_ref().is_some_and(|l| l.shared_cores) {
        "; on CPUs the server runs on too, it took time the server could have used"
    } else {
        ""
    };
    if let Some(spin) = spec.spin {
        let _ = writeln!(
            o,
            "  spin         a thread looks for responses for up to {} before it sleeps: {} waits \
             spun{answered}, {:.2} s in all{shared}",
            human_us(spin.as_secs_f64() * 1e6),
            human_count(waits.waits),
            s.client_cpu_s.spun,
        );
    } else if s.coalesce {
        // On the ring a nap is a count of answers, not a time (the
        // engine's driver/nap.rs).
        let d = spec.nap_divisor;
        let how = if s.io == Some(IoBackend::Uring) {
            format!("waits for as many as 1/{d} of the recent latency brings (when that is more than one)")
        } else {
            format!("looks for them at most once per 1/{d} of the recent latency")
        };
        let _ = writeln!(
            o,
            "  naps         {} before waiting for responses: a thread {how}, so it takes them together",
            human_count(s.client_naps),
        );
    } else if spec.rate.is_none() && spec.users.is_none() {
        let _ = writeln!(
            o,
            "  naps         none: each thread waits for responses as soon as none is ready"
        );
    }
    // A schedule's waits spun by the engine's own measure (`--spin` is
    // the closed model's, said above).
    if let (None, Some(sleep), true) = (spec.spin, s.client_sleep, waits.waits > 0) {
        let _ = writeln!(
            o,
            "  spin         a sleep costs a thread here {} of CPU (measured as it started) and ends \
             about {} late (learnt from its sleeps), so a wait for the schedule's next instant is \
             spun where that costs less, and a longer one wakes that much early and spins the \
             rest: {} waits spun, {:.0}% of them ended by a response, {:.2} s in all{shared}",
            human_us(sleep.cpu_us),
            human_us(sleep.late_us),
            human_count(waits.waits),
            waits.answered as f64 * 100.0 / waits.waits as f64,
            s.client_cpu_s.spun,
        );
    }
    let depth = spec.pipeline.max(spec.http.streams).max(1);
    let hold = s.client_hold_us.zip(s.client_held_connections);
    if let Some((hold_us, held)) = hold {
        let conns = s.connections.requested;
        // With several requests in flight a connection, what an answer
        // frees is one of its places, refilled with others.
        let (next, who) = if depth == 1 {
            (
                "its connection's next request",
                format!("{held:.1} of {conns} connections"),
            )
        } else {
            (
                "the request that took its place",
                format!("{held:.1} places (of up to {depth} on each of {conns} connections)"),
            )
        };
        let _ = writeln!(
            o,
            "  client hold  {} from a response to {next} on average: {who} waited on the \
             client, not the server",
            human_us(hold_us)
        );
    }
    o.push_str(&crate::load_server::line(s));
    if timeline && !s.timeline.is_empty() {
        let _ = writeln!(
            o,
            "  timeline (UTC)            responses   errors      read"
        );
        for r in &s.timeline {
            let _ = writeln!(
                o,
                "    {}  {:>10} {:>8} {:>9}{}",
                crate::fmt::utc(r.t_unix),
                r.completed,
                r.errors,
                human_bytes(r.bytes_read as f64),
                match (r.target, r.users_target) {
                    (Some(t), _) => format!("  of {t:.0} due"),
                    (None, Some(t)) =>
                        format!("  {} of {t} users active", r.users_active.unwrap_or(0)),
                    (None, None) => String::new(),
                }
            );
        }
    }
    for w in &s.warnings {
        let _ = writeln!(o, "WARNING: {}", crate::load_warnings::text(w));
    }
    o
}

/// How far an interrupted run got, against what was asked.
fn interrupted_at(spec: &LoadSpec, s: &Summary) -> String {
    let what = match spec.stop {
        Stop::Duration(d) if s.duration_s == 0.0 && s.warmup.is_some() => {
            format!(
                "during the warmup, before any of {}",
                seconds(d.as_secs_f64())
            )
        }
        Stop::Duration(d) => format!(
            "after {:.1} s of {}",
            s.duration_s,
            seconds(d.as_secs_f64())
        ),
        Stop::Requests(n) => format!(
            "after {} of {} requests",
            human_count(s.requests_ended()),
            human_count(n)
        ),
    };
    format!("{what}: the figures cover only the part that ran")
}

/// Seconds as asked for: one decimal, none for whole seconds.
fn seconds(x: f64) -> String {
    let t = format!("{x:.1}");
    format!("{} s", t.strip_suffix(".0").unwrap_or(&t))
}

/// CPU seconds over the measured phase, as a share of one core; with
/// several threads, also the average per thread (each thread runs on a
/// core of its own when it can, so 100% per thread is the ceiling).
fn cpu_share(cpu_s: f64, duration_s: f64, threads: u64) -> String {
    if duration_s <= 0.0 {
        return "no measured time".to_string();
    }
    let one_core = cpu_s / duration_s * 100.0;
    if threads <= 1 {
        format!("{one_core:.0}% of one core")
    } else {
        format!(
            "{one_core:.0}% of one core in all, {:.0}% per thread on average ({threads} threads)",
            one_core / threads as f64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use throng_load::target::parse_target;

    #[test]
    fn cpu_is_a_share_of_one_core() {
        assert_eq!(cpu_share(1.09, 1.0, 1), "109% of one core");
        assert_eq!(
            cpu_share(3.0, 2.0, 2),
            "150% of one core in all, 75% per thread on average (2 threads)"
        );
        assert_eq!(cpu_share(1.0, 0.0, 1), "no measured time");
    }

    #[test]
    fn interruptions_say_how_far_the_run_got() {
        let target = parse_target("http://127.0.0.1:1/").unwrap();
        let mut spec = LoadSpec::new(vec![target]);
        spec.stop = Stop::Duration(Duration::from_secs(60));
        let mut s = Summary {
            duration_s: 3.04,
            interrupted: true,
            sessions: None,
            tls: None,
            ..Summary::default()
        };
        assert_eq!(
            interrupted_at(&spec, &s),
            "after 3.0 s of 60 s: the figures cover only the part that ran"
        );
        s.duration_s = 0.0;
        s.warmup = Some(Default::default());
        assert!(interrupted_at(&spec, &s).starts_with("during the warmup, before any of 60 s"));
        spec.stop = Stop::Requests(10_000);
        s.completed = 1200;
        s.errors = [("timeout".to_string(), 34), ("status".to_string(), 5)].into();
        assert!(
            interrupted_at(&spec, &s).starts_with("after 1,234 of 10,000 requests"),
            "{}",
            interrupted_at(&spec, &s)
        );
        assert_eq!(seconds(1.5), "1.5 s");
    }
}
