//! The server's hardware counters over the sampler's window: `perf stat`
//! on the same processes, enabled and disabled with the sampler over its
//! own control pipe. A machine without a PMU (most VMs) answers
//! `<not supported>`; that answer is stored as the reason there are none.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::sys::signal::{kill, Signal};
use nix::unistd::{pipe2, Pid};
use throng_model::HwCounters;

use super::control::{acknowledged, wait_within};

pub const EVENTS: [&str; 3] = ["cycles", "instructions", "cache-misses"];
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// `perf stat` attached to the sampler's target.
pub struct Counters {
    child: Child,
    commands: File,
    acks: Receiver<String>,
    output: Option<std::thread::JoinHandle<Vec<String>>>,
    finished: bool,
}

impl Counters {
    /// Starts counting `target` (`-p list` or `-t list`), disabled until
    /// [`Counters::enable`].
    pub fn start(perf: &Path, target: &[String; 2]) -> Result<Counters, String> {
        let pipe = || pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot make a pipe: {e}"));
        let (ctl_read, ctl_write) = pipe()?;
        let (ack_read, ack_write) = pipe()?;
        let inherited = [ctl_read.as_raw_fd(), ack_write.as_raw_fd()];
        let mut cmd = Command::new(perf);
        cmd.args(["stat", "-x,", "--no-big-num", "--delay=-1", "-e"])
            .arg(EVENTS.join(","))
            .args(target)
            .arg(format!("--control=fd:{},{}", inherited[0], inherited[1]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        throng_servers::syscalls::hand_to_perf(&mut cmd, inherited);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start perf stat: {e}"))?;
        drop((ctl_read, ack_write));
        let stderr = child.stderr.take().ok_or("no stderr pipe")?;
        let output = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect()
        });
        Ok(Counters {
            child,
            commands: File::from(ctl_write),
            acks: super::control::acks(File::from(ack_read)),
            output: Some(output),
            finished: false,
        })
    }

    pub fn enable(&mut self) -> Result<(), String> {
        acknowledged(&mut self.commands, &self.acks, "enable")
            .map_err(|e| format!("perf stat: {e}"))
    }

    /// Stops counting, at the end of the window.
    pub fn disable(&mut self) -> Result<(), String> {
        acknowledged(&mut self.commands, &self.acks, "disable")
            .map_err(|e| format!("perf stat: {e}"))
    }

    /// Ends perf stat, once disabled, and reads what was counted, or why
    /// nothing was.
    pub fn finish(mut self) -> HwCounters {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT);
        if let Err(e) = wait_within(&mut self.child, STOP_WITHIN) {
            return absent(format!("perf stat: {e}"));
        }
        self.finished = true;
        let output = self.output.take().and_then(|h| h.join().ok());
        parse(&output.unwrap_or_default())
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn absent(why: String) -> HwCounters {
    HwCounters {
        absent: Some(why),
        ..HwCounters::default()
    }
}

/// perf stat's CSV (`count,unit,event,run time,percent,...`): the three
/// counts, or the machine's answer for those it cannot count
/// ("not available on this machine: perf stat: cycles <not supported>").
pub fn parse(output: &[String]) -> HwCounters {
    let mut out = HwCounters::default();
    let mut missing: Vec<String> = Vec::new();
    let mut seen = 0;
    for line in output {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(count), Some(event)) = (f.first(), f.get(2)) else {
            continue;
        };
        // `cycles:u` where perf may count user space alone.
        let name = event.split(':').next().unwrap_or(event);
        let Some(slot) = (match name {
            "cycles" => Some(&mut out.cycles),
            "instructions" => Some(&mut out.instructions),
            "cache-misses" => Some(&mut out.cache_misses),
            _ => None,
        }) else {
            continue;
        };
        seen += 1;
        match count.trim().parse::<u64>() {
            Ok(n) => *slot = n,
            Err(_) => missing.push(format!("{name} {}", count.trim())),
        }
    }
    if !missing.is_empty() {
        return absent(format!(
            "not available on this machine: perf stat: {}",
            missing.join(", ")
        ));
    }
    if seen < EVENTS.len() {
        let first = output
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.eq_ignore_ascii_case("error:"))
            .unwrap_or("no output");
        return absent(format!("perf stat printed no counts: {first}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_machine_without_counters_says_so_in_perfs_words() {
        // This VM's perf 6.1, which sees no PMU.
        let out = lines(
            "<not supported>,,cycles,0,100.00,,\n\
             <not supported>,,instructions,0,100.00,,\n\
             <not supported>,,cache-misses,0,100.00,,\n",
        );
        assert_eq!(
            parse(&out),
            HwCounters {
                absent: Some(
                    "not available on this machine: perf stat: cycles <not supported>, \
                     instructions <not supported>, cache-misses <not supported>"
                        .into()
                ),
                ..HwCounters::default()
            }
        );
    }

    #[test]
    fn counts_are_read_from_a_machine_with_a_pmu() {
        // perf 6.1 on bare metal, counting user and kernel space, and with
        // perf_event_paranoid keeping it to user space (`:u`).
        let out = lines(
            "1834512930,,cycles,1000342211,100.00,,\n\
             2411028812,,instructions,1000342211,100.00,1.31,insn per cycle\n\
             1203377,,cache-misses,1000342211,100.00,,\n",
        );
        assert_eq!(
            parse(&out),
            HwCounters {
                absent: None,
                cycles: 1_834_512_930,
                instructions: 2_411_028_812,
                cache_misses: 1_203_377,
            }
        );
        let user = lines(
            "900,,cycles:u,1000,100.00,,\n\
             1800,,instructions:u,1000,100.00,2.00,insn per cycle\n\
             <not counted>,,cache-misses:u,0,0.00,,\n",
        );
        assert_eq!(
            parse(&user).absent.as_deref(),
            Some("not available on this machine: perf stat: cache-misses <not counted>")
        );
        assert_eq!(
            parse(&lines("Error:\nNo permission to enable cycles event.\n"))
                .absent
                .as_deref(),
            Some("perf stat printed no counts: No permission to enable cycles event.")
        );
    }
}
