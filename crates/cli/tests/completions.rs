//! `throng completions SHELL`: scripts generated from the same option
//! definitions the command parses, so a new flag completes without anyone
//! editing a script.

mod support;

use std::time::Duration;

use support::{run_bounded, throng};

fn script(shell: &str) -> (i32, String, String) {
    let mut c = throng();
    c.args(["completions", shell]);
    let out = run_bounded(c, Duration::from_secs(30));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bash_zsh_and_fish_complete_every_command_and_flag() {
    let (code, bash, _) = script("bash");
    assert_eq!(code, 0);
    assert!(bash.starts_with("_throng() {\n"), "{bash}");
    assert!(
        bash.contains(
            "opts=\"-h -V --help --version load lab servers report compare runs doctor hosts agent completions man help\""
        ),
        "{bash}"
    );
    assert!(bash.contains("complete -F _throng -o nosort -o bashdefault -o default throng"));
    // Each command's own flags, e.g. the lab's newest.
    assert_eq!(bash.matches("--no-diagnose").count(), 1);

    let (code, zsh, _) = script("zsh");
    assert_eq!(code, 0);
    assert!(zsh.starts_with("#compdef throng\n"), "{zsh}");

    let (code, fish, _) = script("fish");
    assert_eq!(code, 0);
    for cmd in [
        "load",
        "lab",
        "servers",
        "report",
        "compare",
        "doctor",
        "completions",
    ] {
        assert!(
            fish.contains(&format!("-f -a \"{cmd}\"")),
            "fish lacks {cmd}: {fish}"
        );
    }
}

#[test]
fn an_unknown_shell_is_one_clear_error_and_exit_2() {
    let (code, out, err) = script("tcsh");
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err == "throng: invalid value 'tcsh' for '<SHELL>' [possible values: bash, elvish, fish, powershell, zsh]\n",
        "{err}"
    );
}

#[test]
fn the_manual_is_generated_from_the_commands_own_options() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .arg("man")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH throng 1  \"throng 0.1.0\""), "{page}");
    for cmd in ["load", "lab", "hosts", "report", "compare", "doctor"] {
        assert!(
            page.contains(&format!("throng\\-{cmd}(1)")),
            "{cmd} missing: {page}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["man", "--dir"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "throng-compare.1",
            "throng-completions.1",
            "throng-doctor.1",
            "throng-hosts.1",
            "throng-lab.1",
            "throng-load.1",
            "throng-man.1",
            "throng-report.1",
            "throng-runs.1",
            "throng-servers.1",
            "throng.1"
        ]
    );
    let load = std::fs::read_to_string(dir.path().join("throng-load.1")).unwrap();
    // Every option of `throng load --help` is in its page, --hosts among them.
    for opt in ["\\-\\-rate", "\\-\\-hosts", "\\-\\-close", "\\-\\-timeline"] {
        assert!(load.contains(opt), "{opt} missing");
    }
}

/// Standard output full or closed: one line, or quiet for a reader that
/// stopped; a panic (exit 101) before.
#[test]
fn a_full_or_closed_standard_output_is_no_panic() {
    for args in ["completions zsh", "servers"] {
        // The shell sends standard output to /dev/full, and the test reads
        // only standard error.
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("exec \"$0\" {args} > /dev/full"))
            .arg(env!("CARGO_BIN_EXE_throng"));
        let out = run_bounded(cmd, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            "throng: cannot write to standard output: No space left on device (os error 28)",
            "{args:?}"
        );
    }
    // A pipe whose reader has gone: the command ends as SIGPIPE would end
    // it, without a word.
    // Its reader closed before the command starts, so the first write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = throng()
        .args(["completions", "bash"])
        .stdout(writer)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = support::wait_until(&mut child, deadline)
        .unwrap_or_else(|| panic!("still running after 30 s"));
    assert_eq!(status.code(), Some(141));
}
