//! A real process tree for the tests that sample one: a python script run
//! with its standard input and output piped, whose printed lines the test
//! reads (a child's pid, a "ready") and whose standard input tells it when
//! to go on.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};

/// A parent that says "ready", forks a child when told to and prints the
/// child's pid; both end by themselves within 30 s should the test die
/// first.
pub(crate) const FORK_ON_CUE: &str = "import os, sys, time\n\
    print('ready', flush=True)\n\
    sys.stdin.readline()\n\
    pid = os.fork()\n\
    if pid == 0:\n    time.sleep(30); os._exit(0)\n\
    print(pid, flush=True)\n\
    time.sleep(30)\n";

pub(crate) struct Forker {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Forker {
    pub(crate) fn run(script: &str) -> Forker {
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Forker { child, out }
    }

    /// [`FORK_ON_CUE`] run, once it has said it is ready.
    pub(crate) fn ready_to_fork() -> Forker {
        let mut p = Forker::run(FORK_ON_CUE);
        assert_eq!(p.line(), "ready");
        p
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The script's next line, without its end.
    pub(crate) fn line(&mut self) -> String {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    /// The script's next line, as a pid it printed.
    pub(crate) fn pid_line(&mut self) -> i32 {
        self.line().parse().unwrap()
    }

    /// A line to the script's standard input: its cue to go on.
    pub(crate) fn go_on(&mut self) {
        writeln!(self.child.stdin.as_mut().unwrap()).unwrap();
    }

    /// Kills `forked` (its child) and the script, and reaps the script.
    pub(crate) fn end(self, forked: i32) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(forked),
            nix::sys::signal::Signal::SIGKILL,
        );
        self.stop();
    }

    /// Kills the script before it forked, and reaps it.
    pub(crate) fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
