//! An open-model sweep by offered rate against a real nginx: every round
//! completes what its level offered, and each step is stored, and
//! reported, at its rate.

mod support;

use std::time::{Duration, Instant};

/// A study of nginx with `load` as its `[load]` table, over 4 connections
/// in two rounds of half a second a level, run and reported as JSON.
fn rate_study(load: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("rate.toml");
    // A round's short warmup opens its connections and starts its
    // schedule before the measured half second, whose first sends would
    // otherwise be late for the handshake.
    std::fs::write(
        &study,
        format!(
            "name = \"rate\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
             concurrency = [10]\nwarmup_seconds = 0.2\nfeatures = false\ndiagnose = false\n\
             [load]\n{load}\
             [workload.tiny]\nconcurrency = [4]\n\
             [rounds]\nseconds = 0.5\nmin = 2\nmax = 2\nwarmup_seconds = 0.1\n"
        ),
    )
    .unwrap();
    support::lab_report(&study, &dir.path().join("t.db"), Duration::from_secs(60))
}

#[test]
fn each_offered_rate_is_a_level_whose_rounds_complete_what_was_offered() {
    let t0 = Instant::now();
    let j = rate_study("rate = [200, 400]\n");
    let steps = j["run"]["steps"].as_array().unwrap();
    let levels: Vec<(u64, f64)> = steps
        .iter()
        .map(|s| {
            (
                s["concurrency"].as_u64().unwrap(),
                s["rate"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(levels, [(4, 200.0), (4, 400.0)]);
    for step in steps {
        let rate = step["rate"].as_f64().unwrap();
        assert_eq!(step["status"], "ok", "{rate} req/s: {step}");
        let rounds = step["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{rate} req/s");
        for round in rounds {
            let s = &round["summary"];
            assert_eq!(s["model"], "open", "{rate} req/s: {s}");
            assert_eq!(s["rate"]["target"].as_f64(), Some(rate), "{s}");
            assert_eq!(s["errors_total"], 0, "{rate} req/s: {s}");
            assert_eq!(s["connections"]["requested"], 4, "{s}");
            let offered = rate * s["duration_s"].as_f64().unwrap();
            let completed = s["completed"].as_f64().unwrap();
            // A request counts in the phase its schedule put it in, so a
            // window never completes more than its rate offered (give or
            // take one send per connection at its edges), even when sends
            // the warmup owed land in it late.
            assert!(
                completed >= 0.95 * offered && completed <= offered + 4.0,
                "{rate} req/s: {completed} completed of {offered} offered: {s}"
            );
            assert!(s["latency_uncorrected_us"].is_object(), "{s}");
        }
        // nginx keeps up with a few hundred requests a second.
        let codes: Vec<&str> = step["verdict"]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["code"].as_str().unwrap())
            .collect();
        assert!(
            !codes.contains(&"saturated"),
            "{rate} req/s: {}",
            step["verdict"]
        );
    }
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_studys_tick_keeps_each_rounds_schedule_in_ticks() {
    let j = rate_study("rate = [400]\ntick = \"50ms\"\n");
    let steps = j["run"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let rounds = steps[0]["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    for round in rounds {
        let s = &round["summary"];
        assert_eq!(s["rate"]["tick_us"], 50_000, "{s}");
        assert_eq!(s["errors_total"], 0, "{s}");
        // Ten ticks of twenty requests: the window's last tick carries
        // only those spaced before its end, so the window sends exactly
        // the rate times its length.
        assert_eq!(s["sent"], 200, "{s}");
        assert_eq!(
            s["completed"].as_u64().unwrap() + s["in_flight_at_end"].as_u64().unwrap(),
            200,
            "{s}"
        );
    }
}
