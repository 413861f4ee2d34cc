//! The open model's waits on io_uring: each load thread measures what a
//! timed sleep costs it and how late one ends, spins a wait for the next
//! send's instant where that costs less, and otherwise sleeps to that
//! lateness before the instant and spins the rest, so the send leaves on
//! time. What it spun is counted and said, and judged as the client's
//! idle time, not its work. On epoll (a schedule's wait there ends by a
//! timer armed for the instant) none of it applies and none of it is in
//! the document.

mod support;

use support::{only_errors, summary, summary_line, throng, throng_json, u};
use throng_testkit::http::{ok, Script, Server};

fn f(j: &serde_json::Value, key: &str) -> f64 {
    j.pointer(key)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing from {j:#}"))
}

fn scheduled(s: &Server, io: &str) -> serde_json::Value {
    throng_json(&[
        "load",
        &s.url("/"),
        "--rate",
        "1000",
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "1s",
        "--io",
        io,
    ])
}

#[test]
fn a_schedules_waits_sleep_to_their_lateness_and_spin_to_the_instant() {
    let s = Server::scripted(Script::answering(ok(b"on time\n")));
    let before = s.requests();
    let j = scheduled(&s, "uring");
    only_errors(&j, &[]);
    // Every request of the second's schedule was sent or counted unsent,
    // and every one sent reached the server.
    let sent = u(&j, "/sent");
    assert_eq!(sent + u(&j, "/rate/unsent"), 1000, "{j:#}");
    assert_eq!(s.requests() - before, sent);
    // The thread's measure of its sleeps: no timer ends one early, and
    // neither figure passes the cap on a spin (50 µs).
    let (cpu, late) = (
        f(&j, "/client_sleep/cpu_us"),
        f(&j, "/client_sleep/late_us"),
    );
    assert!(cpu > 0.0 && cpu <= 50.0, "a sleep's CPU {cpu} µs");
    assert!(late > 0.0 && late <= 50.0, "a sleep's lateness {late} µs");
    // A send a millisecond, each answered in tens of µs: the wait for the
    // next send is far longer than a sleep's price, so it sleeps, wakes
    // its lateness early with nothing come, and spins the rest. Three in
    // four end before the instant here. On a machine busy with other
    // work more of them end late, with nothing left to spin: with two of
    // these runs at once, 194 and 215 waits of 1,000 sends in two tries of
    // sixteen. A tenth of the sends allows for that; a build that never
    // spins after a sleep spins none.
    let (waits, answered) = (
        u(&j, "/client_spins/waits"),
        u(&j, "/client_spins/answered"),
    );
    assert!(
        waits * 10 >= sent,
        "{waits} waits spun for {sent} sends, {} s waiting for a CPU, sleeps {} µs late",
        f(&j, "/client_cpu_s/runqueue"),
        f(&j, "/client_sleep/late_us")
    );
    assert!(answered <= waits);
    let spun = f(&j, "/client_cpu_s/spun");
    let lasted = f(&j, "/duration_s");
    assert!(spun > 0.0 && spun <= lasted, "spun {spun} s of {lasted} s");
    // The sends left at their instants: the median lateness is far
    // under the millisecond a send is late to be counted late.
    let p50 = u(&j, "/rate/lateness_us/p50");
    assert!(p50 < 1000, "median lateness {p50} µs");
    // Busy by choice is not bound: the client's CPU less what it spun.
    // (A machine busy with other tests can keep the thread waiting for a
    // CPU, 12% of the run in one run of the whole suite: a client_bound
    // of that other kind, which says so.)
    let reasons = j["verdict"]["reasons"].as_array().unwrap();
    assert!(
        reasons
            .iter()
            .filter(|r| r["code"] == "client_bound")
            .map(|r| r["message"].as_str().unwrap())
            .all(|m| !m.contains("% busy") && m.contains("for a CPU")),
        "{reasons:?}"
    );

    // epoll measures no sleep and spins nothing.
    let j = scheduled(&s, "epoll");
    only_errors(&j, &[]);
    assert!(j.get("client_sleep").is_none(), "{}", j["client_sleep"]);
    assert!(j.get("client_spins").is_none(), "{}", j["client_spins"]);
}

#[test]
fn the_summary_says_what_a_sleep_costs_and_what_was_spun() {
    let s = Server::scripted(Script::answering(ok(b"said\n")));
    let mut cmd = throng();
    cmd.args([
        "load",
        &s.url("/"),
        "--rate",
        "1000",
        "-c",
        "2",
        "-d",
        "1s",
        "--io",
        "uring",
    ]);
    let text = summary(cmd);
    let line = summary_line(&text, "spin").unwrap_or_else(|| panic!("no spin line:\n{text}"));
    assert!(
        line.contains("a sleep costs a thread here ")
            && line.contains(" of CPU (measured as it started) and ends about ")
            && line.contains("waits spun")
            && line.contains("s in all"),
        "{line}"
    );
    let cpu = summary_line(&text, "client CPU").unwrap_or_else(|| panic!("{text}"));
    assert!(cpu.contains("less the time spun"), "{cpu}");
}
