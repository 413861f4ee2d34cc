//! The throng binary an agent runs, named by its content.
//!
//! Version numbers do not change between two builds of one version, and a
//! remote host must never run an agent whose protocol differs from the
//! coordinator's by accident; so the remote copy lives in a directory
//! named by the version and a hash of the binary's bytes, and a host with
//! that directory already holds exactly this build.

use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Binary {
    pub path: PathBuf,
    /// `VERSION-HASH`, e.g. `0.1.0-3f9c0e1d2a4b5c6d`.
    pub id: String,
    pub arch: &'static str,
}

impl Binary {
    /// The running executable.
    pub fn current() -> std::io::Result<Binary> {
        let path = std::env::current_exe()?;
        Binary::at(&path)
    }

    pub fn at(path: &Path) -> std::io::Result<Binary> {
        let hash = fnv1a(std::fs::File::open(path)?)?;
        Ok(Binary {
            path: path.to_path_buf(),
            id: format!("{}-{hash:016x}", env!("CARGO_PKG_VERSION")),
            arch: std::env::consts::ARCH,
        })
    }
}

/// FNV-1a over a reader: stable across Rust releases and machines, unlike
/// std's hasher, and fast enough for a few tens of megabytes.
fn fnv1a(mut r: impl Read) -> std::io::Result<u64> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(h);
        }
        for &b in &buf[..n] {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(&b""[..]).unwrap(), 0xcbf29ce484222325);
        assert_eq!(fnv1a(&b"a"[..]).unwrap(), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(&b"foobar"[..]).unwrap(), 0x85944171f73967e8);
    }
}
