//! A rich, deterministic run: several servers, core counts and workloads, a
//! failed step, a suspect step, and hostile strings wherever a server or a
//! user can put text.
#![allow(dead_code)]

use std::collections::BTreeMap;

use throng_model::*;

pub const HOSTILE: &str = "<script>alert('x')</script>";

pub use throng_testkit::model::{round, server};

/// The test kit's step, with the throughput the report's statistics
/// estimate from its rounds.
pub fn step(
    server: &str,
    cores: u32,
    workload: &str,
    conc: u32,
    base_rps: f64,
    body: u64,
    pss: u64,
) -> StepRecord {
    let mut step = throng_testkit::model::step(server, cores, workload, conc, base_rps, body, pss);
    let rps: Vec<f64> = step
        .rounds
        .iter()
        .map(|r| r.summary.requests_per_sec)
        .collect();
    step.throughput = throng_stats::estimate(&rps);
    step
}

pub fn rich_run() -> RunData {
    let servers = vec![
        server(
            "nginx",
            "1.22.1",
            "event loop",
            1_234_567,
            "worker_processes 1;\nkeepalive_timeout 60s;\n",
        ),
        server(
            "lighttpd",
            "1.4.69",
            "event loop",
            300_000,
            "server.max-worker = 1\n",
        ),
        server(
            "apache2-event",
            HOSTILE,
            "processes+threads",
            700_000,
            "# a comment with </pre><script>alert(1)</script>\nKeepAliveTimeout 60\n",
        ),
    ];
    let factor = [1.0, 0.8, 0.6];
    let mut steps = Vec::new();
    for (si, s) in servers.iter().enumerate() {
        for cores in [1u32, 2] {
            for conc in [10u32, 50, 100, 200] {
                let base = 10_000.0
                    * f64::from(cores)
                    * factor[si]
                    * (1.0 - (-f64::from(conc) / 60.0).exp());
                steps.push(step(
                    &s.name,
                    cores,
                    "tiny",
                    conc,
                    base.round(),
                    7,
                    (8 + si as u64 * 10) << 20,
                ));
            }
        }
        for conc in [1u32, 4] {
            steps.push(step(
                &s.name,
                1,
                "large",
                conc,
                5.0 * factor[si] * f64::from(conc.min(2)),
                21_000_000,
                (9 + si as u64 * 10) << 20,
            ));
        }
    }
    // A suspect step and a failed one with hostile error text.
    let i = steps
        .iter()
        .position(|s| s.server == "lighttpd" && s.cores == 2 && s.concurrency == 200)
        .unwrap();
    steps[i].verdict.push(
        ReasonCode::ClientBound,
        "the load generator used 97% of its core",
    );
    let i = steps
        .iter()
        .position(|s| s.server == "apache2-event" && s.cores == 2 && s.concurrency == 200)
        .unwrap();
    steps[i].status = StepStatus::Failed;
    steps[i].rounds.clear();
    steps[i].throughput = Estimate::default();
    steps[i].failure = Some(format!("server stopped answering: {HOSTILE}"));
    steps[i].log_tail = Some(
        "[mpm_event] AH00484: server reached MaxRequestWorkers\n<img src=x onerror=alert(2)>"
            .into(),
    );

    let mut sysctls = BTreeMap::new();
    sysctls.insert("net.core.somaxconn".to_string(), "4096".to_string());
    sysctls.insert("net.ipv4.tcp_tw_reuse".to_string(), "2".to_string());
    let mut servers = servers;
    // nginx as the lab probes it: the feature table of ACME's thttpd "Web
    // Server Comparisons" and a max-users search.
    servers[0].installed_bytes = 3_276_800;
    servers[0].features = Feature::ALL
        .into_iter()
        .map(|f| FeatureResult {
            name: f,
            status: match f {
                Feature::Sendfile => FeatureStatus::No,
                Feature::Http2 | Feature::Tls => FeatureStatus::Untested,
                _ => FeatureStatus::Yes,
            },
            evidence: match f {
                Feature::BasicAuth => "401 without credentials, 200 with".into(),
                Feature::Throttling => "measured 131 KB/s against 131 KB/s configured".into(),
                other => format!("{} <probe>", other.name()),
            },
        })
        .collect();
    servers[0].max_users = vec![MaxUsers {
        cores: 1,
        workload: "small-files".into(),
        patience_s: 3.0,
        level: Some(2000),
        broke_at: Some(4000),
        broke_by: "120 timeouts".into(),
    }];
    // The search past its tiny sweep at 1 core (200 good), doubling until
    // 3,200 broke: the summary's max users is this, not the sweep's 200+.
    servers[0].max_users.push(MaxUsers {
        cores: 1,
        workload: "tiny".into(),
        patience_s: 3.0,
        level: Some(1600),
        broke_at: Some(3200),
        broke_by: "37 resets".into(),
    });
    let mut run = RunData {
        run: RunRecord {
            id: 7,
            study: "quick".into(),
            study_toml: "name = \"quick\"\nservers = [\"nginx\", \"lighttpd\", \"apache2-event\"]\nworkloads = [\"tiny\", \"large\"]\ncores = [1, 2]\nconcurrency = [10, 50, 100, 200]\n".into(),
            started_unix_s: 1_700_000_000.0,
            finished_unix_s: Some(1_700_000_170.0),
            complete: true,
            threshold: None,
            environment: Environment {
                hostname: "bench-1".into(),
                cpu_model: "Intel(R) Xeon(R) CPU @ 2.20GHz".into(),
                cpus_online: 4,
                memory_bytes: 24 << 30,
                kernel: "6.1.0-18-amd64".into(),
                os: "Debian GNU/Linux 12 (bookworm)".into(),
                sysctls,
                nofile: (1024, 524_288),
                throng_version: "0.1.0".into(),
                ..Default::default()
            },
            doctor: vec![
                Finding {
                    check: "cpu.governor".into(),
                    severity: Severity::Warn,
                    message: "CPU frequency governor is powersave".into(),
                    fix: "cpupower frequency-set -g performance".into(),
                },
                Finding {
                    check: "limits.nofile".into(),
                    severity: Severity::Ok,
                    message: "open-file limit 524288".into(),
                    fix: String::new(),
                },
            ],
            baseline: Some("nginx".into()),
        },
        servers,
        steps,
        comparisons: Vec::new(),
    };
    fairness(&mut run);
    run
}

/// What the lab stores to make a comparison fair and explained: profiles
/// and the settings behind each server (some differ), diagnostic rounds
/// (one where syscalls could not be counted), and paired ratios consistent
/// with the steps: lighttpd at 0.8 of nginx, apache2-event at 0.6.
fn fairness(run: &mut RunData) {
    use Setting::*;
    let entry = |setting, value: &str, source, detail: &str| ParityEntry {
        setting,
        value: value.into(),
        source,
        detail: detail.into(),
    };
    run.servers[0].parity = vec![
        entry(
            AccessLog,
            "on",
            Source::Config,
            "access_log /var/log/nginx/access.log;",
        ),
        entry(Sendfile, "on", Source::Config, "sendfile on;"),
        entry(OpenFileCache, "off", Source::Default, "open_file_cache off"),
        entry(
            KeepAliveTimeout,
            "60s",
            Source::Config,
            "keepalive_timeout 60s;",
        ),
        entry(Workers, "1", Source::Lab, ""),
    ];
    run.servers[1].profile = Profile::Tuned;
    run.servers[1].parity = vec![
        entry(
            AccessLog,
            "off",
            Source::Live,
            "the logs grew 0 bytes in 1,200 requests",
        ),
        entry(Sendfile, "on", Source::Default, "server.network-backend"),
        entry(
            OpenFileCache,
            "on",
            Source::Default,
            "server.stat-cache-engine",
        ),
        entry(
            KeepAliveTimeout,
            "5s",
            Source::Default,
            "server.max-keep-alive-idle = 5",
        ),
        entry(
            KeepAliveRequests,
            "1000",
            Source::Default,
            "server.max-keep-alive-requests = 1000",
        ),
        entry(Workers, "1", Source::Lab, ""),
    ];
    run.servers[2].parity = vec![
        entry(
            AccessLog,
            "on",
            Source::Config,
            "CustomLog ${APACHE_LOG_DIR}/access.log",
        ),
        entry(Sendfile, "off", Source::Default, "EnableSendfile Off"),
        entry(
            KeepAliveTimeout,
            "60s",
            Source::Config,
            "KeepAliveTimeout 60",
        ),
        entry(KeepAliveRequests, "100", Source::Default, HOSTILE),
        entry(Workers, "1", Source::Lab, ""),
    ];

    let counted = |calls: &[(&str, f64)], total: f64, log: f64| Diagnosis {
        tool: "perf stat".into(),
        unavailable: None,
        seconds: 1.0,
        requests: 9_000,
        syscalls_per_request: calls.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        total_per_request: Some(total),
        voluntary_switches_per_request: 0.2,
        involuntary_switches_per_request: 0.05,
        log_bytes_per_request: log,
        profile: None,
    };
    // Without an open-file cache nginx opens, stats and closes the file on
    // every request; lighttpd's stat cache does not.
    let nginx = counted(
        &[
            ("openat", 1.0),
            ("newfstatat", 1.0),
            ("close", 1.0),
            ("recvfrom", 1.0),
            ("writev", 1.0),
            ("epoll_wait", 0.08),
            ("accept4", 0.004),
        ],
        5.13,
        92.0,
    );
    let lighttpd = counted(
        &[
            ("recvfrom", 1.0),
            ("writev", 1.0),
            ("epoll_wait", 0.1),
            ("close", 0.02),
            ("newfstatat", 0.02),
        ],
        2.19,
        0.0,
    );
    let apache = Diagnosis {
        unavailable: Some("perf_event_paranoid is 3 and throng lacks CAP_PERFMON".into()),
        seconds: 1.0,
        requests: 5_000,
        voluntary_switches_per_request: 0.6,
        involuntary_switches_per_request: 0.1,
        log_bytes_per_request: 95.0,
        ..Diagnosis::default()
    };
    // lighttpd was not diagnosed at 1 core, c=200: the highest level both
    // have there is 100.
    for (server, cores, conc, d) in [
        ("nginx", 1, 100, &nginx),
        ("nginx", 1, 200, &nginx),
        ("nginx", 2, 200, &nginx),
        ("lighttpd", 1, 100, &lighttpd),
        ("lighttpd", 2, 200, &lighttpd),
        ("apache2-event", 1, 200, &apache),
    ] {
        let s = run
            .steps
            .iter_mut()
            .find(|s| {
                s.server == server
                    && s.workload == "tiny"
                    && s.cores == cores
                    && s.concurrency == conc
            })
            .unwrap();
        s.diagnosis = Some(d.clone());
    }

    let pairs = [
        ("nginx", "lighttpd", 0.8),
        ("nginx", "apache2-event", 0.6),
        ("lighttpd", "apache2-event", 0.75),
    ];
    let comparison = |a: &str,
                      b: &str,
                      workload: &str,
                      cores: u32,
                      concurrency: Option<u32>,
                      ratio: f64,
                      pairs: u32| {
        let half = if concurrency.is_some() { 0.015 } else { 0.008 };
        Comparison {
            a: a.into(),
            b: b.into(),
            workload: workload.into(),
            cores,
            concurrency,
            rate: None,
            ratio,
            ci_low: ratio * (1.0 - half),
            ci_high: ratio * (1.0 + half),
            pairs,
            decision: if ratio > 1.0 {
                Decision::Higher
            } else {
                Decision::Lower
            },
            interval: throng_model::IntervalKind::OrderStatistic,
            launch_ratios: Vec::new(),
            next_run: None,
            next_run_runs: None,
            runs_differ: false,
        }
    };
    for cores in [1, 2] {
        for (a, b, ratio) in pairs {
            // apache2-event failed at 2 cores, c=200: no pairs there.
            let levels: Vec<u32> = [10, 50, 100, 200]
                .into_iter()
                .filter(|c| !(cores == 2 && *c == 200 && b == "apache2-event"))
                .collect();
            let pooled = 5 * levels.len() as u32;
            run.comparisons
                .push(comparison(a, b, "tiny", cores, None, ratio, pooled));
            for c in levels {
                run.comparisons
                    .push(comparison(a, b, "tiny", cores, Some(c), ratio, 5));
            }
        }
    }
    // The pair without the baseline stored the other way round, as a lab
    // may: readers see it turned to B over A where it is read against A.
    for (a, b, ratio) in pairs {
        let (a, b, ratio) = if a == "lighttpd" {
            (b, a, 1.0 / ratio)
        } else {
            (a, b, ratio)
        };
        run.comparisons
            .push(comparison(a, b, "large", 1, None, ratio, 10));
        for c in [1, 4] {
            run.comparisons
                .push(comparison(a, b, "large", 1, Some(c), ratio, 5));
        }
    }
}

/// The same run measured again, with chosen changes per server: nginx 10%
/// slower on tiny, lighttpd 1% faster (inside the noise threshold).
pub fn second_run() -> RunData {
    let mut run = rich_run();
    run.run.id = 8;
    for s in &mut run.steps {
        let f = match (s.server.as_str(), s.workload.as_str()) {
            ("nginx", "tiny") => 0.9,
            ("lighttpd", "tiny") => 1.01,
            _ => 1.0,
        };
        scale(s, f);
    }
    run
}

/// A step's rounds `f` times as fast, and its estimate with them.
pub fn scale(s: &mut StepRecord, f: f64) {
    for r in &mut s.rounds {
        r.summary.requests_per_sec = (r.summary.requests_per_sec * f).round();
    }
    let rps: Vec<f64> = s
        .rounds
        .iter()
        .map(|r| r.summary.requests_per_sec)
        .collect();
    if !rps.is_empty() {
        s.throughput = throng_stats::estimate(&rps);
    }
}

fn host(host: &str, role: &str, cpu_model: &str, cpus: u32, memory: u64) -> HostRecord {
    HostRecord {
        host: host.into(),
        role: serde_json::from_value(serde_json::Value::from(role)).unwrap(),
        arch: "x86_64".into(),
        cpu_model: cpu_model.into(),
        cpus_online: cpus,
        memory_bytes: memory,
        kernel: "6.1.0-18-amd64".into(),
        nofile: (1024, 524_288),
        throng_build: "0.1.0".into(),
        ..HostRecord::default()
    }
}

fn finding(check: &str, severity: Severity, message: &str) -> Finding {
    Finding {
        check: check.into(),
        severity,
        message: message.into(),
        fix: String::new(),
    }
}

/// The fixture run as if spread over hosts: servers on one server host over
/// ssh, load from two client hosts, one of them reporting hostile text.
/// The run's own findings carry each client host's, named, as the lab
/// stores them.
pub fn spread_run() -> RunData {
    let mut run = rich_run();
    let mut server = host(
        "ssh://root@198.18.0.13",
        "server",
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        4,
        24 << 30,
    );
    server.clock_offset_ms = 0.012;
    server.clock_uncertainty_ms = 0.04;
    server.doctor = run.run.doctor.clone();
    let mut a = host(
        "ssh://root@198.18.0.21",
        "client",
        "AMD EPYC 7B13",
        8,
        32 << 30,
    );
    a.nofile = (1_048_576, 1_048_576);
    a.clock_offset_ms = -0.0311;
    a.clock_uncertainty_ms = 0.052;
    a.rtt_ms = Some(0.046);
    a.mtu = Some(1500);
    a.interface = Some("eth0".into());
    a.link_mbps = Some(10_000);
    a.doctor = vec![
        finding("limits.nofile", Severity::Ok, "open-file limit 1048576"),
        finding(
            "cpu.governor",
            Severity::Ok,
            "CPU frequency governor is performance",
        ),
    ];
    let mut b = host("ssh://load_2@client-2:2222", "client", HOSTILE, 1, 0);
    b.kernel = "6.1.0-18-cloud-amd64".into();
    b.clock_offset_ms = 0.0002;
    b.clock_uncertainty_ms = 0.061;
    b.rtt_ms = Some(0.0512);
    b.mtu = Some(9001);
    b.interface = Some("ens5|x".into());
    b.doctor = vec![
        finding(
            "limits.nofile",
            Severity::Fail,
            "open-file limit 1024 is below the 2 × 200 connections",
        ),
        finding(
            "cpu.governor",
            Severity::Warn,
            "CPU frequency governor is <powersave>",
        ),
        finding("net.ports", Severity::Ok, "28,231 ephemeral ports"),
    ];
    for h in [&a, &b] {
        for f in &h.doctor {
            run.run.doctor.push(Finding {
                message: format!("client host {}: {}", h.host, f.message),
                ..f.clone()
            });
        }
    }
    let env = &mut run.run.environment;
    env.topology = "2 client hosts → 1 server host, 0.046 ms RTT".into();
    env.hosts = vec![server, a, b];
    run
}

/// A run as `throng load URL --save` stores it: one step against a server
/// throng did not start, so it has no version, package or model, its cores
/// are unknown (0) and nothing of it was sampled; the study text is the
/// command line.
pub fn load_run() -> RunData {
    let mut r = round(0, 2_500.0, 612, 1_900, 4_800, 0);
    r.server = ServerUsage::default();
    let rps = r.summary.requests_per_sec;
    let step = StepRecord {
        client_cpus: vec![0, 1],
        throughput: Estimate {
            mean: rps,
            median: rps,
            ci_low: rps,
            ci_high: rps,
            n: 1,
        },
        rounds: vec![r],
        ..StepRecord::new("127.0.0.1:8080", 0, "/", 5)
    };
    RunData {
        run: RunRecord {
            id: 12,
            study: "load".into(),
            study_toml: "throng load http://127.0.0.1:8080/ -n 500 -c 5 --save".into(),
            started_unix_s: 1_700_000_000.0,
            finished_unix_s: Some(1_700_000_002.0),
            complete: true,
            threshold: None,
            environment: Environment {
                hostname: "bench-1".into(),
                cpu_model: "Intel(R) Xeon(R) CPU @ 2.20GHz".into(),
                cpus_online: 4,
                memory_bytes: 24 << 30,
                kernel: "6.1.0-18-amd64".into(),
                os: "Debian GNU/Linux 12 (bookworm)".into(),
                nofile: (1024, 524_288),
                throng_version: "0.1.0".into(),
                ..Default::default()
            },
            doctor: Vec::new(),
            baseline: None,
        },
        servers: vec![ServerRecord {
            name: "127.0.0.1:8080".into(),
            recipe: "url".into(),
            ..ServerRecord::default()
        }],
        steps: vec![step],
        comparisons: Vec::new(),
    }
}

/// The rich run with every server of tiny at 1 core started three times,
/// four blocks a launch: apache2-event's third launch ran 12% faster than
/// its first two, the others held, each slice ±1% around its launch. Its
/// study asks for 3% precision; its pooled comparisons at 1 core carry
/// each launch's ratio, and lighttpd's against nginx at 2 cores had too
/// few pairs to be bounded.
pub fn launched_run() -> RunData {
    let mut run = rich_run();
    run.run.id = 9;
    run.run
        .study_toml
        .push_str("\n[rounds]\nprecision = 0.03\n");
    let noise = [0.01, -0.01, 0.005, -0.005];
    let servers = ["nginx", "lighttpd", "apache2-event"];
    for s in &mut run.steps {
        if s.workload != "tiny" || s.cores != 1 || s.rounds.is_empty() {
            continue;
        }
        let si = servers.iter().position(|n| *n == s.server).unwrap();
        let base = s.rounds[0].summary.requests_per_sec;
        let template = s.rounds[0].clone();
        s.rounds = (0..12u32)
            .map(|block| {
                let launch = block / 4;
                let boost = if s.server == "apache2-event" && launch == 2 {
                    1.12
                } else {
                    1.0
                };
                // The machine drifts block by block, alike for every server.
                let drift = 1.0 + 0.02 * f64::from(block % 3);
                let mut r = template.clone();
                r.index = block;
                r.block = Some(block);
                r.launch = Some(launch);
                r.summary.requests_per_sec =
                    base * drift * boost * (1.0 + noise[(block as usize + si) % 4]);
                r
            })
            .collect();
        let rps: Vec<f64> = s
            .rounds
            .iter()
            .map(|r| r.summary.requests_per_sec)
            .collect();
        s.throughput = throng_stats::estimate(&rps);
    }
    for c in &mut run.comparisons {
        match (c.workload.as_str(), c.cores, c.concurrency, c.b.as_str()) {
            ("tiny", 1, None, "lighttpd") => c.launch_ratios = vec![0.79, 0.8, 0.81],
            ("tiny", 1, None, "apache2-event") if c.a == "nginx" => {
                c.launch_ratios = vec![0.58, 0.58, 0.65]
            }
            ("tiny", 2, None, "lighttpd") => {
                c.interval = IntervalKind::Unbounded;
                (c.ci_low, c.ci_high, c.pairs) = (c.ratio, c.ratio, 3);
                c.decision = Decision::Undecided;
            }
            _ => {}
        }
    }
    run
}
