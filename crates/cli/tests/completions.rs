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
            "opts=\"-h -V --help --version load lab servers report compare doctor completions help\""
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
        err.starts_with("error: invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, elvish, fish, powershell, zsh]"),
        "{err}"
    );
}
