//! `throng load --sessions FILE --users-stages …` against a real nginx:
//! users join the instant the stages reach them and leave when their
//! session ends on the way down, and each second of the timeline shows the
//! target beside the users found active.

mod support;

use std::time::Duration;

use support::{run_bounded, throng, throng_json, u};

#[test]
fn users_follow_their_stages_second_by_second() {
    let ng = support::Nginx::start(&[("a.html", b"a\n"), ("b.html", b"b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.log");
    // A session is two pages 0.3 s apart: a user over a falling target
    // is gone well within the half second before the next sample.
    std::fs::write(&file, "/a.html think=0.3\n/b.html\n").unwrap();
    // 0 → 4 users over 2 s, a jump to 6 at 2 s, down to 2 at 2.5 s, held
    // to 4 s. Users are sampled at each whole second: 0, 2, 6 and 2 are
    // due then, and no change falls on a sample's instant but the jump,
    // which lets its users in before the sample looks.
    let j = throng_json(&[
        "load",
        &ng.url("/"),
        "--sessions",
        file.to_str().unwrap(),
        "--users-stages",
        "2s:4,0s:6,500ms:6,0s:2,1500ms:2",
        "-t",
        "2",
    ]);
    let targets: Vec<u64> = j["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["users_target"].as_u64().unwrap())
        .collect();
    let active: Vec<u64> = j["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["users_active"].as_u64().unwrap())
        .collect();
    assert_eq!(targets, [0, 2, 6, 2], "{j}");
    assert_eq!(active, [0, 2, 6, 2], "{j}");
    let s = &j["sessions"];
    assert_eq!((u(s, "/users"), u(s, "/active_max")), (6, 6), "{s}");
    assert_eq!(u(s, "/failed"), 0);
    assert_eq!(u(&j, "/connections/requested"), 36);
    assert_eq!(u(&j, "/errors_total"), 0);
    let secs = j["duration_s"].as_f64().unwrap();
    assert!((3.9..4.5).contains(&secs), "{secs}");
}

#[test]
fn stages_of_users_that_cannot_run_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.log");
    std::fs::write(&file, "/a.html\n").unwrap();
    let file = file.to_str().unwrap();
    let refused = |extra: &[&str]| {
        let mut c = throng();
        c.args(["load", "http://127.0.0.1:9/", "--sessions", file]);
        c.args(extra);
        let out = run_bounded(c, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    };
    assert_eq!(
        refused(&["--users-stages", "1s:2.5"]),
        "throng: --users-stages \"1s:2.5\": \"1s:2.5\": its users are not a whole number, 0 or more\n"
    );
    assert_eq!(
        refused(&["--users-stages", "5s:0"]),
        "throng: --users-stages \"5s:0\": the stages hold at least one user for some time\n"
    );
    assert_eq!(
        refused(&["--users-stages", "5s:3", "-c", "3"]),
        "throng: the argument '--users-stages <STAGES>' cannot be used with '--connections <CONNECTIONS>'\n"
    );
}
