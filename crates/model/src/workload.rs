//! The built-in workloads by name. The names are stored with every step
//! and never change.

/// Bodies at least this large make a workload a large-file one: measured
/// by bandwidth (MB/s) and how long one transfer takes, as the
/// Apache/lighttpd/nginx/Varnish article reported its 21 MB file, since
/// req/s of a few transfers a second says little. The report weighs the
/// bodies a step received; the lab's live lines know only the workload's
/// name, so [`WorkloadKind::is_large`] answers for the built-ins by the
/// same threshold.
pub const LARGE_BODY_BYTES: u64 = 1024 * 1024;

/// Whether responses of `mean_body_bytes` on average are large ones.
pub fn is_large_body(mean_body_bytes: f64) -> bool {
    mean_body_bytes >= LARGE_BODY_BYTES as f64
}

/// A built-in workload; the lab generates its document root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// A 7-byte index.html, as the 2016 Linux web server benchmark served
    /// with weighttp.
    Tiny,
    /// 1000 files of 1 KB requested at random, as ACME's thttpd comparison
    /// did to factor out I/O.
    SmallFiles,
    /// One 6.3 KB HTML page, the Apache/lighttpd/nginx/Varnish article's page.
    Page,
    /// One 21 MB file: MB/s and transfer time, the same article's large file.
    Large,
    /// About 400 files of a synthetic site, requested as a URL list, as
    /// Seravo's article did with siege over a mirrored site.
    Site,
    /// A hello-world CGI program in C, compiled by the lab, as in ACME's
    /// comparison.
    Cgi,
    /// A small templated PHP page and phpinfo() in turn, through php-fpm.
    Php,
    /// phpinfo() alone, through the same PHP path as `php`: the
    /// Apache/lighttpd/nginx/Varnish article's second test.
    Phpinfo,
    /// The `page` body served by a Node.js app behind the server, the
    /// reverse-proxy case of Seravo's article.
    App,
}

impl WorkloadKind {
    /// The `large` workload's one file: 21 MiB.
    pub const LARGE_FILE_BYTES: u64 = 21 * 1024 * 1024;

    pub const ALL: [WorkloadKind; 9] = [
        WorkloadKind::Tiny,
        WorkloadKind::SmallFiles,
        WorkloadKind::Page,
        WorkloadKind::Large,
        WorkloadKind::Site,
        WorkloadKind::Cgi,
        WorkloadKind::Php,
        WorkloadKind::Phpinfo,
        WorkloadKind::App,
    ];

    /// The workload a study names; `None` for an unknown name.
    pub fn parse(name: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Tiny => "tiny",
            WorkloadKind::SmallFiles => "small-files",
            WorkloadKind::Page => "page",
            WorkloadKind::Large => "large",
            WorkloadKind::Site => "site",
            WorkloadKind::Cgi => "cgi",
            WorkloadKind::Php => "php",
            WorkloadKind::Phpinfo => "phpinfo",
            WorkloadKind::App => "app",
        }
    }

    /// The recipe table (`[workloads.NAME]`) that says how a server serves
    /// it: `phpinfo` goes through the PHP path `php` sets up, so a recipe
    /// states its PHP once and both workloads measure the same path.
    pub fn recipe_table(self) -> &'static str {
        match self {
            WorkloadKind::Phpinfo => WorkloadKind::Php.name(),
            k => k.name(),
        }
    }

    /// Whether its bodies are large by [`LARGE_BODY_BYTES`]: only the
    /// large file's are; every other built-in serves bodies of a few KB.
    pub fn is_large(self) -> bool {
        const _: () = assert!(WorkloadKind::LARGE_FILE_BYTES >= LARGE_BODY_BYTES);
        self == WorkloadKind::Large
    }

    /// Answered by a program behind the server rather than from a file.
    pub fn is_dynamic(self) -> bool {
        matches!(
            self,
            WorkloadKind::Cgi | WorkloadKind::Php | WorkloadKind::Phpinfo | WorkloadKind::App
        )
    }

    /// Several URLs are requested in random order; one URL is requested alone.
    pub fn random_order(self) -> bool {
        matches!(self, WorkloadKind::SmallFiles | WorkloadKind::Site)
    }

    /// How long one response may take before it counts as a timeout: a 21 MB
    /// transfer shared by hundreds of connections legitimately takes seconds.
    pub fn request_timeout(self) -> std::time::Duration {
        match self {
            WorkloadKind::Large => std::time::Duration::from_secs(30),
            _ => std::time::Duration::from_secs(5),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_is_one_mebibyte_of_body_and_only_the_large_workload() {
        assert!(is_large_body(1024.0 * 1024.0));
        assert!(!is_large_body(1024.0 * 1024.0 - 1.0));
        assert!(is_large_body(WorkloadKind::LARGE_FILE_BYTES as f64));
        let large: Vec<_> = WorkloadKind::ALL
            .into_iter()
            .filter(|k| k.is_large())
            .collect();
        assert_eq!(large, [WorkloadKind::Large]);
    }

    #[test]
    fn phpinfo_is_served_through_the_php_table() {
        assert_eq!(WorkloadKind::parse("phpinfo"), Some(WorkloadKind::Phpinfo));
        assert_eq!(WorkloadKind::Phpinfo.recipe_table(), "php");
        assert!(WorkloadKind::Phpinfo.is_dynamic());
        let own: Vec<_> = WorkloadKind::ALL
            .into_iter()
            .filter(|k| k.recipe_table() != k.name())
            .collect();
        assert_eq!(own, [WorkloadKind::Phpinfo]);
    }
}
