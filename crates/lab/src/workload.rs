//! Workloads: document roots generated on disk and the URLs requested.
//!
//! Contents are made by a seeded generator, so the same workload is
//! byte-identical on every machine and every run, and the verification pass
//! can compare each response with the file it came from.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
pub use throng_model::WorkloadKind;

/// Body of the tiny workload: 7 bytes, the size of the index page the
/// 2016 Linux web server benchmark loaded with weighttp.
pub const TINY_BODY: &[u8] = b"throng\n";
pub const SMALL_FILES: usize = 1000;
pub const SMALL_FILE_BYTES: usize = 1024;
/// 6.3 KB.
pub const PAGE_BYTES: usize = 6451;
/// 21 MB.
pub const LARGE_BYTES: usize = 21 * 1024 * 1024;

/// The built-in workload a study names, or an error naming the known ones.
pub fn parse_kind(name: &str) -> anyhow::Result<WorkloadKind> {
    WorkloadKind::parse(name).with_context(|| {
        let known: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown workload {name:?} (known: {})", known.join(", "))
    })
}

/// A generated document root.
#[derive(Debug, Clone)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub docroot: PathBuf,
    /// URL paths, each with the file holding the exact body it must return.
    pub files: Vec<(String, PathBuf)>,
    /// URL paths whose body depends on the server's software (phpinfo()),
    /// each with the Content-Type it must have: the body cannot be known in
    /// advance, only checked to be the same on every request.
    pub checked: Vec<(String, String)>,
}

impl Workload {
    /// Every URL path requested, in order: exact ones first.
    pub fn paths(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|(u, _)| u.clone())
            .chain(self.checked.iter().map(|(u, _)| u.clone()))
            .collect()
    }

    pub fn total_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|(_, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
            .sum()
    }
}

/// splitmix64: small, seedable, and good enough to make file contents and
/// sizes that do not compress to nothing.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// Printable text of exactly `len` bytes, lines of words, ending in a newline.
fn text(rng: &mut Rng, len: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "server",
        "request",
        "latency",
        "keep",
        "alive",
        "static",
        "file",
        "core",
        "worker",
        "thread",
        "event",
        "loop",
        "socket",
        "bytes",
        "cache",
        "page",
        "throughput",
        "the",
        "a",
        "of",
        "and",
        "to",
    ];
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let w = WORDS[(rng.next() % WORDS.len() as u64) as usize];
        out.extend_from_slice(w.as_bytes());
        out.push(if rng.next().is_multiple_of(12) {
            b'\n'
        } else {
            b' '
        });
    }
    out.truncate(len);
    if let Some(last) = out.last_mut() {
        *last = b'\n';
    }
    out
}

fn html(rng: &mut Rng, len: usize, title: &str) -> Vec<u8> {
    let head = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body>\n<p>"
    );
    let tail = b"</p>\n</body></html>\n";
    let mut out = head.into_bytes();
    let body_len = len.saturating_sub(out.len() + tail.len());
    out.extend(text(rng, body_len));
    out.extend_from_slice(tail);
    out.truncate(len);
    out
}

fn binary(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

fn write(
    root: &Path,
    rel: &str,
    data: &[u8],
    files: &mut Vec<(String, PathBuf)>,
) -> anyhow::Result<()> {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
    files.push((format!("/{rel}"), path));
    Ok(())
}

/// Writes the workload's files under `docroot` (created if missing).
pub fn generate(kind: WorkloadKind, docroot: &Path) -> anyhow::Result<Workload> {
    std::fs::create_dir_all(docroot)?;
    let mut rng = Rng(0x7468_726f_6e67 ^ kind as u64);
    let mut files = Vec::new();
    let mut checked = Vec::new();
    match kind {
        WorkloadKind::Tiny => write(docroot, "index.html", TINY_BODY, &mut files)?,
        WorkloadKind::SmallFiles => {
            for i in 0..SMALL_FILES {
                let data = text(&mut rng, SMALL_FILE_BYTES);
                write(docroot, &format!("small/{i:04}.txt"), &data, &mut files)?;
            }
        }
        WorkloadKind::Page => {
            let data = html(&mut rng, PAGE_BYTES, "page");
            write(docroot, "page.html", &data, &mut files)?;
        }
        WorkloadKind::Large => {
            let data = binary(&mut rng, LARGE_BYTES);
            write(docroot, "large.bin", &data, &mut files)?;
        }
        WorkloadKind::Site => {
            // Shares of a typical small site: many small pages and images,
            // fewer but larger scripts and stylesheets.
            for i in 0..120 {
                let n = rng.range(3 * 1024, 40 * 1024);
                let data = html(&mut rng, n, &format!("page {i}"));
                write(docroot, &format!("site/page{i:03}.html"), &data, &mut files)?;
            }
            for i in 0..40 {
                let n = rng.range(1024, 30 * 1024);
                let data = text(&mut rng, n);
                write(
                    docroot,
                    &format!("site/css/style{i:02}.css"),
                    &data,
                    &mut files,
                )?;
            }
            for i in 0..60 {
                let n = rng.range(2 * 1024, 120 * 1024);
                let data = text(&mut rng, n);
                write(docroot, &format!("site/js/app{i:02}.js"), &data, &mut files)?;
            }
            for i in 0..120 {
                let n = rng.range(512, 12 * 1024);
                let data = binary(&mut rng, n);
                write(
                    docroot,
                    &format!("site/img/icon{i:03}.png"),
                    &data,
                    &mut files,
                )?;
            }
            for i in 0..60 {
                let n = rng.range(20 * 1024, 250 * 1024);
                let data = binary(&mut rng, n);
                write(
                    docroot,
                    &format!("site/img/photo{i:02}.jpg"),
                    &data,
                    &mut files,
                )?;
            }
        }
        WorkloadKind::Cgi => {
            let program = docroot.join(CGI_PATH.trim_start_matches('/'));
            compile_cgi(&program)?;
            expect(docroot, CGI_PATH, CGI_BODY, &mut files)?;
        }
        WorkloadKind::Php => {
            let php = docroot.join("php");
            std::fs::create_dir_all(&php)?;
            std::fs::write(php.join("page.php"), PHP_PAGE)?;
            std::fs::write(php.join("info.php"), PHP_INFO)?;
            expect(docroot, PHP_PAGE_PATH, &php_page_body(), &mut files)?;
            checked.push((PHP_INFO_PATH.to_string(), "text/html".to_string()));
        }
        WorkloadKind::App => {
            // The same bytes as the `page` workload, so `page` (static) and
            // `app` (proxied) compare like for like; only the proxied path is
            // requested. The app reads its body from APP_BODY_FILE.
            let mut page_rng = Rng(0x7468_726f_6e67 ^ WorkloadKind::Page as u64);
            let data = html(&mut page_rng, PAGE_BYTES, "page");
            std::fs::write(docroot.join(APP_BODY_FILE), &data)?;
            expect(docroot, APP_PATH, &data, &mut files)?;
        }
    }
    Ok(Workload {
        kind,
        docroot: docroot.to_path_buf(),
        files,
        checked,
    })
}

/// URL of the CGI program; the server maps /cgi-bin/ onto the docroot's.
pub const CGI_PATH: &str = "/cgi-bin/hello.cgi";
pub const CGI_BODY: &[u8] = b"Hello, world!\n";
pub const PHP_PAGE_PATH: &str = "/php/page.php";
pub const PHP_INFO_PATH: &str = "/php/info.php";
/// Proxied to the app, which answers every path with the page.
pub const APP_PATH: &str = "/app/page.html";
/// The app's body, in the docroot.
pub use throng_servers::helper::APP_BODY_FILE;

/// A page built from a template: a loop, a function call and escaping, the
/// work a small PHP site does for every request.
const PHP_PAGE: &str = r#"<?php
$servers = ['nginx' => 'event loop', 'lighttpd' => 'event loop', 'apache2' => 'processes & threads', 'h2o' => 'threads', 'caddy' => 'goroutines'];
$title = 'Servers <' . count($servers) . '>';
?>
<!DOCTYPE html>
<html><head><title><?= htmlspecialchars($title) ?></title></head>
<body>
<ul>
<?php foreach ($servers as $name => $model): ?>
<li><?= ucfirst($name) ?>: <?= htmlspecialchars($model) ?> (<?= strlen($name) ?>)</li>
<?php endforeach; ?>
</ul>
</body></html>
"#;

/// phpinfo() without the sections that change from one request to the
/// next: environment and request variables (the client's port, the time)
/// and the modules' tables (OPcache's hit counters). Every response of a
/// server then has the same size and checksum, which the load engine checks.
const PHP_INFO: &str =
    "<?php phpinfo(INFO_GENERAL | INFO_CONFIGURATION | INFO_CREDITS | INFO_LICENSE);\n";

/// What PHP_PAGE renders to; PHP drops the newline right after `?>`.
fn php_page_body() -> Vec<u8> {
    let servers = [
        ("nginx", "event loop"),
        ("lighttpd", "event loop"),
        ("apache2", "processes &amp; threads"),
        ("h2o", "threads"),
        ("caddy", "goroutines"),
    ];
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><title>Servers &lt;5&gt;</title></head>\n<body>\n<ul>\n",
    );
    for (name, model) in servers {
        let mut cap = name.to_string();
        cap[..1].make_ascii_uppercase();
        out.push_str(&format!("<li>{cap}: {model} ({})</li>\n", name.len()));
    }
    out.push_str("</ul>\n</body></html>\n");
    out.into_bytes()
}

/// Records `url` with the exact body it must return, kept outside the
/// served paths (the URL is answered by a program, not by this file).
fn expect(
    docroot: &Path,
    url: &str,
    body: &[u8],
    files: &mut Vec<(String, PathBuf)>,
) -> anyhow::Result<()> {
    let path = docroot
        .join("expected")
        .join(url.trim_start_matches('/').replace('/', "_"));
    std::fs::create_dir_all(docroot.join("expected"))?;
    std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
    files.push((url.to_string(), path));
    Ok(())
}

const HELLO_C: &str = r#"#include <stdio.h>

int main(void)
{
    fputs("Content-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, world!\n", stdout);
    return 0;
}
"#;

/// Compiles the hello-world CGI program to `program` with the machine's C
/// compiler (`cc`, or `$CC`), executable by every user.
pub fn compile_cgi(program: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = program.parent().context("CGI program path has no folder")?;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    let source = dir.join("hello.c");
    std::fs::write(&source, HELLO_C)?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .arg("-O2")
        .arg("-o")
        .arg(program)
        .arg(&source)
        .output()
        .with_context(|| format!("running the C compiler {cc:?} (Debian package gcc)"))?;
    if !out.status.success() {
        bail!(
            "compiling the CGI program failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    std::fs::set_permissions(program, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(w: &Workload) -> Vec<u64> {
        w.files
            .iter()
            .map(|(_, p)| std::fs::metadata(p).unwrap().len())
            .collect()
    }

    #[test]
    fn sizes_match_the_articles() {
        let dir = tempfile::tempdir().unwrap();
        let tiny = generate(WorkloadKind::Tiny, &dir.path().join("t")).unwrap();
        assert_eq!(tiny.files.len(), 1);
        assert_eq!(tiny.files[0].0, "/index.html");
        assert_eq!(std::fs::read(&tiny.files[0].1).unwrap(), b"throng\n");

        let small = generate(WorkloadKind::SmallFiles, &dir.path().join("s")).unwrap();
        assert_eq!(small.files.len(), 1000);
        assert!(sizes(&small).iter().all(|&s| s == 1024));
        assert_eq!(small.files[999].0, "/small/0999.txt");

        let page = generate(WorkloadKind::Page, &dir.path().join("p")).unwrap();
        assert_eq!(sizes(&page), [6451]);
        let body = std::fs::read(&page.files[0].1).unwrap();
        assert!(body.starts_with(b"<!DOCTYPE html>"));

        let large = generate(WorkloadKind::Large, &dir.path().join("l")).unwrap();
        assert_eq!(sizes(&large), [22_020_096]);
    }

    #[test]
    fn site_has_a_realistic_mix() {
        let dir = tempfile::tempdir().unwrap();
        let site = generate(WorkloadKind::Site, dir.path()).unwrap();
        assert_eq!(site.files.len(), 400);
        let count = |ext: &str| site.files.iter().filter(|(u, _)| u.ends_with(ext)).count();
        assert_eq!(
            (
                count(".html"),
                count(".css"),
                count(".js"),
                count(".png"),
                count(".jpg")
            ),
            (120, 40, 60, 120, 60)
        );
        let s = sizes(&site);
        assert!(s.iter().all(|&b| (512..=250 * 1024).contains(&b)));
    }

    #[test]
    fn dynamic_workloads_list_their_urls_and_exact_bodies() {
        let dir = tempfile::tempdir().unwrap();
        let cgi = generate(WorkloadKind::Cgi, &dir.path().join("c")).unwrap();
        assert_eq!(cgi.paths(), ["/cgi-bin/hello.cgi"]);
        assert_eq!(std::fs::read(&cgi.files[0].1).unwrap(), b"Hello, world!\n");
        assert!(dir.path().join("c/cgi-bin/hello.cgi").is_file());

        let php = generate(WorkloadKind::Php, &dir.path().join("p")).unwrap();
        assert_eq!(php.paths(), ["/php/page.php", "/php/info.php"]);
        assert_eq!(
            php.checked,
            [("/php/info.php".to_string(), "text/html".to_string())]
        );
        let page = String::from_utf8(std::fs::read(&php.files[0].1).unwrap()).unwrap();
        assert_eq!(page.len(), 269);
        assert!(page.contains("<title>Servers &lt;5&gt;</title>"));
        assert!(page.contains("<li>Apache2: processes &amp; threads (7)</li>\n"));

        // The app's body is the page workload's, byte for byte.
        let app = generate(WorkloadKind::App, &dir.path().join("a")).unwrap();
        let static_page = generate(WorkloadKind::Page, &dir.path().join("s")).unwrap();
        assert_eq!(app.paths(), ["/app/page.html"]);
        let body = std::fs::read(&app.files[0].1).unwrap();
        assert_eq!(body, std::fs::read(&static_page.files[0].1).unwrap());
        assert_eq!(
            body,
            std::fs::read(dir.path().join("a/app-body.html")).unwrap()
        );
        assert!(WorkloadKind::App.is_dynamic() && !WorkloadKind::Page.is_dynamic());
    }

    #[test]
    fn generation_is_repeatable() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let wa = generate(WorkloadKind::Site, a.path()).unwrap();
        let wb = generate(WorkloadKind::Site, b.path()).unwrap();
        for ((ua, pa), (ub, pb)) in wa.files.iter().zip(&wb.files) {
            assert_eq!(ua, ub);
            assert_eq!(std::fs::read(pa).unwrap(), std::fs::read(pb).unwrap());
        }
        assert_eq!(wa.total_bytes(), wb.total_bytes());
    }

    #[test]
    fn unknown_workload_names_the_known_ones() {
        let e = parse_kind("huge").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown workload \"huge\" (known: tiny, small-files, page, large, site, cgi, php, app)"
        );
        for k in WorkloadKind::ALL {
            assert_eq!(parse_kind(k.name()).unwrap(), k);
        }
    }

    #[test]
    fn compiled_cgi_prints_the_exact_response() {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("cgi-bin/hello.cgi");
        compile_cgi(&prog).unwrap();
        let out = Command::new(&prog).output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            out.stdout,
            b"Content-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, world!\n"
        );
    }
}
