//! Reading the kernel's files under a root path: `/` for this machine, a
//! tree of a test's own elsewhere, so the readers of /sys and /proc can be
//! handed a scripted machine.

use std::path::Path;

/// The file `rel` under `root`, trimmed; `None` where it cannot be read.
pub(crate) fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
}
