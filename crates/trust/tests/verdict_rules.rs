//! Every verdict rule fires on a crafted measurement, and a clean one is valid.

use hdrhistogram::Histogram;
use throng_model::ErrorKind;
use throng_model::{Connections, CpuTime, RateReport, ReasonCode};
use throng_model::{Estimate, RoundRecord, ServerUsage, StepRecord, StepStatus, Summary, Verdict};
use throng_trust::verdict::{round_verdict_with, step_verdict, sweep_verdicts, RoundContext};

/// A healthy 10 s keep-alive run: 2 threads half busy, 100 connections.
fn clean() -> Summary {
    let mut s = Summary {
        schema: 1,
        model: "closed".into(),
        threads: 2,
        keep_alive: true,
        duration_s: 10.0,
        completed: 200_000,
        sent: 200_000,
        requests_per_sec: 20_000.0,
        client_cpu_s: CpuTime {
            user: 6.0,
            sys: 4.0,
            runqueue: 0.0,
        },
        connections: Connections {
            requested: 100,
            established: 100,
            per_sec: 0.0,
            ..Connections::default()
        },
        ..Summary::default()
    };
    s.status.insert("200".into(), 200_000);
    for k in ErrorKind::ALL {
        s.errors.insert(k.name().into(), 0);
    }
    s
}

fn ctx() -> RoundContext {
    RoundContext {
        server: Some(ServerUsage {
            cpu_user_s: 6.0,
            cpu_sys_s: 4.0,
            wall_s: 10.0,
            ..ServerUsage::default()
        }),
        server_cores: Some(2),
        client_threads: 2,
        shared_cores: false,
        close_mode: false,
    }
}

const PORTS: Option<u64> = Some(28232);

fn codes(v: &Verdict) -> Vec<&str> {
    v.reasons.iter().map(|r| r.code.name()).collect()
}

fn msg<'a>(v: &'a Verdict, code: &str) -> &'a str {
    &v.reasons
        .iter()
        .find(|r| r.code.name() == code)
        .unwrap()
        .message
}

/// 1000 responses around 100 µs: a fast local server.
fn fast_histogram() -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.record_n(100, 1000).unwrap();
    h
}

#[test]
fn fewer_responses_than_connections_is_a_short_round() {
    // A large file at 100 connections: 40 transfers ended inside the round.
    let mut s = clean();
    s.completed = 40;
    s.status.insert("200".into(), 40);
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert!(codes(&v).contains(&"short_round"), "{v:#?}");
    assert_eq!(
        msg(&v, "short_round"),
        "only 40 responses completed for 100 connections in 10.0 s: responses take longer \
         than the round, so req/s is not meaningful (MB/s is); use longer rounds"
    );
    s.completed = 100;
    assert!(!codes(&round_verdict_with(&s, None, &ctx(), PORTS)).contains(&"short_round"));
    // Missing responses that errors explain are not a short round.
    s.completed = 40;
    s.errors.insert("timeout".into(), 60);
    s.errors_total = 60;
    assert!(!codes(&round_verdict_with(&s, None, &ctx(), PORTS)).contains(&"short_round"));
}

#[test]
fn starved_client_is_client_bound() {
    // 10 s on 2 threads, 30% of it spent waiting for a CPU while using only
    // half of the CPU it got: the closed model's starved client looks idle.
    let mut s = clean();
    s.client_cpu_s.runqueue = 6.0;
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["client_bound"]);
    assert!(msg(&v, "client_bound").starts_with(
        "the load generator's thread(s) waited 30% of the run for a CPU (a shared core or a CPU quota) while the server used 1.00 of its 2 cores"
    ), "{}", msg(&v, "client_bound"));
    // Under the threshold: valid.
    s.client_cpu_s.runqueue = 1.9;
    assert!(round_verdict_with(&s, None, &ctx(), PORTS).is_valid());
}

#[test]
fn clean_run_is_valid() {
    let h = fast_histogram();
    let v = round_verdict_with(&clean(), Some(&h), &ctx(), PORTS);
    assert_eq!(v, Verdict::valid());
    assert_eq!(v.label(), "valid");
}

#[test]
fn client_busy_while_server_idle() {
    let mut s = clean();
    s.client_cpu_s = CpuTime {
        user: 12.0,
        sys: 7.0,
        runqueue: 0.0,
    };
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["client_bound"]);
    assert_eq!(
        msg(&v, "client_bound"),
        "the load generator's 2 thread(s) were 95% busy while the server used 1.00 of its \
         2 cores: the result is a lower bound on the server, not its capacity; give the \
         client more threads or cores"
    );

    // Without a server to compare with, the busy client is still reported.
    let mut c = ctx();
    c.server = None;
    let v = round_verdict_with(&s, None, &c, PORTS);
    assert!(msg(&v, "client_bound").contains("(server CPU unknown)"));

    // The server saturated its cores too: that is its capacity, not a client limit.
    let mut c = ctx();
    c.server.as_mut().unwrap().cpu_user_s = 12.0;
    c.server.as_mut().unwrap().cpu_sys_s = 7.0;
    assert!(round_verdict_with(&s, None, &c, PORTS).is_valid());
}

#[test]
fn late_sends_in_rate_mode() {
    let mut s = clean();
    s.model = "open".into();
    s.rate = Some(RateReport {
        target: 20_000.0,
        late_sends: 4_000,
        ..RateReport::default()
    });
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["client_bound"]);
    assert!(
        msg(&v, "client_bound").starts_with("4000 of 200000 sends (2.0%) left more than 1 ms late")
    );
    s.rate.as_mut().unwrap().late_sends = 1_000;
    assert!(round_verdict_with(&s, None, &ctx(), PORTS).is_valid());
}

#[test]
fn errors_and_unexpected_statuses() {
    let mut s = clean();
    s.status.insert("503".into(), 12);
    s.errors.insert("status".into(), 12);
    s.errors.insert("timeout".into(), 3);
    s.errors_total = 15;
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["errors"]);
    assert!(msg(&v, "errors").starts_with("15 errors (timeout 3, status 12); statuses 503×12:"));
}

#[test]
fn drift_in_size_or_checksum() {
    let mut s = clean();
    s.errors.insert("size_mismatch".into(), 7);
    s.errors.insert("checksum_mismatch".into(), 2);
    s.errors_total = 9;
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["drift"]);
    assert!(msg(&v, "drift").starts_with("responses changed during load (7 of another size, 2 with another checksum, of 200000 completed)"));
}

#[test]
fn delayed_ack_spikes() {
    let mut h = fast_histogram();
    h.record_n(40_000, 100).unwrap();
    let v = round_verdict_with(&clean(), Some(&h), &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["delayed_ack"]);
    assert!(msg(&v, "delayed_ack").starts_with("9.1% of responses (100 of 1100) took 38–52 ms"));

    let mut h = fast_histogram();
    h.record_n(201_000, 60).unwrap();
    let v = round_verdict_with(&clean(), Some(&h), &ctx(), PORTS);
    assert!(msg(&v, "delayed_ack").starts_with("5.7% of responses (60 of 1060) took 195–220 ms"));

    // Every response delayed (the thttpd diagonal): the median is in the
    // window too, and with both sides idle (100 connections at 2,500 req/s,
    // a 5% busy client) it still fires.
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.record_n(40_100, 500).unwrap();
    h.record_n(39_800, 500).unwrap();
    let mut idle = clean();
    idle.requests_per_sec = 2_500.0;
    idle.client_cpu_s = CpuTime {
        user: 0.4,
        sys: 0.6,
        runqueue: 0.0,
    };
    let mut idle_ctx = ctx();
    idle_ctx.server.as_mut().unwrap().cpu_sys_s = 0.5;
    idle_ctx.server.as_mut().unwrap().cpu_user_s = 0.5;
    assert_eq!(
        codes(&round_verdict_with(&idle, Some(&h), &idle_ctx, PORTS)),
        vec!["delayed_ack"]
    );
    // The same spike with a busy client is queueing, not a timer: 10,000
    // connections at 40,000 req/s wait ~250 ms each by Little's law.
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.record_n(213_000, 1000).unwrap();
    let mut queued = clean();
    queued.threads = 1;
    queued.client_cpu_s = CpuTime {
        user: 1.6,
        sys: 5.6,
        runqueue: 0.0,
    };
    let mut no_server = ctx();
    no_server.server = None;
    no_server.server_cores = None;
    no_server.client_threads = 1;
    assert!(round_verdict_with(&queued, Some(&h), &no_server, PORTS).is_valid());
    // And with an idle client but a saturated server, too.
    let mut saturated = ctx();
    saturated.server.as_mut().unwrap().cpu_user_s = 10.0;
    saturated.server.as_mut().unwrap().cpu_sys_s = 9.5;
    assert!(round_verdict_with(&idle, Some(&h), &saturated, PORTS).is_valid());

    // A broad distribution that covers 40 ms is not a timer.
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for ms in 20..=60 {
        h.record_n(ms * 1000, 25).unwrap();
    }
    assert!(round_verdict_with(&clean(), Some(&h), &ctx(), PORTS).is_valid());

    // 4% is below the share that makes a pattern.
    let mut h = fast_histogram();
    h.record_n(40_000, 40).unwrap();
    assert!(round_verdict_with(&clean(), Some(&h), &ctx(), PORTS).is_valid());

    // Too few responses to say anything.
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.record_n(40_000, 99).unwrap();
    assert!(round_verdict_with(&clean(), Some(&h), &ctx(), PORTS).is_valid());
}

#[test]
fn ports_in_close_mode() {
    let mut s = clean();
    s.keep_alive = false;
    s.connections.per_sec = 400.0;
    let mut c = ctx();
    c.close_mode = true;
    // 400/s × 60 s = 24000 of 28232 ports: 85%.
    let v = round_verdict_with(&s, None, &c, PORTS);
    assert_eq!(codes(&v), vec!["ports"]);
    assert!(msg(&v, "ports").starts_with(
        "400 new connections/s × 60 s in TIME_WAIT ≈ 24000 ports, 85% of the 28232 ephemeral ports:"
    ));
    // 200/s: 12000 ports, 43%.
    s.connections.per_sec = 200.0;
    assert!(round_verdict_with(&s, None, &c, PORTS).is_valid());
    // Unknown range: no prediction.
    s.connections.per_sec = 400.0;
    assert!(round_verdict_with(&s, None, &c, None).is_valid());
    // Keep-alive: no churn.
    s.keep_alive = true;
    assert!(round_verdict_with(&s, None, &ctx(), PORTS).is_valid());
    // connect() reporting EADDRNOTAVAIL is exhaustion itself, in any mode.
    s.errors.insert("addr_unavailable".into(), 17);
    s.errors_total = 17;
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["errors", "ports"]);
    assert!(msg(&v, "ports").starts_with("17 connects failed with EADDRNOTAVAIL"));
}

#[test]
fn fewer_connections_than_requested() {
    let mut s = clean();
    s.connections.established = 90;
    let v = round_verdict_with(&s, None, &ctx(), PORTS);
    assert_eq!(codes(&v), vec!["connections"]);
    assert!(msg(&v, "connections").starts_with("90 of 100 requested connections were established"));
}

#[test]
fn shared_cores() {
    let mut c = ctx();
    c.shared_cores = true;
    let v = round_verdict_with(&clean(), None, &c, PORTS);
    assert_eq!(codes(&v), vec!["shared_cores"]);
    assert_eq!(v.label(), "suspect: shared_cores");
}

fn step(
    server: &str,
    concurrency: u32,
    rps: f64,
    p50_us: u64,
    server_cores_used: f64,
) -> StepRecord {
    let round = |i: u32| {
        let mut s = clean();
        s.latency_us.p50 = p50_us;
        RoundRecord {
            index: i,
            summary: s,
            server: ServerUsage {
                cpu_user_s: server_cores_used * 10.0,
                cpu_sys_s: 0.0,
                wall_s: 10.0,
                ..ServerUsage::default()
            },
            histogram: Vec::new(),
        }
    };
    StepRecord {
        server: server.into(),
        cores: 2,
        workload: "small".into(),
        concurrency,
        status: StepStatus::Ok,
        failure: None,
        log_tail: None,
        server_cpus: vec![0, 1],
        client_cpus: vec![],
        shared_cores: false,
        throughput: Estimate {
            mean: rps,
            median: rps,
            ci_low: rps * 0.99,
            ci_high: rps * 1.01,
            n: 5,
        },
        rounds: (0..3).map(round).collect(),
        verdict: Verdict::valid(),
    }
}

#[test]
fn step_merges_rounds_and_flags_noise() {
    let mut st = step("nginx", 8, 1000.0, 500, 1.0);
    let mut errs = Verdict::valid();
    errs.push(ReasonCode::Errors, "3 errors");
    let mut both = Verdict::valid();
    both.push(ReasonCode::Errors, "5 errors");
    both.push(ReasonCode::DelayedAck, "spike");
    let v = step_verdict(&st, &[errs.clone(), Verdict::valid(), both], 0.02);
    assert_eq!(codes(&v), vec!["errors", "delayed_ack"]);
    assert_eq!(msg(&v, "errors"), "3 errors (in 2 of 3 rounds)");
    assert_eq!(msg(&v, "delayed_ack"), "spike (in 1 of 3 rounds)");

    assert!(step_verdict(&st, &[Verdict::valid()], 0.02).is_valid());
    st.throughput.ci_low = 950.0;
    st.throughput.ci_high = 1050.0;
    let v = step_verdict(&st, &[Verdict::valid()], 0.02);
    assert_eq!(codes(&v), vec!["noisy"]);
    assert!(msg(&v, "noisy").starts_with("throughput varied from round to round: 95% interval ±5.0% after 5 rounds, above the ±2.0% target"));
    // A single round has no interval to judge.
    st.throughput.n = 1;
    assert!(step_verdict(&st, &[Verdict::valid()], 0.02).is_valid());

    st.shared_cores = true;
    assert_eq!(
        codes(&step_verdict(&st, &[errs], 0.02)),
        vec!["errors", "shared_cores"]
    );
}

#[test]
fn flat_sweep_with_idle_server_is_bottlenecked_elsewhere() {
    let mut steps = vec![
        step("nginx", 8, 2000.0, 4000, 0.3),
        step("nginx", 1, 1000.0, 1000, 0.3),
        step("nginx", 2, 1900.0, 1050, 0.3),
        step("nginx", 4, 2000.0, 2000, 0.3),
        // Saturated server: flat because it is at capacity, which is fine.
        step("apache2", 1, 1000.0, 1000, 1.9),
        step("apache2", 2, 1050.0, 1900, 1.9),
    ];
    sweep_verdicts(&mut steps);
    let flagged: Vec<(String, u32)> = steps
        .iter()
        .filter(|s| !s.verdict.is_valid())
        .map(|s| (s.server.clone(), s.concurrency))
        .collect();
    assert_eq!(
        flagged,
        vec![("nginx".to_string(), 8), ("nginx".to_string(), 4)]
    );
    assert_eq!(
        steps[3].verdict.reasons[0].message,
        "throughput flat (1900 → 2000 req/s, +5%) from 2 to 4 connections while median \
         latency grew 1050 → 2000 µs and the server used 0.30 of its 2 cores: the limit is \
         elsewhere (client, network, a lock, a fixed delay), not the server's CPU"
    );
    // Running it again does not duplicate the reason.
    sweep_verdicts(&mut steps);
    assert_eq!(steps[0].verdict.reasons.len(), 1);
}
