//! A site of the user's own, sent to the server host. The coordinator,
//! which read and checked the site where the study file is, sends a
//! manifest (every file's relative path, size and SHA-256, and the URL
//! list), then the files in chunks over the agent's JSON lines. The
//! server host checks every path before it writes one, writes the files
//! into its run directory, and before any server serves them reads each
//! back and compares it with the manifest, refusing by name a file that
//! differs. The URL list is checked against the files there as it is on
//! one machine.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::workload::{walk_site, OwnSite, Workload, WorkloadId, OWN_SITE_MAX_BYTES};

/// Bytes of a file per message: a line of about 1.4 MB once in base64,
/// so a site of a few megabytes crosses in a few round trips.
pub const CHUNK_BYTES: usize = 1 << 20;

/// One file of a site as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentFile {
    /// `/`-separated, relative to the site's folder.
    pub path: String,
    pub bytes: u64,
    /// SHA-256 of its content, lowercase hex.
    pub sha256: String,
}

/// What the server host is to receive of a site, before any of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The workload's name in the study.
    pub name: String,
    /// Sorted by path, as the site was walked.
    pub files: Vec<SentFile>,
    /// URL paths in the order requested, each with its file's path.
    pub urls: Vec<(String, String)>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of everything `r` yields, lowercase hex.
pub fn sha256_of(mut r: impl Read) -> std::io::Result<String> {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(hex(ctx.finish().as_ref()))
}

/// The manifest of `site`, each of its files read and hashed now.
pub fn manifest(site: &OwnSite) -> anyhow::Result<Manifest> {
    let mut files = Vec::with_capacity(site.files.len());
    for (rel, _) in &site.files {
        let path = site.source.join(rel);
        let (file, bytes) = open_regular(&path)?;
        let sha256 =
            sha256_of(file).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        files.push(SentFile {
            path: rel.clone(),
            bytes,
            sha256,
        });
    }
    Ok(Manifest {
        name: site.id.name().to_string(),
        files,
        urls: site.urls.clone(),
    })
}

/// A regular file of a site and its size: the tree may have changed
/// since the study was read, and a link would be followed out of it.
fn open_regular(path: &Path) -> anyhow::Result<(std::fs::File, u64)> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    if !meta.is_file() {
        anyhow::bail!("{} is no longer a regular file", path.display());
    }
    let f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    Ok((f, meta.len()))
}

/// One chunk of a file, as the wire carries it.
pub fn encode(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Reads `site`'s files in the manifest's order and hands `send` each
/// chunk (file path, base64 bytes); an empty file sends none.
pub fn send_chunks(
    site: &OwnSite,
    m: &Manifest,
    send: &mut dyn FnMut(&str, String) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut buf = vec![0u8; CHUNK_BYTES];
    for f in &m.files {
        let path = site.source.join(&f.path);
        let (mut file, _) = open_regular(&path)?;
        loop {
            let n = read_full(&mut file, &mut buf)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            if n == 0 {
                break;
            }
            send(&f.path, encode(&buf[..n]))?;
            if n < buf.len() {
                break;
            }
        }
    }
    Ok(())
}

/// Fills `buf` as far as `r` goes.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// A relative path from the wire, checked before it reaches the file
/// system: no absolute path, no empty, `.` or `..` segment, no control
/// character, within the lengths Linux allows.
pub fn check_path(rel: &str) -> Result<(), String> {
    if rel.is_empty() {
        return Err("a file with an empty path".into());
    }
    if rel.len() > 4000 {
        let head: String = rel.chars().take(40).collect();
        return Err(format!("{head:?}…: the path is too long"));
    }
    if rel.starts_with('/') {
        return Err(format!("{rel:?} is not a relative path"));
    }
    if rel.chars().any(char::is_control) {
        return Err(format!("{rel:?} holds a control character"));
    }
    for seg in rel.split('/') {
        match seg {
            "" => return Err(format!("{rel:?} has an empty segment")),
            "." | ".." => return Err(format!("{rel:?} has a {seg} segment")),
            s if s.len() > 255 => return Err(format!("{rel:?} has a name over 255 bytes")),
            _ => {}
        }
    }
    Ok(())
}

fn check_sha(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A site being received on the server host.
#[derive(Debug)]
pub struct Unpacking {
    pub id: WorkloadId,
    manifest: Manifest,
    dir: PathBuf,
    /// Bytes written of each file, in the manifest's order.
    written: Vec<u64>,
}

impl Unpacking {
    /// Checks the manifest whole (paths, sizes, checksums' form, every
    /// URL's file among the files), then makes every folder and an empty
    /// file for each path in `dir`, a fresh folder of its own.
    pub fn begin(id: WorkloadId, manifest: Manifest, dir: &Path) -> Result<Unpacking, String> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let mut total = 0u64;
        for (i, f) in manifest.files.iter().enumerate() {
            check_path(&f.path)?;
            if !check_sha(&f.sha256) {
                return Err(format!("{}: {:?} is not a SHA-256", f.path, f.sha256));
            }
            if i > 0 && manifest.files[i - 1].path >= f.path {
                return Err(format!("{} is out of order or listed twice", f.path));
            }
            total = total.saturating_add(f.bytes);
        }
        if total > OWN_SITE_MAX_BYTES {
            return Err(format!(
                "the site holds more than {} GiB",
                OWN_SITE_MAX_BYTES >> 30
            ));
        }
        if manifest.urls.is_empty() {
            return Err("the site's URL list is empty".into());
        }
        for (url, rel) in &manifest.urls {
            if manifest
                .files
                .binary_search_by(|f| f.path.as_str().cmp(rel))
                .is_err()
            {
                return Err(format!("{url}: no file {rel} in the site sent"));
            }
        }
        std::fs::create_dir(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        for f in &manifest.files {
            let to = dir.join(&f.path);
            let mut at = dir.to_path_buf();
            for part in Path::new(&f.path)
                .parent()
                .into_iter()
                .flat_map(Path::components)
            {
                at.push(part);
                if std::fs::symlink_metadata(&at).is_err() {
                    std::fs::create_dir(&at)
                        .and_then(|()| {
                            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755))
                        })
                        .map_err(|e| format!("creating {}: {e}", at.display()))?;
                }
            }
            // A path that is both a file and a folder (`a` and `a/b`) fails
            // here; nothing in the fresh folder is a link to follow.
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&to)
                .and_then(|file| file.set_permissions(std::fs::Permissions::from_mode(0o644)))
                .map_err(|e| format!("creating {}: {e}", to.display()))?;
        }
        let n = manifest.files.len();
        Ok(Unpacking {
            id,
            manifest,
            dir: dir.to_path_buf(),
            written: vec![0; n],
        })
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Appends a chunk of `path`, refused beyond the size the manifest gave.
    pub fn write(&mut self, path: &str, data_b64: &str) -> Result<(), String> {
        let i = self
            .manifest
            .files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .map_err(|_| format!("{path:?} is not a file of the site sent"))?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(data_b64)
            .map_err(|e| format!("{path}: a chunk is not base64: {e}"))?;
        let f = &self.manifest.files[i];
        if self.written[i] + data.len() as u64 > f.bytes {
            return Err(format!("{path}: more than its {} bytes were sent", f.bytes));
        }
        let to = self.dir.join(path);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&to)
            .and_then(|mut file| file.write_all(&data))
            .map_err(|e| format!("writing {}: {e}", to.display()))?;
        self.written[i] += data.len() as u64;
        Ok(())
    }

    /// Every file read back and compared with the manifest, the folder
    /// walked as a site on one machine is (it holds the manifest's files
    /// and nothing else), and the workload to serve: the first file that
    /// differs is named.
    pub fn finish(self) -> Result<Workload, String> {
        for f in &self.manifest.files {
            let at = self.dir.join(&f.path);
            let (file, bytes) = open_regular(&at).map_err(|e| format!("{e:#}"))?;
            if bytes != f.bytes {
                return Err(format!(
                    "{} on the server host holds {bytes} bytes where {} were sent",
                    f.path, f.bytes
                ));
            }
            let sha = sha256_of(file).map_err(|e| format!("reading {}: {e}", at.display()))?;
            if sha != f.sha256 {
                return Err(format!(
                    "{} on the server host does not match the file sent: SHA-256 {} there, {} \
                     sent",
                    f.path,
                    &sha[..16],
                    &f.sha256[..16]
                ));
            }
        }
        let found = walk_site(&self.dir, Path::new(&self.manifest.name))?;
        let sent: Vec<(String, u64)> = self
            .manifest
            .files
            .iter()
            .map(|f| (f.path.clone(), f.bytes))
            .collect();
        if found != sent {
            return Err(format!(
                "the site on the server host holds {} files where {} were sent",
                found.len(),
                sent.len()
            ));
        }
        Ok(Workload {
            kind: self.id,
            files: self
                .manifest
                .urls
                .iter()
                .map(|(url, rel)| (url.clone(), self.dir.join(rel)))
                .collect(),
            docroot: self.dir,
            checked: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(dir: &Path) -> OwnSite {
        std::fs::create_dir_all(dir.join("site/a")).unwrap();
        std::fs::write(dir.join("site/index.html"), "home\n").unwrap();
        std::fs::write(dir.join("site/a/b.css"), "p {}\n").unwrap();
        std::fs::write(dir.join("site/empty.txt"), "").unwrap();
        // Over two chunks, every byte value.
        let big: Vec<u8> = (0..CHUNK_BYTES + 5).map(|i| (i * 7 % 256) as u8).collect();
        std::fs::write(dir.join("site/a/big.bin"), big).unwrap();
        std::fs::write(dir.join("paths.txt"), "/a/b.css\n/\n/a/big.bin\n").unwrap();
        OwnSite::open(WorkloadId::own("mirror"), dir, "site", Some("paths.txt")).unwrap()
    }

    /// The manifest and every chunk, as the coordinator sends them.
    fn packed(site: &OwnSite) -> (Manifest, Vec<(String, String)>) {
        let m = manifest(site).unwrap();
        let mut chunks = Vec::new();
        send_chunks(site, &m, &mut |p, d| {
            chunks.push((p.to_string(), d));
            Ok(())
        })
        .unwrap();
        (m, chunks)
    }

    fn unpack(m: Manifest, chunks: &[(String, String)], to: &Path) -> Result<Unpacking, String> {
        let mut u = Unpacking::begin(WorkloadId::own("mirror"), m, to)?;
        for (p, d) in chunks {
            u.write(p, d)?;
        }
        Ok(u)
    }

    #[test]
    fn the_manifest_holds_every_files_size_and_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let (m, chunks) = packed(&site(dir.path()));
        let paths: Vec<(&str, u64)> = m.files.iter().map(|f| (f.path.as_str(), f.bytes)).collect();
        assert_eq!(
            paths,
            [
                ("a/b.css", 5),
                ("a/big.bin", CHUNK_BYTES as u64 + 5),
                ("empty.txt", 0),
                ("index.html", 5)
            ]
        );
        // FIPS 180-2's empty message, and `echo home | sha256sum`.
        assert_eq!(
            m.files[2].sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            m.files[3].sha256,
            "9a3e246041d3c27dc3645f79cb0d1eb41c277965614655d17119ed7498b956ec"
        );
        let per_file: Vec<&str> = chunks.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            per_file,
            ["a/b.css", "a/big.bin", "a/big.bin", "index.html"]
        );
        assert_eq!(m.urls[1], ("/".to_string(), "index.html".to_string()));
    }

    #[test]
    fn a_site_sent_whole_is_served_from_the_server_hosts_copy() {
        let dir = tempfile::tempdir().unwrap();
        let s = site(dir.path());
        let (m, chunks) = packed(&s);
        let to = dir.path().join("docroot-mirror");
        let w = unpack(m, &chunks, &to).unwrap().finish().unwrap();
        assert_eq!(w.kind, WorkloadId::own("mirror"));
        assert_eq!(w.paths(), ["/a/b.css", "/", "/a/big.bin"]);
        for (_, file) in &w.files {
            let rel = file.strip_prefix(&to).unwrap();
            assert_eq!(
                std::fs::read(file).unwrap(),
                std::fs::read(s.source.join(rel)).unwrap()
            );
        }
        assert_eq!(std::fs::read(to.join("empty.txt")).unwrap(), b"");
    }

    #[test]
    fn a_file_altered_on_the_way_or_on_the_server_host_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let (m, mut chunks) = packed(&site(dir.path()));
        // One byte of the big file's second chunk flipped in transit.
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(&chunks[2].1)
            .unwrap();
        bytes[0] ^= 1;
        chunks[2].1 = encode(&bytes);
        let e = unpack(m.clone(), &chunks, &dir.path().join("d1"))
            .unwrap()
            .finish()
            .unwrap_err();
        let want = |path: &str, there: &str| {
            let sent = &m.files.iter().find(|f| f.path == path).unwrap().sha256[..16];
            format!(
                "{path} on the server host does not match the file sent: SHA-256 {there} there, \
                 {sent} sent"
            )
        };
        let altered: Vec<u8> = (0..CHUNK_BYTES + 5)
            .map(|i| (i * 7 % 256) as u8 ^ u8::from(i == CHUNK_BYTES))
            .collect();
        assert_eq!(
            e,
            want("a/big.bin", &sha256_of(&altered[..]).unwrap()[..16])
        );
        // A file changed on the server host's disk after it was written,
        // before any server reads it.
        let (_, chunks) = packed(&site(dir.path()));
        let u = unpack(m.clone(), &chunks, &dir.path().join("d2")).unwrap();
        std::fs::write(dir.path().join("d2/index.html"), "hone\n").unwrap();
        assert_eq!(
            u.finish().unwrap_err(),
            want("index.html", &sha256_of(&b"hone\n"[..]).unwrap()[..16])
        );
        // A file cut short, and one grown.
        let u = unpack(m.clone(), &chunks[..1], &dir.path().join("d3")).unwrap();
        assert_eq!(
            u.finish().unwrap_err(),
            format!(
                "a/big.bin on the server host holds 0 bytes where {} were sent",
                CHUNK_BYTES + 5
            )
        );
        let mut u = unpack(m.clone(), &chunks, &dir.path().join("d4")).unwrap();
        assert_eq!(
            u.write("a/b.css", &encode(b"x")).unwrap_err(),
            "a/b.css: more than its 5 bytes were sent"
        );
        // A file the manifest did not list, left in the folder.
        let u = unpack(m, &chunks, &dir.path().join("d5")).unwrap();
        std::fs::write(dir.path().join("d5/extra.html"), "x").unwrap();
        assert_eq!(
            u.finish().unwrap_err(),
            "the site on the server host holds 5 files where 4 were sent"
        );
    }

    #[test]
    fn a_manifest_that_would_write_outside_its_folder_is_refused_before_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let (m, _) = packed(&site(dir.path()));
        let with_path = |p: &str| {
            let mut m = m.clone();
            m.files[0].path = p.to_string();
            m.urls = vec![("/x".into(), p.to_string())];
            m
        };
        for (path, want) in [
            ("../etc/passwd", "\"../etc/passwd\" has a .. segment"),
            ("/etc/passwd", "\"/etc/passwd\" is not a relative path"),
            ("a//b", "\"a//b\" has an empty segment"),
            ("a/./b", "\"a/./b\" has a . segment"),
            ("a\nb", "\"a\\nb\" holds a control character"),
            ("", "a file with an empty path"),
        ] {
            let to = dir.path().join("d");
            let e = Unpacking::begin(WorkloadId::own("mirror"), with_path(path), &to).unwrap_err();
            assert_eq!(e, want, "{path:?}");
            assert!(!to.exists(), "{path:?}: nothing written");
        }
        let mut twice = m.clone();
        twice.files[1].path = "a/b.css".into();
        let to = dir.path().join("d");
        assert_eq!(
            Unpacking::begin(WorkloadId::own("mirror"), twice, &to).unwrap_err(),
            "a/b.css is out of order or listed twice"
        );
        let mut bad_url = m.clone();
        bad_url.urls.push(("/gone.html".into(), "gone.html".into()));
        assert_eq!(
            Unpacking::begin(WorkloadId::own("mirror"), bad_url, &to).unwrap_err(),
            "/gone.html: no file gone.html in the site sent"
        );
        let mut big = m;
        big.files[0].bytes = OWN_SITE_MAX_BYTES;
        assert_eq!(
            Unpacking::begin(WorkloadId::own("mirror"), big, &to).unwrap_err(),
            "the site holds more than 2 GiB"
        );
        assert!(!to.exists());
    }
}
