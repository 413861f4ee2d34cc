//! Stored profiles against a scripted truth: folded stacks whose split is
//! known to the sample, read back into the report's components, its why
//! sentence, its flame graphs' file names, and the line that says a
//! profile is absent rather than empty.

mod common;

use std::io::Write;

use base64::Engine as _;
use throng_model::{RunData, StackProfile};
use throng_report::components::{self, Component};
use throng_report::{Exporter, MarkdownExporter};

fn profile(folded: &str) -> StackProfile {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(folded.as_bytes()).unwrap();
    StackProfile {
        event: "cpu-clock".into(),
        period_ns: 100_000,
        seconds: 1.0,
        cpus: vec![0],
        samples: components::lines(folded).map(|(_, n)| n).sum(),
        kernel_symbols: true,
        user_frames: 10,
        user_frames_named: 5,
        folded_gz: base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap()),
        ..StackProfile::default()
    }
}

/// Over 9000 requests a sample of 100 µs is 1/90 µs a request: nginx 3.0
/// µs in the open path, 5.0 in its own code, 2.0 sending; lighttpd 1.0
/// polling, 4.0 its own, 2.0 sending. apache2-event had no perf.
fn profiled() -> RunData {
    let mut run = common::rich_run();
    let nginx = "\
nginx;ngx_open_cached_file;__libc_open64;entry_SYSCALL_64_[k];do_sys_openat2_[k] 270
nginx;ngx_http_parse_request_line 450
nginx;ngx_writev;writev;entry_SYSCALL_64_[k];tcp_sendmsg_[k] 180
";
    let lighttpd = "\
lighttpd;fdevent_poll;__GI___poll;entry_SYSCALL_64_[k];do_syscall_64_[k] 90
lighttpd;http_response_handler 360
lighttpd;writev;entry_SYSCALL_64_[k];tcp_sendmsg_[k] 180
";
    for s in &mut run.steps {
        let d = match s.diagnosis.as_mut() {
            Some(d) if s.workload == "tiny" && s.cores == 1 => d,
            _ => continue,
        };
        d.profile = match (s.server.as_str(), s.concurrency) {
            ("nginx", 100) => Some(profile(nginx)),
            ("lighttpd", 100) => Some(profile(lighttpd)),
            ("apache2-event", 200) => Some(StackProfile::absent(
                "no perf on PATH (Debian package linux-perf)",
            )),
            _ => None,
        };
    }
    run
}

#[test]
fn the_split_is_the_samples_over_the_requests() {
    let run = profiled();
    let d = |server: &str| {
        run.steps
            .iter()
            .find(|s| s.server == server && s.cores == 1 && s.concurrency == 100)
            .and_then(|s| s.diagnosis.clone())
            .unwrap()
    };
    let nginx = components::split(&d("nginx")).unwrap();
    let round = |v: f64| (v * 1e9).round() / 1e9;
    let us: Vec<(Component, f64)> = nginx.us.iter().map(|(c, v)| (*c, round(*v))).collect();
    assert_eq!(
        us,
        [
            (Component::Network, 2.0),
            (Component::Files, 3.0),
            (Component::Copies, 0.0),
            (Component::Server, 5.0),
            (Component::Tls, 0.0),
            (Component::Scheduler, 0.0),
            (Component::Other, 0.0),
        ]
    );
    let lighttpd = components::split(&d("lighttpd")).unwrap();
    assert_eq!(round(lighttpd.of(Component::Network)), 3.0);
    assert_eq!(round(lighttpd.total()), 7.0);
}

#[test]
fn the_report_splits_explains_and_says_absent() {
    let run = profiled();
    let md = String::from_utf8(MarkdownExporter { image_dir: None }.export(&run).unwrap()).unwrap();
    let section = &md[md.find("## Where a request's CPU goes").expect(&md)..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    for line in [
        "| nginx | 1 | tiny | 100 | 10.0 µs | 2.0 | 3.0 | 0.0 | 5.0 | 0.0 | 0.0 | 0.0 |",
        "| lighttpd | 1 | tiny | 100 | 7.0 µs | 3.0 | 0.0 | 0.0 | 4.0 | 0.0 | 0.0 | 0.0 |",
        "- apache2-event (tiny, 1 core, c=200): profile absent: no perf on PATH (Debian package linux-perf)",
        "nginx spends 3.0 µs more CPU per request than lighttpd at c=100, 3.0 µs of it in files and page cache (see their flame graphs)",
        "lighttpd against nginx: CPU per request: `diff-lighttpd-vs-nginx-tiny-1c-c100.svg`",
        "nginx: CPU per request: `nginx-tiny-1c-c100.svg`",
        "lighttpd: CPU per request: `lighttpd-tiny-1c-c100.svg`",
    ] {
        assert!(section.lines().any(|l| l == line), "no line {line:?} in\n{section}");
    }
    // The ratio line says it too, beside the syscalls.
    assert!(md.contains("(see their flame graphs)"), "{md}");

    let a = throng_report::Analysis::of(&run);
    let files: Vec<String> = throng_report::flames::all(&run, &a.steps)
        .into_iter()
        .map(|g| g.file)
        .collect();
    assert_eq!(
        files,
        [
            "nginx-tiny-1c-c100.svg",
            "lighttpd-tiny-1c-c100.svg",
            "diff-lighttpd-vs-nginx-tiny-1c-c100.svg"
        ]
    );
}
