//! The kernel's futex hash, as servers under test get it.
//!
//! Linux 6.16 gave each threaded process a futex hash of its own, sized
//! from the CPUs online: 16 buckets up to 4 CPUs. On a small lab machine
//! that turns an idle thread pool into a lottery drawn at every start: a
//! thousand threads parked on one condition variable share one bucket,
//! and a hot futex hashed beside them makes every wake walk the
//! thousand. apache2-event with 1,024 threads on 2 CPUs drew it about one
//! start in six (`futex_wake` 12–17% of its CPU against under 1%, 30%
//! fewer requests a second), so launches of one config differed by more
//! than servers do. Started with the global hash (256 buckets a CPU, what
//! every process had before 6.16) its starts are alike.
//!
//! The request can only come from inside the process (`prctl`), so a shim
//! loaded ahead of the server's own libraries makes it (`shim/`, built by
//! `build.rs`). A static binary (Go's, Caddy's) loads no shim: it keeps
//! whatever the kernel gives it.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The shim as a shared object, built for this binary's target.
pub const SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/futex_global.so"));

/// Its file name in a run directory.
pub const SHIM_FILE: &str = "futex-global.so";

const PR_FUTEX_HASH: libc::c_int = 78;
const PR_FUTEX_HASH_GET_SLOTS: libc::c_ulong = 2;

/// The buckets of the futex hash this kernel gives a threaded process of
/// its own (16 on 2 CPUs), or `None` when it gives none and every process
/// shares the global hash: kernels before 6.16, or built without
/// `CONFIG_FUTEX_PRIVATE_HASH`. Asked from a thread of its own, so the
/// process is threaded when the kernel answers; a process that already
/// asked for the global hash answers `Some(0)`.
pub fn private_hash_slots() -> Option<u32> {
    std::thread::spawn(|| {
        // SAFETY: prctl with integer arguments only reads them.
        let r = unsafe { libc::prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0) };
        (r > 0).then_some(r as u32)
    })
    .join()
    .ok()
    .flatten()
}

/// Writes the shim into `dir` (readable by every user, so a server that
/// drops its privileges loads it too) and returns its path.
pub fn write_shim(dir: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(SHIM_FILE);
    std::fs::write(&path, SHIM).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A threaded process, and a child it forks and threads, each tell
    /// the buckets of their futex hash (0: the global one).
    const REPORT: &str = r#"
import ctypes, os, threading
libc = ctypes.CDLL(None)
def slots():
    hold = threading.Event()
    t = threading.Thread(target=hold.wait)
    t.start()
    n = libc.prctl(78, 2, 0, 0, 0)
    hold.set()
    t.join()
    return n
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, str(slots()).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(slots(), os.read(r, 16).decode())
"#;

    fn report(preload: Option<&Path>) -> String {
        let mut cmd = std::process::Command::new("python3");
        cmd.args(["-c", REPORT]);
        if let Some(p) = preload {
            cmd.env("LD_PRELOAD", p);
        }
        let out = cmd.output().expect("python3");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn the_shim_keeps_a_process_and_its_forked_children_on_the_global_hash() {
        let Some(own) = private_hash_slots() else {
            eprintln!("skipped: this kernel gives processes no futex hash of their own");
            return;
        };
        // Without the shim both draw the kernel's private hash, sized as
        // this process's is (both are threaded on the same CPUs).
        assert_eq!(report(None), format!("{own} {own}"));
        let dir = tempfile::tempdir().unwrap();
        let shim = write_shim(dir.path()).unwrap();
        assert_eq!(shim, dir.path().join(SHIM_FILE));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&shim).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert_eq!(report(Some(&shim)), "0 0");
    }
}
