//! `throng lab` with its standard output in a pipe, as CI runs it: one
//! plain line per step as it ends, and `--help` naming every built-in
//! study.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

const THRONG: &str = env!("CARGO_BIN_EXE_throng");

/// Each line printed, with or without `--quiet`, stdout a pipe.
fn lab_lines(quiet: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("pipes.toml");
    std::fs::write(
        &study,
        "name = \"pipes\"\nservers = [\"nginx\"]\nworkloads = [\"tiny\"]\ncores = [1]\n\
         concurrency = [2, 4]\nwarmup_seconds = 0.1\ndiagnose = false\n\
         [rounds]\nseconds = 0.2\nwarmup_seconds = 0.1\nmin = 3\nmax = 3\nlaunches = 1\n",
    )
    .unwrap();
    let mut cmd = Command::new(THRONG);
    cmd.args(["lab", study.to_str().unwrap(), "--db"])
        .arg(dir.path().join("pipes.db"))
        .stdin(Stdio::null());
    if quiet {
        cmd.arg("--quiet");
    }
    let out = support::run_bounded(cmd, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn assert_one_line_per_step(lines: &[String]) {
    assert!(lines[0].starts_with("run "), "{lines:?}");
    assert!(lines[0].ends_with(": 2 steps, under a minute"), "{lines:?}");
    let steps: Vec<&String> = lines
        .iter()
        .filter(|l| {
            l.starts_with("nginx            1 core  tiny        c=") && l.contains(" req/s ")
        })
        .collect();
    assert_eq!(steps.len(), 2, "{lines:?}");
    assert!(steps[0].starts_with("nginx            1 core  tiny        c=2     "));
    assert!(steps[1].starts_with("nginx            1 core  tiny        c=4     "));
    assert!(steps.iter().all(|l| l.contains("3 rounds")));
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("run ") && last.contains(" stored in "),
        "{lines:?}"
    );
    // Plain text: no bar, no escape sequence, no carriage return.
    assert!(lines
        .iter()
        .all(|l| !l.contains('\x1b') && !l.contains('\r')));
}

#[test]
fn each_step_is_a_line_when_stdout_is_a_pipe() {
    assert_one_line_per_step(&lab_lines(false));
}

#[test]
fn quiet_prints_the_same_lines() {
    assert_one_line_per_step(&lab_lines(true));
}

#[test]
fn help_names_every_built_in_study_with_its_description() {
    let out = Command::new(THRONG)
        .args(["lab", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    let listed = help
        .split("Built-in studies:\n")
        .nth(1)
        .expect("a list of built-in studies");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../lab/studies");
    let mut studies: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    studies.sort();
    assert_eq!(studies.len(), 8);
    for name in &studies {
        let text = std::fs::read_to_string(format!("{dir}/{name}.toml")).unwrap();
        let description = text
            .lines()
            .find_map(|l| l.strip_prefix("description = \""))
            .and_then(|d| d.strip_suffix('"'))
            .unwrap();
        let line = format!("  {name:<13} {description}\n");
        assert!(listed.contains(&line), "{name} missing from:\n{listed}");
    }
    assert_eq!(listed.lines().count(), studies.len());
}
