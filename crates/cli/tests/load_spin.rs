//! `--spin`: a wait for a response looks for one before it sleeps.
//! Against a scripted server whose answers come well after the spin's
//! length, every response's last wait spun its whole length and then
//! slept; against one that answers at once, most waits end while they
//! spin. Either way the counts are the load's, exact, on both backends.

mod support;

use std::time::Duration;

use support::{only_errors, run_bounded, summary, summary_line, throng, throng_json, u};
use throng_testkit::http::{ok, Script, Server};

/// The waits that spun, and those a completion ended while they spun.
fn spins(j: &serde_json::Value) -> (u64, u64) {
    (u(j, "/client_spins/waits"), u(j, "/client_spins/answered"))
}

#[test]
fn answers_later_than_the_spin_leave_each_response_a_whole_spin_and_a_sleep() {
    // 20 ms an answer, 100 µs a spin: no response can end a spin, so each
    // of the 20 was waited for by a wait that spun 100 µs and slept.
    let s = Server::scripted(Script::answering(ok(b"late\n")).delay(Duration::from_millis(20)));
    for io in ["uring", "epoll"] {
        let before = s.requests();
        let j = throng_json(&[
            "load",
            &s.url("/"),
            "-n",
            "20",
            "-c",
            "1",
            "--spin",
            "100us",
            "--io",
            io,
        ]);
        assert_eq!(j["completed"], 20, "{io}");
        assert_eq!(u(&j, "/body_bytes"), 20 * 5);
        only_errors(&j, &[]);
        assert_eq!(s.requests() - before, 20);
        let (waits, answered) = spins(&j);
        assert!(
            waits - answered >= 20,
            "{io}: {waits} waits, {answered} ended spinning"
        );
        // At least the 20 whole spins; never more than the run lasted
        // (one thread: the spins are its waits, one after another).
        let spun = j["client_cpu_s"]["spun"].as_f64().unwrap();
        let lasted = j["duration_s"].as_f64().unwrap();
        assert!(spun >= 20.0 * 100e-6, "{io}: spun {spun} s");
        assert!(spun <= lasted, "{io}: spun {spun} s of {lasted} s");
        assert_eq!(j["coalesce"], false, "a spin takes no naps");
        assert_eq!(j["client_naps"], 0);
    }
}

#[test]
fn answers_within_the_spin_end_waits_without_a_sleep() {
    let s = Server::scripted(Script::answering(ok(b"soon\n")));
    for io in ["uring", "epoll"] {
        let j = throng_json(&[
            "load",
            &s.url("/"),
            "-n",
            "400",
            "-c",
            "2",
            "--spin",
            "1ms",
            "--io",
            io,
        ]);
        assert_eq!(j["completed"], 400, "{io}");
        only_errors(&j, &[]);
        let (waits, answered) = spins(&j);
        // A loopback answer takes tens of µs; half of the waits ending
        // within a millisecond allows for a machine busy with other
        // tests, and a spin that never saw an answer fails it.
        assert!(
            waits >= 1 && answered * 2 >= waits,
            "{io}: {answered} of {waits} waits answered"
        );
    }
    // Without a spin there is nothing of it in the document.
    let j = throng_json(&["load", &s.url("/"), "-n", "10", "-c", "1"]);
    assert!(j.get("client_spins").is_none(), "{}", j["client_spins"]);
    assert!(
        j["client_cpu_s"].get("spun").is_none(),
        "{}",
        j["client_cpu_s"]
    );
}

#[test]
fn the_summary_says_what_the_spin_cost() {
    let s = Server::scripted(Script::answering(ok(b"told\n")).delay(Duration::from_millis(5)));
    let load = |extra: &[&str]| {
        let mut cmd = throng();
        cmd.args(["load", &s.url("/"), "-n", "10", "-c", "1"])
            .args(extra);
        cmd
    };
    let text = summary(load(&["--spin", "200us"]));
    let line = summary_line(&text, "spin").unwrap_or_else(|| panic!("no spin line:\n{text}"));
    assert!(
        line.contains("looks for responses for up to 200µs before it sleeps")
            && line.contains("s in all"),
        "{line}"
    );
    assert_eq!(
        summary_line(&text, "naps"),
        None,
        "a spin takes no naps:\n{text}"
    );
    // Without a spin, naps and no spin line.
    let text = summary(load(&[]));
    assert!(summary_line(&text, "naps").is_some(), "{text}");
    assert_eq!(summary_line(&text, "spin"), None, "{text}");
    assert_eq!(s.requests(), 20);

    // A nap and a spin are two ways of waiting: one or the other.
    let out = run_bounded(
        load(&["--spin", "50us", "--nap-divisor", "8"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--spin"));
    assert_eq!(s.requests(), 20, "a refused load sends nothing");
}
