//! Stored profiles made from folded stacks a test writes: a profile of
//! known stacks, and a run the size of the `quick` study (four servers,
//! four levels each) whose every step holds a profile shaped as a real
//! server's (hundreds of distinct stacks, tens of frames deep).
#![allow(dead_code)]

use std::io::Write;

use base64::Engine as _;
use throng_model::{Decision, Diagnosis, RunData, StackProfile};

/// A profile of these folded lines, sampled every 100 µs.
pub fn profile(folded: &str) -> StackProfile {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(folded.as_bytes()).unwrap();
    let samples = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    StackProfile {
        event: "cpu-clock".into(),
        period_ns: 100_000,
        seconds: 1.0,
        cpus: vec![0],
        samples,
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
pub fn profiled() -> RunData {
    let mut run = crate::common::rich_run();
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

/// A small deterministic generator (64-bit LCG): the same stacks on every
/// run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// `distinct` stacks of `comm` grown as a server's are: each a stack
/// already seen, cut somewhere in its lower half, with one or two frames
/// of its own (so stacks share their roots, and the graph holds about one
/// and a half frames per stack), user frames above kernel ones; counts 1
/// to 10 samples. A real nginx's one-second window held 449 distinct
/// stacks of 2191 samples, 591 frames, 12.7 deep on average.
pub fn server_like(comm: &str, seed: u64, distinct: usize) -> String {
    let mut rng = Lcg(seed);
    let mut seen: Vec<Vec<String>> = vec![(0..10).map(|d| format!("{comm}_main_{d}")).collect()];
    let mut stacks = std::collections::BTreeMap::new();
    let mut next = 0u64;
    while stacks.len() < distinct {
        let from = &seen[rng.next(seen.len() as u64) as usize];
        let keep = (from.len() / 2 + rng.next(from.len() as u64 / 2 + 1) as usize).min(30);
        let mut frames: Vec<String> = from[..keep].to_vec();
        for _ in 0..1 + rng.next(2) {
            next += 1;
            frames.push(if frames.len() > 8 {
                format!("kernel_path_{next}_[k]")
            } else {
                format!("{comm}_code_{next}")
            });
        }
        stacks.insert(format!("{comm};{}", frames.join(";")), 1 + rng.next(10));
        seen.push(frames);
    }
    stacks
        .into_iter()
        .map(|(s, n)| format!("{s} {n}\n"))
        .collect()
}

/// The `quick` study's shape: four servers at 1 core on the tiny file,
/// levels 10, 50, 100 and 200, each step diagnosed with a profile of 600
/// distinct stacks, and every pair of servers compared over the sweep.
pub fn quick_run() -> RunData {
    let mut run = crate::common::rich_run();
    let names = ["nginx", "lighttpd", "apache2-event", "h2o"];
    run.servers.truncate(3);
    let mut h2o = run.servers[0].clone();
    h2o.name = "h2o".into();
    h2o.recipe = "h2o".into();
    run.servers.push(h2o);
    run.steps.clear();
    run.comparisons.clear();
    for (si, name) in names.iter().enumerate() {
        for (li, conc) in [10u32, 50, 100, 200].into_iter().enumerate() {
            let mut step = crate::common::step(
                name,
                1,
                "tiny",
                conc,
                10_000.0 - 1_000.0 * si as f64,
                7,
                8 << 20,
            );
            let comm = name.split('-').next().unwrap();
            step.diagnosis = Some(Diagnosis {
                tool: "perf stat".into(),
                seconds: 1.0,
                requests: 9_000,
                profile: Some(profile(&server_like(comm, (si * 4 + li) as u64 + 1, 600))),
                ..Diagnosis::default()
            });
            run.steps.push(step);
        }
    }
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            run.comparisons.push(throng_testkit::model::comparison(
                a,
                b,
                None,
                [0.9, 0.88, 0.92],
                96,
                Decision::Lower,
            ));
        }
    }
    run
}
