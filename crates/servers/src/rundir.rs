//! Run directories: where a study's configs, logs and document roots go.
//!
//! A run directory is always created fresh (never an existing directory
//! taken over), under the work directory the user chose, and every
//! directory inside it is named by a checked name, so the lab never
//! chowns or writes outside it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::names;
use crate::process::RunAs;

/// Run directories to remove when the process is made to exit at once (a
/// second Ctrl-C), where no drop runs.
static LIVE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every run directory not kept and not yet dropped. Safe to call
/// from any thread; for an exit that skips the drops.
pub fn remove_all_live() {
    let live = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for p in live {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// A fresh directory for one run: removed on drop unless kept.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    keep: bool,
}

impl RunDir {
    /// Creates `base/<prefix>-<pid>-<id>`; fails when it already exists.
    pub fn create(base: &Path, prefix: &str, id: i64, keep: bool) -> anyhow::Result<RunDir> {
        names::check("run directory prefix", prefix)?;
        let path = base.join(format!("{prefix}-{}-{id}", std::process::id()));
        std::fs::create_dir_all(base).with_context(|| format!("creating {}", base.display()))?;
        // create_dir (not _all): an existing directory is an error, so a
        // directory of someone else's is never taken over.
        std::fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
        set_mode(&path)?;
        if !keep {
            if let Ok(mut l) = LIVE.lock() {
                l.push(path.clone());
            }
        }
        Ok(RunDir { path, keep })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A directory inside, one checked name per level, owned by `owner`
    /// at its last level (the server's own directory must be writable by
    /// the unprivileged user it runs as).
    pub fn subdir(&self, parts: &[&str], owner: Option<&RunAs>) -> anyhow::Result<PathBuf> {
        let mut p = self.path.clone();
        for (i, part) in parts.iter().enumerate() {
            names::check("directory name", part)?;
            p.push(part);
            if !p.is_dir() {
                std::fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
            }
            set_mode(&p)?;
            if i + 1 == parts.len() {
                if let Some(u) = owner {
                    std::os::unix::fs::chown(&p, Some(u.uid), Some(u.gid))
                        .with_context(|| format!("giving {} to {}", p.display(), u.name))?;
                }
            }
        }
        if !p.starts_with(&self.path) {
            bail!("{} is outside the run directory", p.display());
        }
        Ok(p)
    }

    /// A path inside the run directory, relative, for storing with results.
    pub fn relative(&self, p: &Path) -> String {
        p.strip_prefix(&self.path)
            .unwrap_or(p)
            .display()
            .to_string()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
            if let Ok(mut l) = LIVE.lock() {
                l.retain(|p| *p != self.path);
            }
        }
    }
}

/// World-readable, so a server running as the unprivileged user can reach
/// the document roots below.
fn set_mode(p: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("setting the mode of {}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_are_fresh_and_hold_only_checked_names() {
        let base = tempfile::tempdir().unwrap();
        let rd = RunDir::create(base.path(), "throng-lab", 7, false).unwrap();
        let path = rd.path().to_path_buf();
        assert_eq!(
            path,
            base.path()
                .join(format!("throng-lab-{}-7", std::process::id()))
        );
        // The same directory cannot be created twice.
        assert!(RunDir::create(base.path(), "throng-lab", 7, false).is_err());
        let sub = rd.subdir(&["c1-tiny", "nginx"], None).unwrap();
        assert_eq!(sub, path.join("c1-tiny/nginx"));
        assert_eq!(
            rd.relative(&sub.join("nginx.conf")),
            "c1-tiny/nginx/nginx.conf"
        );
        for bad in [&["..", "x"][..], &["/etc"], &["a/../../b"]] {
            assert!(rd.subdir(bad, None).is_err(), "{bad:?}");
        }
        assert!(!base.path().join("x").exists());
        drop(rd);
        assert!(!path.exists());
    }
}
