//! Uploads nginx refuses (`client_max_body_size`): nginx answers 413 as
//! soon as it has the head, before it has read the body, and closes. Each
//! answer counts once, on every backend and over TLS, and nginx's log has
//! exactly the requests throng counted; then the same uploads accepted, so
//! the refusal is known to be nginx's and not the client's doing.

mod support;

use support::{only_errors, throng_json_env, u, Listen, Nginx};

/// An upload well past the limit and past a socket buffer's first fill,
/// so the client is still writing when the answer comes.
const UPLOAD: usize = 2 << 20;

fn nginx(listen: Listen, limit: &str) -> Nginx {
    Nginx::start_conf(
        &[("index.html", b"accepted\n")],
        "$status $request_method",
        listen,
        // A POST to a static file is 405 once read: `return` answers 200
        // to an upload nginx read whole, and 413 is nginx's own, before.
        &format!("client_max_body_size {limit}; location = /up {{ return 200 \"ok\\n\"; }}"),
        "",
    )
}

/// A backend to run on: the `--io` value, and the environment that has
/// the ring open each socket itself (as before Linux 6.7) or none.
type Backend<'a> = (&'a str, &'a [(&'a str, &'a str)]);

/// `-n 20 -c 2` uploads to `/up` on the backend `io` (with `env`).
fn upload(ng: &Nginx, body: &std::path::Path, io: &str, env: &[(&str, &str)]) -> serde_json::Value {
    let url = ng.url("/up");
    let mut args = vec![
        "load",
        url.as_str(),
        "-m",
        "POST",
        "--body-file",
        body.to_str().unwrap(),
        "-n",
        "20",
        "-c",
        "2",
        "-t",
        "1",
        "--timeout",
        "10s",
        "--io",
        io,
    ];
    if url.starts_with("https") {
        args.extend(["--insecure", "--http1.1"]);
    }
    throng_json_env(&args, env)
}

#[test]
fn refused_uploads_are_each_answered_once_on_every_backend_and_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("upload");
    std::fs::write(&body, vec![b'u'; UPLOAD]).unwrap();
    let runs: [(Listen, Backend); 4] = [
        (Listen::Http, ("auto", &[])),
        (Listen::Http, ("uring", &[("THRONG_URING_NO_DIRECT", "1")])),
        (Listen::Http, ("epoll", &[])),
        (Listen::Tls, ("auto", &[])),
    ];
    for (listen, (io, env)) in runs {
        let tls = matches!(listen, Listen::Tls);
        let ng = nginx(listen, "1k");
        let j = upload(&ng, &body, io, env);
        let what = format!("{io}, tls {tls}: {j:#}");
        assert_eq!((u(&j, "/sent"), u(&j, "/completed")), (20, 20), "{what}");
        assert_eq!(u(&j, "/status/413"), 20, "{what}");
        only_errors(&j, &[("status", 20)]);
        assert_eq!(u(&j, "/in_flight_at_end"), 0, "{what}");
        let log = ng.quit_and_read_log();
        assert_eq!(log.len(), 20, "{what}");
        assert!(log.iter().all(|l| l == "413 POST"), "{log:?}");
    }
    // The same uploads under a limit they fit: read whole and answered.
    let ng = nginx(Listen::Http, "4m");
    let j = upload(&ng, &body, "auto", &[]);
    assert_eq!(u(&j, "/status/200"), 20, "{j:#}");
    only_errors(&j, &[]);
    // Every body whole, each behind a head of under 1 KiB.
    let written = u(&j, "/bytes_written");
    let least = 20 * UPLOAD as u64;
    assert!((least..least + 20 * 1024).contains(&written), "{written}");
    let log = ng.quit_and_read_log();
    assert_eq!(log.len(), 20);
    assert!(log.iter().all(|l| l == "200 POST"), "{log:?}");
}
