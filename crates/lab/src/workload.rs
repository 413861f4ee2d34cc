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
pub const LARGE_BYTES: usize = WorkloadKind::LARGE_FILE_BYTES as usize;

/// The built-in workload a study names, or an error naming the known ones.
pub fn parse_kind(name: &str) -> anyhow::Result<WorkloadKind> {
    WorkloadKind::parse(name).with_context(|| {
        let known: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown workload {name:?} (known: {})", known.join(", "))
    })
}

/// Which workload of a study: a built-in kind, or a site of the user's
/// own under the name the study gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadId {
    Builtin(WorkloadKind),
    /// The name is interned ([`WorkloadId::own`]) so that the id stays
    /// `Copy`, as a built-in kind is, wherever a group hands it on.
    Own(&'static str),
}

impl WorkloadId {
    /// The id of the user's site `name`, the same for every call.
    pub fn own(name: &str) -> WorkloadId {
        static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = names.iter().find(|n| **n == name) {
            return WorkloadId::Own(n);
        }
        let n: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.push(n);
        WorkloadId::Own(n)
    }

    /// The name steps are stored under.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadId::Builtin(k) => k.name(),
            WorkloadId::Own(n) => n,
        }
    }

    pub fn builtin(self) -> Option<WorkloadKind> {
        match self {
            WorkloadId::Builtin(k) => Some(k),
            WorkloadId::Own(_) => None,
        }
    }

    /// A site of the user's own is static files.
    pub fn is_dynamic(self) -> bool {
        self.builtin().is_some_and(WorkloadKind::is_dynamic)
    }

    /// A site of the user's own is requested in its URL list's order, as
    /// siege walks a list, unless the study says otherwise.
    pub fn random_order(self) -> bool {
        self.builtin().is_some_and(WorkloadKind::random_order)
    }

    /// A site of the user's own may hold files of any size: the large
    /// file's patience.
    pub fn request_timeout(self) -> std::time::Duration {
        self.builtin()
            .unwrap_or(WorkloadKind::Large)
            .request_timeout()
    }
}

impl From<WorkloadKind> for WorkloadId {
    fn from(k: WorkloadKind) -> Self {
        WorkloadId::Builtin(k)
    }
}

/// What a recipe is asked about: a site of the user's own is served as
/// static files are.
impl From<WorkloadId> for Option<WorkloadKind> {
    fn from(id: WorkloadId) -> Self {
        id.builtin()
    }
}

/// A generated document root.
#[derive(Debug, Clone)]
pub struct Workload {
    pub kind: WorkloadId,
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
        WorkloadKind::Phpinfo => {
            let php = docroot.join("php");
            std::fs::create_dir_all(&php)?;
            std::fs::write(php.join("info.php"), PHP_INFO)?;
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
        kind: WorkloadId::Builtin(kind),
        docroot: docroot.to_path_buf(),
        files,
        checked,
    })
}

/// The most a site of the user's own may hold: it is copied into every
/// run directory, and every file is read once more to verify each server.
pub const OWN_SITE_MAX_BYTES: u64 = 2 << 30;

/// A site of the user's own, as a study gives it, checked before anything
/// starts: the files it holds and the URLs requested of it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnSite {
    pub id: WorkloadId,
    /// The folder, resolved against the study file's.
    pub source: PathBuf,
    /// Every regular file under it, by `/`-separated relative path,
    /// sorted, with its size.
    pub files: Vec<(String, u64)>,
    /// URL paths in the order requested, each with the relative path of
    /// the file it must return.
    pub urls: Vec<(String, String)>,
}

impl OwnSite {
    /// `docroot` and `urls` as the study wrote them, relative to `base`
    /// when relative. An error is the key at fault and one line naming
    /// the path (and line).
    pub fn open(
        id: WorkloadId,
        base: &Path,
        docroot: &str,
        urls: Option<&str>,
    ) -> Result<OwnSite, (&'static str, String)> {
        // An empty path joined to the study's folder is that folder: the
        // study itself, its notes and results would be served as a site.
        if docroot.is_empty() {
            return Err(("docroot", "is empty: name the site's folder".into()));
        }
        let source = base.join(docroot);
        let files = walk_site(&source, Path::new(docroot)).map_err(|e| ("docroot", e))?;
        let urls = match urls {
            Some(list) => {
                let fail = |e: String| ("urls", e);
                let text = throng_model::read_text_file(&base.join(list))
                    .map_err(|e| fail(format!("{list}: {e}")))?;
                let urls = parse_url_list(&text)
                    .map_err(|(line, e)| fail(format!("{list} line {line}: {e}")))?;
                if urls.is_empty() {
                    return Err(fail(format!("{list} lists no paths")));
                }
                let mut out = Vec::with_capacity(urls.len());
                for Listed { line, url, rel } in urls {
                    if files
                        .binary_search_by(|(f, _)| f.as_str().cmp(&rel))
                        .is_err()
                    {
                        let inside = format!("{rel}/");
                        let why = if files.iter().any(|(f, _)| f.starts_with(&inside)) {
                            format!("{url} is a folder; write {url}/ for its index.html")
                        } else {
                            let shown = Path::new(docroot).join(&rel);
                            format!("{url}: no file {}", shown.display())
                        };
                        return Err(fail(format!("{list} line {line}: {why}")));
                    }
                    out.push((url, rel));
                }
                out
            }
            None => {
                if files.is_empty() {
                    return Err(("docroot", format!("{docroot} holds no files")));
                }
                files
                    .iter()
                    .map(|(rel, _)| (format!("/{}", encode_path(rel)), rel.clone()))
                    .collect()
            }
        };
        Ok(OwnSite {
            id,
            source,
            files,
            urls,
        })
    }

    /// Copies the site into `docroot`, readable by the unprivileged user
    /// the servers run as whatever the originals' modes, and lists each
    /// URL with its copy: the exact body it must return.
    pub fn copy_into(&self, docroot: &Path) -> anyhow::Result<Workload> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(docroot)?;
        for (rel, _) in &self.files {
            let from = self.source.join(rel);
            let to = docroot.join(rel);
            // The tree may have changed since the study was read: a link
            // would still be followed out of the site.
            let meta = std::fs::symlink_metadata(&from)
                .with_context(|| format!("reading {}", from.display()))?;
            if !meta.is_file() {
                bail!("{} is no longer a regular file", from.display());
            }
            let mut dir = docroot.to_path_buf();
            for part in Path::new(rel)
                .parent()
                .into_iter()
                .flat_map(Path::components)
            {
                dir.push(part);
                if !dir.is_dir() {
                    std::fs::create_dir(&dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
                }
            }
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644))?;
        }
        Ok(Workload {
            kind: self.id,
            docroot: docroot.to_path_buf(),
            files: self
                .urls
                .iter()
                .map(|(url, rel)| (url.clone(), docroot.join(rel)))
                .collect(),
            checked: Vec::new(),
        })
    }
}

/// Every regular file under `root`, sorted by relative path, with its
/// size. Links, devices, sockets and pipes are refused, and so are names a
/// URL list could not spell or a terminal would not show as written, each
/// naming the path as `shown` (the study's spelling of `root`) joined with
/// it; and so is a site above [`OWN_SITE_MAX_BYTES`].
pub fn walk_site(root: &Path, shown: &Path) -> Result<Vec<(String, u64)>, String> {
    let meta = std::fs::metadata(root).map_err(|e| format!("{}: {e}", shown.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a folder", shown.display()));
    }
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut pending = vec![String::new()];
    while let Some(dir) = pending.pop() {
        let here = root.join(&dir);
        let entries =
            std::fs::read_dir(&here).map_err(|e| format!("{}: {e}", shown.join(&dir).display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", shown.join(&dir).display()))?;
            let raw = entry.file_name();
            let at = shown.join(&dir).join(&raw);
            let Some(name) = raw.to_str() else {
                return Err(format!("{}: the name is not UTF-8", at.display()));
            };
            if name.chars().any(char::is_control) {
                return Err(format!(
                    "{:?}: the name holds a control character",
                    at.display().to_string()
                ));
            }
            let rel = if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            };
            let meta = entry
                .metadata()
                .map_err(|e| format!("{}: {e}", at.display()))?;
            let ft = meta.file_type();
            if ft.is_symlink() {
                return Err(format!(
                    "{} is a symbolic link; copy what it points to into the site",
                    at.display()
                ));
            } else if ft.is_dir() {
                pending.push(rel);
            } else if ft.is_file() {
                // Checked now: a file the lab cannot read would fail the
                // run after it is stored.
                std::fs::File::open(root.join(&rel))
                    .map_err(|e| format!("{}: {e}", at.display()))?;
                total += meta.len();
                if total > OWN_SITE_MAX_BYTES {
                    return Err(format!(
                        "{} holds more than {} GiB (reached at {}); a site is copied into every \
                         run",
                        shown.display(),
                        OWN_SITE_MAX_BYTES >> 30,
                        at.display()
                    ));
                }
                files.push((rel, meta.len()));
            } else {
                return Err(format!(
                    "{} is neither a file nor a folder (a device, socket or pipe)",
                    at.display()
                ));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// One path of a URL list.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub line: usize,
    /// As requested: percent-encoded where needed, `.` and empty segments
    /// dropped.
    pub url: String,
    /// The relative path of its file: `index.html` for a path ending in `/`.
    pub rel: String,
}

/// A URL list: one path a line, `#` comments and blank lines ignored; an
/// error gives the line and why.
pub fn parse_url_list(text: &str) -> Result<Vec<Listed>, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let path = raw.trim();
        if path.is_empty() || path.starts_with('#') {
            continue;
        }
        let err = |why: &str| Err((line, format!("{path:?} {why}")));
        if path.chars().any(char::is_control) {
            return err("holds a control character");
        }
        if !path.starts_with('/') {
            return err("does not start with /");
        }
        let Some(bytes) = percent_decode(path) else {
            return err("has a % not followed by two hex digits");
        };
        let Ok(decoded) = String::from_utf8(bytes) else {
            return err("is not UTF-8 once decoded");
        };
        if decoded.chars().any(char::is_control) {
            return err("holds a control character once decoded");
        }
        let segments: Vec<&str> = decoded
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        if segments.contains(&"..") {
            return err("has a .. segment");
        }
        let folder = decoded.ends_with('/') || segments.is_empty();
        let mut url = String::new();
        for s in &segments {
            url.push('/');
            url.push_str(&encode_path(s));
        }
        let mut rel = segments.join("/");
        if folder {
            url.push('/');
            rel = if rel.is_empty() {
                "index.html".to_string()
            } else {
                format!("{rel}/index.html")
            };
        }
        out.push(Listed { line, url, rel });
    }
    Ok(out)
}

/// `rel` in a URL path: `/` and the characters RFC 3986 leaves unreserved
/// as they are, every other byte as `%XX`, which every server decodes.
pub fn encode_path(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
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

        // phpinfo() alone: the same script and URL as `php`'s second.
        let info = generate(WorkloadKind::Phpinfo, &dir.path().join("i")).unwrap();
        assert_eq!(info.paths(), ["/php/info.php"]);
        assert!(info.files.is_empty());
        assert_eq!(php.checked, info.checked);
        assert_eq!(
            std::fs::read(dir.path().join("i/php/info.php")).unwrap(),
            std::fs::read(dir.path().join("p/php/info.php")).unwrap()
        );

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
            "unknown workload \"huge\" (known: tiny, small-files, page, large, site, cgi, php, phpinfo, app)"
        );
        for k in WorkloadKind::ALL {
            assert_eq!(parse_kind(k.name()).unwrap(), k);
        }
    }

    #[test]
    fn a_url_list_reads_as_requested_paths_and_their_files() {
        let text = "# mirrored with wget\n\n/\n  /index.html  \n/a/b.css\n/my page.html\n\
                    /img/./x.png\n//docs//\n/caf%C3%A9.txt\n/a/b.css\n";
        let urls = parse_url_list(text).unwrap();
        let got: Vec<(usize, &str, &str)> = urls
            .iter()
            .map(|u| (u.line, u.url.as_str(), u.rel.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (3, "/", "index.html"),
                (4, "/index.html", "index.html"),
                (5, "/a/b.css", "a/b.css"),
                (6, "/my%20page.html", "my page.html"),
                (7, "/img/x.png", "img/x.png"),
                (8, "/docs/", "docs/index.html"),
                (9, "/caf%C3%A9.txt", "café.txt"),
                // A path listed twice is requested twice, as siege does.
                (10, "/a/b.css", "a/b.css"),
            ]
        );
        let refused = |text: &str| parse_url_list(text).unwrap_err();
        assert_eq!(
            refused("/ok\n/a/../../etc/passwd\n"),
            (2, "\"/a/../../etc/passwd\" has a .. segment".to_string())
        );
        assert_eq!(
            refused("/a/%2E%2E/b\n"),
            (1, "\"/a/%2E%2E/b\" has a .. segment".to_string())
        );
        assert_eq!(
            refused("index.html\n"),
            (1, "\"index.html\" does not start with /".to_string())
        );
        assert_eq!(
            refused("http://example.com/\n"),
            (
                1,
                "\"http://example.com/\" does not start with /".to_string()
            )
        );
        assert_eq!(
            refused("/a\u{7}b\n"),
            (1, "\"/a\\u{7}b\" holds a control character".to_string())
        );
        assert_eq!(
            refused("/a%0Ab\n"),
            (
                1,
                "\"/a%0Ab\" holds a control character once decoded".to_string()
            )
        );
        assert_eq!(
            refused("/100%\n"),
            (
                1,
                "\"/100%\" has a % not followed by two hex digits".to_string()
            )
        );
        assert_eq!(
            refused("/%+1\n"),
            (
                1,
                "\"/%+1\" has a % not followed by two hex digits".to_string()
            )
        );
        assert_eq!(
            refused("/%FF\n"),
            (1, "\"/%FF\" is not UTF-8 once decoded".to_string())
        );
    }

    /// A small site: index.html, a/b.css, img/x.png and "my page.html".
    fn small_site(root: &Path) {
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(root.join("img")).unwrap();
        std::fs::write(root.join("index.html"), "<p>home</p>\n").unwrap();
        std::fs::write(root.join("a/b.css"), "p { color: red }\n").unwrap();
        std::fs::write(root.join("img/x.png"), [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
        std::fs::write(root.join("my page.html"), "spaced\n").unwrap();
    }

    #[test]
    fn the_walk_lists_regular_files_and_refuses_what_it_cannot_copy() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("site");
        small_site(&root);
        let shown = Path::new("site");
        assert_eq!(
            walk_site(&root, shown).unwrap(),
            [
                ("a/b.css".to_string(), 17),
                ("img/x.png".to_string(), 7),
                ("index.html".to_string(), 12),
                ("my page.html".to_string(), 7),
            ]
        );
        let refused = |make: &dyn Fn(&Path)| {
            let d = tempfile::tempdir().unwrap();
            let root = d.path().join("site");
            small_site(&root);
            make(&root);
            walk_site(&root, shown).unwrap_err()
        };
        assert_eq!(
            refused(&|r| std::os::unix::fs::symlink("/etc/passwd", r.join("a/link")).unwrap()),
            "site/a/link is a symbolic link; copy what it points to into the site"
        );
        assert_eq!(
            refused(&|r| {
                let name = std::ffi::OsStr::from_bytes(b"bad\xffname");
                std::fs::write(r.join("img").join(name), "x").unwrap();
            }),
            "site/img/bad\u{FFFD}name: the name is not UTF-8"
        );
        assert_eq!(
            refused(&|r| std::fs::write(r.join("a\x1b[2Jb"), "x").unwrap()),
            "\"site/a\\u{1b}[2Jb\": the name holds a control character"
        );
        assert_eq!(
            refused(&|r| {
                std::os::unix::net::UnixListener::bind(r.join("a/sock")).unwrap();
            }),
            "site/a/sock is neither a file nor a folder (a device, socket or pipe)"
        );
        // A sparse file: the size counts, not the blocks it takes.
        assert_eq!(
            refused(&|r| {
                let f = std::fs::File::create(r.join("img/huge.iso")).unwrap();
                f.set_len(OWN_SITE_MAX_BYTES).unwrap();
            }),
            "site holds more than 2 GiB (reached at site/img/huge.iso); a site is copied into \
             every run"
        );
        assert_eq!(
            walk_site(&dir.path().join("gone"), Path::new("gone")).unwrap_err(),
            "gone: No such file or directory (os error 2)"
        );
        assert_eq!(
            walk_site(&root.join("index.html"), Path::new("site/index.html")).unwrap_err(),
            "site/index.html is not a folder"
        );
    }

    #[test]
    fn a_site_is_copied_readable_with_each_url_and_its_exact_body() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        small_site(&dir.path().join("site"));
        // Private to its owner: the copy is readable by the servers' user.
        let x = dir.path().join("site/img/x.png");
        std::fs::set_permissions(&x, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(
            dir.path().join("paths.txt"),
            "# three of four\n/img/x.png\n/\n/my%20page.html\n",
        )
        .unwrap();
        let id = WorkloadId::own("mirror");
        let site = OwnSite::open(id, dir.path(), "site", Some("paths.txt")).unwrap();
        assert_eq!(
            site.urls,
            [
                ("/img/x.png".to_string(), "img/x.png".to_string()),
                ("/".to_string(), "index.html".to_string()),
                ("/my%20page.html".to_string(), "my page.html".to_string()),
            ]
        );
        let w = site.copy_into(&dir.path().join("docroot-mirror")).unwrap();
        assert_eq!((w.kind, w.kind.name()), (id, "mirror"));
        assert_eq!(w.paths(), ["/img/x.png", "/", "/my%20page.html"]);
        assert_eq!(
            std::fs::read(&w.files[0].1).unwrap(),
            std::fs::read(&x).unwrap()
        );
        assert_eq!(std::fs::read(&w.files[1].1).unwrap(), b"<p>home</p>\n");
        let mode = std::fs::metadata(&w.files[0].1)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
        let img = std::fs::metadata(w.docroot.join("img"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(img & 0o777, 0o755);
        // Every file is copied, listed or not.
        assert!(w.docroot.join("a/b.css").is_file());
        assert_eq!(w.total_bytes(), 7 + 12 + 7);
        // Without a list: every file, sorted, its path encoded.
        let all = OwnSite::open(id, dir.path(), "site", None).unwrap();
        let urls: Vec<&str> = all.urls.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            urls,
            ["/a/b.css", "/img/x.png", "/index.html", "/my%20page.html"]
        );
        assert_eq!(WorkloadId::own("mirror"), id, "one name, one id");
        assert!(!id.is_dynamic() && !id.random_order());
        assert_eq!(Option::<WorkloadKind>::from(id), None);
    }

    #[test]
    fn a_url_list_naming_what_the_site_lacks_is_refused_by_line() {
        let dir = tempfile::tempdir().unwrap();
        small_site(&dir.path().join("site"));
        let id = WorkloadId::own("mirror");
        let refused = |list: &str| {
            std::fs::write(dir.path().join("paths.txt"), list).unwrap();
            OwnSite::open(id, dir.path(), "site", Some("paths.txt")).unwrap_err()
        };
        let urls = |e: &str| ("urls", e.to_string());
        assert_eq!(
            refused("/index.html\n# then\n/a/missing.css\n"),
            urls("paths.txt line 3: /a/missing.css: no file site/a/missing.css")
        );
        assert_eq!(
            refused("/img/\n"),
            urls("paths.txt line 1: /img/: no file site/img/index.html")
        );
        assert_eq!(
            refused("/a\n"),
            urls("paths.txt line 1: /a is a folder; write /a/ for its index.html")
        );
        assert_eq!(
            refused("/../secret\n"),
            urls("paths.txt line 1: \"/../secret\" has a .. segment")
        );
        assert_eq!(refused("# nothing\n\n"), urls("paths.txt lists no paths"));
        assert_eq!(
            OwnSite::open(id, dir.path(), "site", Some("gone.txt")).unwrap_err(),
            urls("gone.txt: No such file or directory (os error 2)")
        );
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        assert_eq!(
            OwnSite::open(id, dir.path(), "empty", None).unwrap_err(),
            ("docroot", "empty holds no files".to_string())
        );
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
