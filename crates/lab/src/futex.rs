//! Which futex hash servers start on, and what the run tells its reader.
//!
//! On Linux 6.16 and later a threaded process gets a futex hash of its
//! own, of 16 buckets on a machine of up to 4 CPUs, and a server that
//! parks many idle threads on one futex then starts slow whenever a hot
//! futex of its hashes beside them (`throng_servers::futex`). That is a
//! draw at every launch, so a study's launches of one config would differ
//! by more than its servers do. By default the lab starts every process of
//! a run on the global hash, as all processes were before 6.16: what its
//! launches compare is the servers, not where their memory was mapped.

use anyhow::bail;
use throng_model::{Finding, Severity};
use throng_servers::RunDir;

/// The study's `futex_hash`, checked: whether servers start on the global
/// hash.
pub fn global(value: Option<&str>) -> anyhow::Result<bool> {
    match value {
        None | Some("global") => Ok(true),
        Some("kernel") => Ok(false),
        Some(other) => bail!("futex_hash = {other:?}: give \"global\" or \"kernel\""),
    }
}

/// Makes the run's servers load the global-hash shim when the study asks
/// for it and this kernel gives processes hashes of their own. Returns the
/// buckets such a hash has here, `None` where the kernel gives none.
pub fn prepare(global: bool, rundir: &mut RunDir) -> anyhow::Result<Option<u32>> {
    let slots = throng_servers::futex::private_hash_slots();
    if global && slots.is_some() {
        rundir.use_global_futex_hash()?;
    }
    Ok(slots)
}

/// The check's name among a run's findings.
pub const CHECK: &str = "futex.hash";

/// Where the servers run, as far as the futex hash goes: this machine,
/// with the buckets of a private hash here (`None`: the kernel gives
/// none), or a server host, whose kernel the run does not ask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Host {
    Here(Option<u32>),
    Apart,
}

/// What the run says of it, with the machine's other findings.
pub fn finding(global: bool, host: Host) -> Finding {
    let (severity, message, fix) = match (host, global) {
        (Host::Apart, true) => (
            Severity::Ok,
            "servers were started on the server host's global futex hash, where its kernel \
             gives each threaded process a hash of its own (futex_hash = \"global\")"
                .to_string(),
            String::new(),
        ),
        (Host::Apart, false) => (
            Severity::Warn,
            "servers keep the futex hash the server host's kernel gives each threaded process \
             (futex_hash = \"kernel\"): from Linux 6.16, 16 buckets on up to 4 CPUs, and a \
             server that parks many idle threads on one futex is then slow in some of its starts"
                .to_string(),
            "leave futex_hash out (\"global\"); docs/methodology.md, \"Launches that differ\""
                .to_string(),
        ),
        (Host::Here(None), _) => (
            Severity::Ok,
            "every process shares the kernel's global futex hash".to_string(),
            String::new(),
        ),
        (Host::Here(Some(n)), true) => (
            Severity::Ok,
            format!(
                "this kernel gives each threaded process a futex hash of its own, {n} buckets \
                 here; servers were started on the global hash instead, as every process was \
                 before Linux 6.16 (futex_hash = \"global\"), so that a server's idle threads \
                 cannot make some of its starts slow"
            ),
            String::new(),
        ),
        (Host::Here(Some(n)), false) => (
            Severity::Warn,
            format!(
                "servers keep the futex hash this kernel gives each threaded process, {n} \
                 buckets here (futex_hash = \"kernel\"): a server that parks many idle threads \
                 on one futex is slow in the starts where a hot futex hashes beside them, so \
                 its launches may differ more than servers do"
            ),
            "leave futex_hash out (\"global\"); docs/methodology.md, \"Launches that differ\""
                .to_string(),
        ),
    };
    Finding {
        check: CHECK.into(),
        severity,
        message,
        fix,
    }
}

/// Whether a stored run's servers were on the global hash (or on a
/// kernel with no other), from its findings; `None` for a run stored
/// before the lab chose, whose servers kept what the kernel gave.
pub fn of_run(doctor: &[Finding]) -> Option<bool> {
    doctor
        .iter()
        .find(|f| f.check == CHECK)
        .map(|f| f.severity == Severity::Ok)
}

/// Whether a calibration run's launches speak for a run whose servers
/// start on the global hash (`global`) or not: only launches made the
/// same way do, and a run stored before the lab chose kept the kernel's.
pub fn same_starts(calibration: &[Finding], global: bool) -> bool {
    of_run(calibration).unwrap_or(false) == global
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_global_or_kernel_is_taken() {
        assert!(global(None).unwrap());
        assert!(global(Some("global")).unwrap());
        assert!(!global(Some("kernel")).unwrap());
        assert_eq!(
            global(Some("private")).unwrap_err().to_string(),
            "futex_hash = \"private\": give \"global\" or \"kernel\""
        );
    }

    #[test]
    fn the_finding_warns_only_where_a_private_hash_is_kept() {
        assert_eq!(finding(true, Host::Here(None)).severity, Severity::Ok);
        assert_eq!(finding(false, Host::Here(None)).severity, Severity::Ok);
        let kept = finding(false, Host::Here(Some(16)));
        assert_eq!(kept.severity, Severity::Warn);
        assert!(kept.message.contains("16 buckets here"), "{}", kept.message);
        let global = finding(true, Host::Here(Some(16)));
        assert_eq!(
            (global.severity, global.check.as_str()),
            (Severity::Ok, CHECK)
        );
        assert!(
            global.message.contains("16 buckets here"),
            "{}",
            global.message
        );
        assert_eq!(finding(true, Host::Apart).severity, Severity::Ok);
        assert_eq!(finding(false, Host::Apart).severity, Severity::Warn);
    }

    #[test]
    fn a_calibration_speaks_only_for_runs_whose_servers_started_as_its_did() {
        let global = [finding(true, Host::Here(Some(16)))];
        let kept = [finding(false, Host::Here(Some(16)))];
        let no_private = [finding(false, Host::Here(None))];
        let before: [Finding; 0] = [];
        assert_eq!(
            [
                of_run(&global),
                of_run(&kept),
                of_run(&no_private),
                of_run(&before)
            ],
            [Some(true), Some(false), Some(true), None]
        );
        assert!(same_starts(&global, true) && !same_starts(&global, false));
        assert!(same_starts(&kept, false) && !same_starts(&kept, true));
        // A kernel with no private hash starts every process alike.
        assert!(same_starts(&no_private, true));
        // Stored before the lab chose: its servers kept the kernel's.
        assert!(same_starts(&before, false) && !same_starts(&before, true));
    }

    #[test]
    fn a_run_asking_for_the_global_hash_gets_the_shim_only_where_the_kernel_needs_it() {
        let base = tempfile::tempdir().unwrap();
        let mut rd = RunDir::create(base.path(), "futex", 1, false).unwrap();
        let slots = prepare(false, &mut rd).unwrap();
        assert_eq!(rd.futex_shim(), None);
        assert_eq!(prepare(true, &mut rd).unwrap(), slots);
        match slots {
            Some(_) => assert_eq!(
                rd.futex_shim(),
                Some(rd.path().join(throng_servers::futex::SHIM_FILE).as_path())
            ),
            None => assert_eq!(rd.futex_shim(), None),
        }
    }
}
