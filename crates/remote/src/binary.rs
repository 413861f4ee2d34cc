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
    /// The running executable, hashed once per process: a release build
    /// with debug info is tens of megabytes, and a study opens several
    /// fleets.
    pub fn current() -> std::io::Result<Binary> {
        static CURRENT: std::sync::OnceLock<Result<Binary, String>> = std::sync::OnceLock::new();
        CURRENT
            .get_or_init(|| {
                let path = std::env::current_exe().map_err(|e| e.to_string())?;
                Binary::at(&path).map_err(|e| e.to_string())
            })
            .clone()
            .map_err(std::io::Error::other)
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

/// FNV-1a over a reader, eight bytes at a step (the bytes of a little-end
/// word XORed in at once, then the tail byte by byte): stable across Rust
/// releases and machines, unlike std's hasher, and fast enough that a
/// coordinator hashing its own 70 MB binary does not show in a run's start.
fn fnv1a(mut r: impl Read) -> std::io::Result<u64> {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buf = vec![0u8; 1 << 16];
    let mut carry: Vec<u8> = Vec::with_capacity(8);
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let mut data = &buf[..n];
        // Complete a word left over from the last read first, so the hash
        // does not depend on how the reads split the file.
        if !carry.is_empty() {
            let take = (8 - carry.len()).min(data.len());
            carry.extend_from_slice(&data[..take]);
            data = &data[take..];
            if carry.len() == 8 {
                h ^= u64::from_le_bytes(carry[..].try_into().expect("8 bytes"));
                h = h.wrapping_mul(PRIME);
                carry.clear();
            }
        }
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            h ^= u64::from_le_bytes(w.try_into().expect("8 bytes"));
            h = h.wrapping_mul(PRIME);
        }
        carry.extend_from_slice(words.remainder());
    }
    for &b in &carry {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_shorter_than_a_word_hash_as_fnv1a() {
        // Published FNV-1a 64 test vectors: below eight bytes the word
        // steps never run.
        assert_eq!(fnv1a(&b""[..]).unwrap(), 0xcbf29ce484222325);
        assert_eq!(fnv1a(&b"a"[..]).unwrap(), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(&b"foobar"[..]).unwrap(), 0x85944171f73967e8);
    }

    /// A reader that hands out at most `step` bytes per read.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn the_hash_does_not_depend_on_how_reads_split_the_file() {
        let data: Vec<u8> = (0..100_003u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let whole = fnv1a(&data[..]).unwrap();
        for step in [1, 3, 7, 8, 9, 4096, 65_537] {
            assert_eq!(fnv1a(Trickle(&data, step)).unwrap(), whole, "step {step}");
        }
        let mut other = data.clone();
        other[50_000] ^= 1;
        assert_ne!(fnv1a(&other[..]).unwrap(), whole);
    }
}
