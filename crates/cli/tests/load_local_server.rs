//! `throng load` against a server on this machine: the processes holding
//! the target's listener are found and sampled over the run, and the
//! verdict judges whether the server got its CPU, as the lab's does.

mod support;

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use support::{run_bounded, summary, summary_line, throng_json, Nginx};
use throng_testkit::http::{ok, Server};
use throng_testkit::wait::poll_until;

/// The two tests on CPU 0 take turns: the spinner of one would starve the
/// other's server.
static CPU0: Mutex<()> = Mutex::new(());

/// A busy loop pinned to one CPU, killed however the test ends.
struct Spinner(Child);

impl Spinner {
    fn on(cpu: usize) -> Spinner {
        let child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .stdout(Stdio::null())
            .spawn()
            .expect("taskset");
        Spinner(child)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nginx's master (from its pid file) and its one worker.
fn nginx_pids(ng: &Nginx) -> Vec<i32> {
    let master: i32 = std::fs::read_to_string(ng.dir.path().join("nginx.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let worker = poll_until(Instant::now() + Duration::from_secs(10), || {
        children_of(master).first().copied()
    })
    .expect("nginx started no worker");
    let mut pids = vec![master, worker];
    pids.sort_unstable();
    pids
}

fn children_of(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                let after = &s[s.rfind(')').unwrap() + 1..];
                after.split_whitespace().nth(1) == Some(&parent.to_string())
            })
        })
        .collect()
}

/// Pins every thread of each of `pids` to `cpu`.
fn pin(pids: &[i32], cpu: usize) {
    for p in pids {
        let out = Command::new("taskset")
            .args(["-a", "-p", "-c", &cpu.to_string(), &p.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

/// `throng load --json` pinned to CPU 1, for 2 s on one thread.
fn load_on_cpu1(url: &str) -> serde_json::Value {
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", "1", env!("CARGO_BIN_EXE_throng")])
        .args(["load", url, "-d", "2s", "-c", "4", "-t", "1", "--json"]);
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn codes(j: &serde_json::Value) -> Vec<String> {
    j["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

fn pids_of(j: &serde_json::Value) -> Vec<i32> {
    serde_json::from_value(j["local_server"]["pids"].clone()).unwrap()
}

#[test]
fn a_server_sharing_its_core_with_a_busy_process_is_starved() {
    let _cpu0 = CPU0.lock().unwrap_or_else(|e| e.into_inner());
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let pids = nginx_pids(&ng);
    pin(&pids, 0);
    let _spinner = Spinner::on(0);
    let j = load_on_cpu1(&ng.url("/"));
    assert_eq!(pids_of(&j), pids, "{:#}", j["local_server"]);
    assert_eq!(j["local_server"]["name"], "nginx");
    assert_eq!(j["local_server"]["cores"], 1);
    assert!(
        codes(&j).contains(&"server_starved".to_string()),
        "{:#}\n{:#}",
        j["verdict"],
        j["local_server"]
    );
}

#[test]
fn a_server_on_a_core_of_its_own_is_found_and_not_starved() {
    let _cpu0 = CPU0.lock().unwrap_or_else(|e| e.into_inner());
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let pids = nginx_pids(&ng);
    pin(&pids, 0);
    let j = load_on_cpu1(&ng.url("/"));
    assert_eq!(pids_of(&j), pids, "{:#}", j["local_server"]);
    assert_eq!(j["local_server"]["cores"], 1);
    let per_request = j["local_server"]["cpu_us_per_request"].as_f64().unwrap();
    assert!(per_request > 0.0, "{:#}", j["local_server"]);
    // On a shared host the hypervisor can take the core from the server
    // (it took 11% of it in one run here): then the verdict is right to
    // say so, and must name the steal.
    let usage = &j["local_server"]["usage"];
    let stolen = usage["steal_s"].as_f64().unwrap_or(0.0) / usage["wall_s"].as_f64().unwrap();
    let starved = j["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == "server_starved");
    match starved {
        None => {}
        Some(r) if stolen > 0.05 => {
            let m = r["message"].as_str().unwrap();
            assert!(m.contains("the hypervisor stole"), "{m}");
            eprintln!(
                "the hypervisor took {:.0}% of the server's core",
                stolen * 100.0
            );
        }
        Some(_) => panic!("{:#}\n{:#}", j["verdict"], j["local_server"]),
    }
}

#[test]
fn an_unpinned_server_shares_the_loads_cpus() {
    let _cpu0 = CPU0.lock().unwrap_or_else(|e| e.into_inner());
    // nginx and throng both on every CPU of this process's mask, as a
    // user who pins neither runs them.
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let j = throng_json(&["load", &ng.url("/"), "-d", "1s", "-c", "4", "-t", "1"]);
    assert_eq!(
        j["local_server"]["shared_cores"], true,
        "{:#}",
        j["local_server"]
    );
    assert!(
        codes(&j).contains(&"shared_cores".to_string()),
        "{:#}",
        j["verdict"]
    );
    // Pinned apart, it is not said.
    let pids = nginx_pids(&ng);
    pin(&pids, 0);
    let j = load_on_cpu1(&ng.url("/"));
    assert!(
        j["local_server"].get("shared_cores").is_none(),
        "{:#}",
        j["local_server"]
    );
    assert!(
        !codes(&j).contains(&"shared_cores".to_string()),
        "{:#}",
        j["verdict"]
    );
}

/// A spin takes its CPU from whoever else may run there: on the server's
/// CPUs the summary says so, pinned apart it does not.
#[test]
fn a_spin_on_the_servers_cpus_says_it_took_the_servers_time() {
    let _cpu0 = CPU0.lock().unwrap_or_else(|e| e.into_inner());
    let ng = Nginx::start(&[("index.html", b"hello!\n")]);
    let spin_line = |taskset: &[&str]| {
        let mut cmd = Command::new("taskset");
        cmd.args(taskset).arg(env!("CARGO_BIN_EXE_throng")).args([
            "load",
            &ng.url("/"),
            "-d",
            "1s",
            "-c",
            "4",
            "-t",
            "1",
            "--spin",
            "20us",
        ]);
        let text = summary(cmd);
        summary_line(&text, "spin")
            .unwrap_or_else(|| panic!("no spin line in:\n{text}"))
            .to_string()
    };
    let took = "on CPUs the server runs on too, it took time the server could have used";
    let line = spin_line(&["-c", "0,1"]);
    assert!(line.contains(took), "{line}");
    pin(&nginx_pids(&ng), 0);
    let line = spin_line(&["-c", "1"]);
    assert!(!line.contains(took), "{line}");
}

#[test]
fn a_listener_held_by_the_load_generators_own_parent_names_no_server() {
    // The test process holds the listener and is throng's parent: the
    // server's tree would hold the load generator too, and is not told.
    let s = Server::start(|mut c| {
        while c.next_request().is_some() {
            if !c.send(&ok(b"in process\n")) {
                return;
            }
        }
    });
    let j = throng_json(&["load", &s.url("/"), "-n", "200", "-c", "2", "-t", "1"]);
    assert_eq!(j["completed"], 200);
    assert!(j.get("local_server").is_none(), "{:#}", j["local_server"]);
}
