//! A step offered a rate kept up with it or did not: its completions
//! against the rate, and its late sends beyond the client's own stalls.

use throng_model::{CpuTime, RateReport, RoundRecord, ServerUsage, StepRecord, Summary};
use throng_trust::verdict::saturation;

/// Two 0.5 s rounds offered `rate`, each completing `completed`, with
/// `late` late sends and the client thread waiting `runqueue_s` for a CPU.
fn offered(rate: f64, completed: u64, late: u64, runqueue_s: f64) -> StepRecord {
    let round = |index| RoundRecord {
        index,
        summary: Summary {
            model: throng_model::LoadModel::Open,
            threads: 1,
            duration_s: 0.5,
            completed,
            sent: (rate * 0.5) as u64,
            client_cpu_s: CpuTime {
                runqueue: runqueue_s,
                ..CpuTime::default()
            },
            rate: Some(RateReport {
                target: rate,
                late_sends: late,
                ..RateReport::default()
            }),
            ..Summary::default()
        },
        ..RoundRecord::default()
    };
    StepRecord {
        rate: Some(rate),
        rounds: vec![round(0), round(1)],
        ..StepRecord::new("nginx", 1, "tiny", 4)
    }
}

#[test]
fn a_step_that_completes_what_it_was_offered_on_time_kept_up() {
    assert_eq!(saturation(&offered(200.0, 100, 0, 0.0)), None);
    // 95% of the rate and 1% of sends late are still keeping up.
    assert_eq!(saturation(&offered(200.0, 95, 1, 0.0)), None);
    // A closed-model step was offered no rate.
    let closed = StepRecord {
        rate: None,
        ..offered(200.0, 10, 50, 0.0)
    };
    assert_eq!(saturation(&closed), None);
}

#[test]
fn too_few_completions_or_too_many_late_sends_did_not_keep_up() {
    assert_eq!(
        saturation(&offered(400.0, 150, 0, 0.0)).unwrap(),
        "the server did not keep up with 400 req/s: it completed 300 req/s of the 400 offered \
         (75.0%, under 95%); latency here is queueing behind the schedule, and higher rates \
         were not offered"
    );
    assert_eq!(
        saturation(&offered(200.0, 100, 8, 0.0)).unwrap(),
        "the server did not keep up with 200 req/s: 16 of 200 sends (8.0%) left more than 1 ms \
         late; latency here is queueing behind the schedule, and higher rates were not offered"
    );
}

#[test]
fn a_few_late_sends_in_a_short_round_are_no_verdict() {
    // 6 of 200 is 3%, but 6 sends are one scheduler hiccup's worth: a
    // server that falls behind makes every later send late.
    assert_eq!(saturation(&offered(200.0, 100, 3, 0.0)), None);
    // From LATE_SEND_MIN on, the share decides.
    assert!(saturation(&offered(200.0, 100, 5, 0.0)).is_some());
}

#[test]
fn late_sends_the_clients_own_stalls_explain_are_not_the_servers() {
    // 13 ms a round waiting for a CPU at 200 req/s holds back 2.6 sends:
    // the 2 late ones are the client's.
    assert_eq!(saturation(&offered(200.0, 100, 2, 0.013)), None);
    // Past what its stalls explain, the rest is the server's.
    assert_eq!(
        saturation(&offered(200.0, 100, 6, 0.005)).unwrap(),
        "the server did not keep up with 200 req/s: 12 of 200 sends left more than 1 ms late, \
         10 (5.0%) beyond the 2 its client's wait for a CPU explains; latency here is queueing \
         behind the schedule, and higher rates were not offered"
    );
}

/// `offered`, its server on `cores` cores and denied `steal_s` of CPU a
/// round by the hypervisor.
fn starved(rate: f64, late: u64, runqueue_s: f64, cores: u32, steal_s: f64) -> StepRecord {
    let mut step = offered(rate, (rate * 0.5) as u64, late, runqueue_s);
    step.cores = cores;
    for r in &mut step.rounds {
        r.server = ServerUsage {
            wall_s: 0.5,
            steal_s,
            ..ServerUsage::default()
        };
    }
    step
}

#[test]
fn late_sends_a_starved_server_explains_are_the_machines() {
    // The hypervisor took 50 ms of a round from the server's one core at
    // 400 req/s: the 20 sends due while it stood still went out late, with
    // 4 a round the client's own wait explains. That is `server_starved`,
    // not a server that cannot keep up with 400 req/s.
    assert_eq!(saturation(&starved(400.0, 14, 0.01, 1, 0.05)), None);
    // On two cores, the same steal stood half of the server still.
    assert_eq!(
        saturation(&starved(400.0, 19, 0.01, 2, 0.05)).unwrap(),
        "the server did not keep up with 400 req/s: 38 of 400 sends left more than 1 ms late, \
         10 (2.5%) beyond the 8 its client's wait for a CPU and the 20 the CPU its server was \
         denied explain; latency here is queueing behind the schedule, and higher rates were \
         not offered"
    );
    // A server past its capacity makes every later send late: far more
    // than a steal explains.
    assert_eq!(
        saturation(&starved(400.0, 100, 0.0, 1, 0.05)).unwrap(),
        "the server did not keep up with 400 req/s: 200 of 400 sends left more than 1 ms late, \
         160 (40.0%) beyond the 40 the CPU its server was denied explains; latency here is \
         queueing behind the schedule, and higher rates were not offered"
    );
}

/// A `throng load --rate` run is judged by the same rules, and requests that
/// fell due but were never sent say so: their latency is in no figure.
#[test]
fn a_load_that_left_due_requests_unsent_did_not_keep_its_schedule() {
    use throng_trust::verdict::schedule_not_kept;
    let run = |completed: u64, sent: u64, unsent: u64| Summary {
        model: throng_model::LoadModel::Open,
        threads: 1,
        duration_s: 5.0,
        completed,
        sent,
        rate: Some(RateReport {
            target: 100.0,
            unsent,
            ..RateReport::default()
        }),
        ..Summary::default()
    };
    assert_eq!(schedule_not_kept(&run(498, 500, 0)), None);
    // 9 unsent of 500 due: under the floor of 10.
    assert_eq!(schedule_not_kept(&run(490, 491, 9)), None);
    // A server stalled over the last half second of a 5 s run at 100 req/s.
    assert_eq!(
        schedule_not_kept(&run(451, 461, 39)).unwrap(),
        "the schedule of 100 req/s was not kept: it completed 90 req/s of the 100 offered \
         (90.2%, under 95%), and 39 of 500 due requests (7.8%) were never sent, every \
         connection still waiting for an answer, and their latency is in no figure; the \
         latency measures how long the run lasted as much as the server"
    );
    // Unsent alone is enough, however many were answered.
    assert!(schedule_not_kept(&run(480, 480, 20))
        .unwrap()
        .contains("20 of 500 due requests (4.0%) were never sent"));
    // The closed model offers no schedule.
    let closed = Summary {
        rate: None,
        ..run(10, 10, 0)
    };
    assert_eq!(schedule_not_kept(&closed), None);
}
