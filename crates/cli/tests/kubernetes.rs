//! The Kubernetes fleet of docs/distributed.md, checked without a cluster:
//! deploy/kubernetes/agents.yaml is a well-formed Indexed Job of as many
//! pods as the doc's study has client hosts, and the doc's `transport`
//! reaches one agent per index through a stand-in `kubectl`, each started
//! from the build the manifest's init container placed in its pod.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// The manifest as JSON, through PyYAML; `None` (said) where python3 has
/// no yaml module.
fn manifest() -> Option<Value> {
    let mut c = std::process::Command::new("python3");
    c.args([
        "-c",
        "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))",
    ])
    .stdin(std::fs::File::open(repo("deploy/kubernetes/agents.yaml")).unwrap());
    let out = support::run_bounded(c, Duration::from_secs(30));
    if !out.status.success() {
        eprintln!(
            "skipped: python3 cannot read YAML here (install python3-yaml): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The doc's study snippet: its `client_hosts` and `transport` lines.
fn snippet() -> (Vec<String>, String) {
    let doc = std::fs::read_to_string(repo("docs/distributed.md")).unwrap();
    let fleets = &doc[doc.find("## Fleets").unwrap()..];
    let block = fleets
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let line = |key: &str| {
        block
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in {block}"))
            .split("   #")
            .next()
            .unwrap()
            .trim()
            .to_string()
    };
    let hosts: Vec<String> = serde_json::from_str(&line("client_hosts")).unwrap();
    let transport: String = serde_json::from_str(&line("transport")).unwrap();
    (hosts, transport)
}

fn env_of<'a>(container: &'a Value, name: &str) -> &'a str {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no {name} in {container}"))
}

fn mount_of<'a>(container: &'a Value, volume: &str) -> &'a str {
    container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volume)
        .and_then(|m| m["mountPath"].as_str())
        .unwrap_or_else(|| panic!("no mount of {volume} in {container}"))
}

const IMAGE_THRONG: &str = "/usr/local/bin/throng";

/// Runs `kubectl get pod -o name -l ...index=N` as `pod/throng-agents-N-x7k2q`,
/// and `kubectl exec -i pod/P -- CMD...` as CMD in pod P's own directory
/// (its cache at the manifest's path under it), logging each exec.
const KUBECTL: &str = r#"#!/bin/sh
case "$1" in
get)
  [ "$2" = pod ] && [ "$3" = -o ] && [ "$4" = name ] && [ "$5" = -l ] || { echo "kubectl: unexpected $*" >&2; exit 64; }
  i=$(printf '%s\n' "$6" | tr ',' '\n' | sed -n 's|^batch.kubernetes.io/job-completion-index=||p')
  job=$(printf '%s\n' "$6" | tr ',' '\n' | sed -n 's|^job-name=||p')
  [ -n "$i" ] && [ "$job" = throng-agents ] || { echo "kubectl: no such selector $6" >&2; exit 64; }
  echo "pod/throng-agents-$i-x7k2q";;
exec)
  [ "$2" = -i ] && [ "$4" = -- ] || { echo "kubectl: unexpected $*" >&2; exit 64; }
  pod=${3#pod/}
  [ -d "$PODS/$pod" ] || { echo "Error from server (NotFound): pods \"$pod\" not found" >&2; exit 1; }
  echo "$pod" >> "$PODS/exec.log"
  shift 4
  XDG_CACHE_HOME="$PODS/$pod$CACHE" exec "$@";;
*) echo "kubectl: unexpected $*" >&2; exit 64;;
esac
"#;

#[test]
fn the_manifest_is_an_indexed_job_the_docs_transport_reaches_pod_by_pod() {
    let Some(m) = manifest() else {
        return;
    };
    let (hosts, transport) = snippet();
    assert_eq!(m["apiVersion"], "batch/v1");
    assert_eq!(m["kind"], "Job");
    let name = m["metadata"]["name"].as_str().unwrap();
    assert_eq!(name, "throng-agents");
    let spec = &m["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], spec["parallelism"]);
    let n = spec["completions"].as_u64().unwrap() as usize;
    // One client host a pod, named by its index.
    let indexes: Vec<String> = (0..n).map(|i| format!("ssh://{i}")).collect();
    assert_eq!(hosts, indexes);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let init = &pod["initContainers"][0];
    let agent = &pod["containers"][0];
    assert_eq!(init["image"], agent["image"]);
    assert_eq!(agent["command"], serde_json::json!(["sleep", "infinity"]));
    // Both see one cache: the emptyDir the init container fills.
    let cache = env_of(agent, "XDG_CACHE_HOME");
    assert_eq!(env_of(init, "XDG_CACHE_HOME"), cache);
    assert_eq!(mount_of(init, "cache"), cache);
    assert_eq!(mount_of(agent, "cache"), cache);
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(volumes
        .iter()
        .any(|v| v["name"] == "cache" && v["emptyDir"].is_object()));
    let command: Vec<&str> = init["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(command[..2], ["sh", "-c"]);
    let place = command[2];
    assert!(place.contains(&format!("{IMAGE_THRONG} agent --build")));
    assert!(place.contains(&format!("ln -sf {IMAGE_THRONG} ")));
    // The manifest's own comment gives the doc's transport.
    let text = std::fs::read_to_string(repo("deploy/kubernetes/agents.yaml")).unwrap();
    assert!(text.contains(&format!("transport = \"{transport}\"")));

    // Each pod, with the test's throng as the image's, after its init
    // container ran.
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let kubectl = bin.join("kubectl");
    std::fs::write(&kubectl, KUBECTL).unwrap();
    std::fs::set_permissions(
        &kubectl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let ours = env!("CARGO_BIN_EXE_throng");
    for i in 0..n {
        let root = pods.join(format!("{name}-{i}-x7k2q"));
        let mut c = std::process::Command::new("sh");
        c.args(["-c", &place.replace(IMAGE_THRONG, ours)])
            .env("XDG_CACHE_HOME", format!("{}{cache}", root.display()))
            .env("JOB_COMPLETION_INDEX", i.to_string());
        let out = support::run_bounded(c, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout)
            .starts_with(&format!("client host ssh://{i}: throng at ")));
    }

    let study = dir.path().join("fleet.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"fleet\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
             concurrency = [10]\nclient_hosts = {}\ntransport = {}\n\
             server_address = \"127.0.0.1\"\n",
            serde_json::to_string(&hosts).unwrap(),
            serde_json::to_string(&transport).unwrap(),
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = support::throng();
    c.args(["hosts", "check", &study.to_string_lossy(), "--json"])
        .env("PATH", path)
        .env("PODS", &pods)
        .env("CACHE", cache);
    let out = support::run_bounded(c, Duration::from_secs(120));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let clients: Vec<(&str, &str)> = j["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["role"] == "client")
        .map(|h| {
            (
                h["host"].as_str().unwrap(),
                h["facts"]["build"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let build = String::from_utf8(
        support::run_bounded(
            {
                let mut c = support::throng();
                c.args(["agent", "--build"]);
                c
            },
            Duration::from_secs(30),
        )
        .stdout,
    )
    .unwrap();
    let build = build.trim();
    let want: Vec<(&str, &str)> = indexes.iter().map(|h| (h.as_str(), build)).collect();
    assert_eq!(clients, want, "{j}");
    // One exec a pod: each found its placed build, and nothing was copied.
    let mut log: Vec<String> = std::fs::read_to_string(pods.join("exec.log"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    log.sort();
    let each: Vec<String> = (0..n).map(|i| format!("{name}-{i}-x7k2q")).collect();
    assert_eq!(log, each);
    for pod in &each {
        let placed = pods.join(format!("{pod}{cache}/throng/{build}/throng"));
        assert_eq!(std::fs::read_link(&placed).unwrap(), Path::new(ours));
    }
}
