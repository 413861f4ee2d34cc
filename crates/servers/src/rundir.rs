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
    /// The futex-hash shim written here, which every process started for
    /// this run loads (`crate::futex`).
    futex_shim: Option<PathBuf>,
}

/// Why a work directory was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaseError {
    #[error("{0:?} holds {1:?}, which a server's config cannot carry as it is: use a path of letters, digits and '/', '.', '_', '-', '+', '@', ',' or '~'")]
    Char(String, char),
    #[error("{0:?} is not valid UTF-8")]
    NotUtf8(String),
    #[error("{0} is not a folder")]
    NotDir(String),
}

/// The work directory run directories are made under, checked and made
/// absolute: its path is written into every server's config (a pid file,
/// a log, a document root), where a ';', a space, a quote, a brace or a
/// line break would end a directive or begin another, and a relative
/// path would be read against the server's own prefix.
pub fn check_base(base: &Path) -> Result<PathBuf, BaseError> {
    let abs = if base.is_absolute() {
        base.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(base)
    };
    let Some(text) = abs.to_str() else {
        return Err(BaseError::NotUtf8(abs.display().to_string()));
    };
    if let Some(c) = text
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || "/._-+@,~".contains(c)))
    {
        return Err(BaseError::Char(text.to_string(), c));
    }
    if abs.exists() && !abs.is_dir() {
        return Err(BaseError::NotDir(text.to_string()));
    }
    Ok(abs)
}

impl RunDir {
    /// Creates `base/<prefix>-<pid>-<id>`; fails when it already exists.
    pub fn create(base: &Path, prefix: &str, id: i64, keep: bool) -> anyhow::Result<RunDir> {
        names::check("run directory prefix", prefix)?;
        let base = &check_base(base).map_err(|e| anyhow::anyhow!("work directory {e}"))?;
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
        Ok(RunDir {
            path,
            keep,
            futex_shim: None,
        })
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

    /// Starts every later process of this run on the kernel's global
    /// futex hash: writes the shim here, which each of them loads.
    pub fn use_global_futex_hash(&mut self) -> anyhow::Result<()> {
        self.futex_shim = Some(crate::futex::write_shim(&self.path)?);
        Ok(())
    }

    /// The shim every process of this run loads, if any.
    pub fn futex_shim(&self) -> Option<&Path> {
        self.futex_shim.as_deref()
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

    #[test]
    fn a_work_directory_that_would_break_a_config_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = tmp.path().join("a-b_c.d+e@f,g~h");
        assert_eq!(check_base(&ok), Ok(ok.clone()));
        let rel = check_base(Path::new("w")).unwrap();
        assert_eq!(rel, std::env::current_dir().unwrap().join("w"));
        for (bad, c) in [
            ("w;d", ';'),
            ("w d", ' '),
            ("w\nd", '\n'),
            ("w{{port}}", '{'),
            ("w$(id)", '$'),
            ("w'x", '\''),
            ("w\"x", '"'),
            ("w#x", '#'),
        ] {
            let p = tmp.path().join(bad);
            assert_eq!(
                check_base(&p),
                Err(BaseError::Char(p.to_str().unwrap().to_string(), c)),
                "{bad:?}"
            );
            assert!(RunDir::create(&p, "throng-lab", 1, false).is_err());
            assert!(!p.exists(), "{bad:?} was made");
        }
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(
            check_base(&file),
            Err(BaseError::NotDir(file.to_str().unwrap().to_string()))
        );
    }
}
