//! A rich, deterministic run: several servers, core counts and workloads, a
//! failed step, a suspect step, and hostile strings wherever a server or a
//! user can put text.
#![allow(dead_code)]

use std::collections::BTreeMap;

use throng_model::*;

pub const HOSTILE: &str = "<script>alert('x')</script>";

pub fn round(index: u32, rps: f64, body_per_req: u64, p50: u64, p99: u64, pss: u64) -> RoundRecord {
    let duration = 2.0;
    let completed = (rps * duration).round() as u64;
    let body = completed * body_per_req;
    let mut status = BTreeMap::new();
    status.insert("200".to_string(), completed);
    RoundRecord {
        index,
        summary: Summary {
            schema: 1,
            model: "closed".into(),
            urls: 1,
            threads: 1,
            keep_alive: true,
            started_unix_s: 1_700_000_000.0 + f64::from(index) * 3.0,
            duration_s: duration,
            completed,
            sent: completed,
            requests_per_sec: rps,
            bytes_read: body + completed * 200,
            body_bytes: body,
            mb_per_sec: body as f64 / duration / 1e6,
            latency_us: Latency {
                count: completed,
                min: p50 / 4,
                mean: p50 as f64 * 1.1,
                stdev: p50 as f64 / 3.0,
                p50,
                p75: p50 * 3 / 2,
                p90: p50 * 2,
                p99,
                p999: p99 * 2,
                p9999: p99 * 3,
                max: p99 * 4,
            },
            status,
            ..Summary::default()
        },
        server: ServerUsage {
            cpu_user_s: completed as f64 * 12e-6,
            cpu_sys_s: completed as f64 * 20e-6,
            rss_peak_bytes: pss * 2,
            rss_end_bytes: pss * 2,
            pss_peak_bytes: pss,
            pss_end_bytes: pss,
            processes: 2,
            threads: 2,
            wall_s: duration,
            ..ServerUsage::default()
        },
        histogram: Vec::new(),
        block: None,
    }
}

/// Rounds of a step with a fixed relative jitter pattern.
pub fn step(
    server: &str,
    cores: u32,
    workload: &str,
    conc: u32,
    base_rps: f64,
    body: u64,
    pss: u64,
) -> StepRecord {
    let jitter = [-0.012, 0.004, 0.008, -0.003, 0.006];
    let rounds: Vec<RoundRecord> = jitter
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let rps = (base_rps * (1.0 + j)).round();
            let p50 = (f64::from(conc) / rps * 1e6) as u64;
            round(i as u32, rps, body, p50, p50 * 3 + 200, pss)
        })
        .collect();
    let rps: Vec<f64> = rounds.iter().map(|r| r.summary.requests_per_sec).collect();
    StepRecord {
        server: server.into(),
        cores,
        workload: workload.into(),
        concurrency: conc,
        status: StepStatus::Ok,
        failure: None,
        log_tail: None,
        server_cpus: (0..cores as usize).collect(),
        client_cpus: vec![cores as usize],
        shared_cores: false,
        throughput: throng_stats::estimate(&rps),
        rounds,
        verdict: Verdict::valid(),
        diagnosis: None,
    }
}

pub fn server(name: &str, version: &str, model: &str, exe: u64, config: &str) -> ServerRecord {
    ServerRecord {
        name: name.into(),
        recipe: name.into(),
        version: version.into(),
        package: name.into(),
        model: model.into(),
        exe_bytes: exe,
        configs: vec![ConfigFile {
            path: format!("/run/throng/{name}/{name}.conf"),
            content: config.into(),
        }],
        ..ServerRecord::default()
    }
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
    RunData {
        run: RunRecord {
            id: 7,
            study: "quick".into(),
            study_toml: "name = \"quick\"\nservers = [\"nginx\", \"lighttpd\", \"apache2-event\"]\nworkloads = [\"tiny\", \"large\"]\ncores = [1, 2]\nconcurrency = [10, 50, 100, 200]\n".into(),
            started_unix_s: 1_700_000_000.0,
            finished_unix_s: Some(1_700_000_170.0),
            complete: true,
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
    run
}
