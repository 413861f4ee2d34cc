//! A study's sites of the user's own: `[workload.NAME]` tables with a
//! `docroot`, walked and their URL lists read before anything starts, on
//! the machine that holds the study file (apart, the server host gets
//! them sent, `apart::archive`).

use std::path::Path;

use super::StudyFile;
use crate::workload::{OwnSite, WorkloadId};

/// Every listed workload that is a site of the user's own, its files and
/// URLs checked; paths relative to `base`, the study file's folder.
pub(super) fn open_sites(
    f: &StudyFile,
    workloads: &[WorkloadId],
    base: &Path,
) -> anyhow::Result<Vec<OwnSite>> {
    let mut sites = Vec::new();
    for &id in workloads {
        let WorkloadId::Own(name) = id else {
            continue;
        };
        let Some(table) = f.workload.get(name) else {
            continue;
        };
        let Some(docroot) = &table.docroot else {
            continue;
        };
        let site = OwnSite::open(id, base, docroot, table.urls.as_deref())
            .map_err(|(key, e)| anyhow::anyhow!("[workload.{name}] {key}: {e}"))?;
        sites.push(site);
    }
    Ok(sites)
}

#[cfg(test)]
mod tests {
    use super::super::Study;
    use crate::workload::WorkloadId;
    use crate::Recipes;
    use throng_model::WorkloadKind;

    fn study_in(dir: &std::path::Path, workloads: &str, rest: &str) -> anyhow::Result<Study> {
        Study::parse_at(
            &format!(
                "name='x'\nservers=['nginx']\nworkloads={workloads}\ncores=[1]\n\
                 concurrency=[2]\nfeatures=false\n{rest}"
            ),
            &Recipes::builtin(),
            dir,
        )
    }

    fn site_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("site/a")).unwrap();
        std::fs::write(dir.path().join("site/index.html"), "home\n").unwrap();
        std::fs::write(dir.path().join("site/a/b.css"), "p {}\n").unwrap();
        std::fs::write(dir.path().join("paths.txt"), "/a/b.css\n/\n").unwrap();
        dir
    }

    #[test]
    fn a_site_of_your_own_is_a_workload_of_the_study() {
        let dir = site_dir();
        let s = study_in(
            dir.path(),
            "['tiny', 'mirror']",
            "[workload.mirror]\ndocroot = 'site'\nurls = 'paths.txt'\nconcurrency = [4]\n",
        )
        .unwrap();
        let mirror = WorkloadId::own("mirror");
        assert_eq!(s.workloads, [WorkloadKind::Tiny.into(), mirror]);
        assert_eq!(s.sites.len(), 1);
        assert_eq!(s.sites[0].source, dir.path().join("site"));
        assert_eq!(
            s.sites[0].urls[1],
            ("/".to_string(), "index.html".to_string())
        );
        assert_eq!(s.levels(mirror), [4]);
        assert_eq!(s.levels(WorkloadKind::Tiny), [2]);
        // A site walks its list in order unless told otherwise; built-in
        // kinds keep their own order.
        assert!(!s.load_of(mirror).random_order);
        let s = study_in(
            dir.path(),
            "['small-files', 'tiny', 'mirror']",
            "[load]\norder = 'sequential'\n[workload.mirror]\ndocroot = 'site'\norder = 'random'\n",
        )
        .unwrap();
        assert!(s.load_of(mirror).random_order);
        assert!(!s.load_of(WorkloadKind::SmallFiles).random_order);
        let s = study_in(dir.path(), "['small-files', 'tiny']", "").unwrap();
        assert!(s.load_of(WorkloadKind::SmallFiles).random_order);
        assert!(!s.load_of(WorkloadKind::Tiny).random_order);
        // Every file when there is no list.
        let s = study_in(
            dir.path(),
            "['mirror']",
            "[workload.mirror]\ndocroot = 'site'\n",
        )
        .unwrap();
        let urls: Vec<&str> = s.sites[0].urls.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(urls, ["/a/b.css", "/index.html"]);
    }

    #[test]
    fn apart_the_site_is_read_where_the_study_is_and_sent_to_the_server_host() {
        let dir = site_dir();
        let rest = "server_host = 'ssh://bench@server'\n[workload.mirror]\ndocroot = 'site'\n\
                    urls = 'paths.txt'\n";
        let s = study_in(dir.path(), "['mirror']", rest).unwrap();
        assert!(!s.hosts.is_local());
        assert_eq!(s.sites.len(), 1);
        assert_eq!(
            s.sites[0].urls,
            [
                ("/a/b.css".to_string(), "a/b.css".to_string()),
                ("/".to_string(), "index.html".to_string())
            ]
        );
        // The server host parses the same study without its folder.
        let text = format!(
            "name='x'\nservers=['nginx']\nworkloads=['mirror']\ncores=[1]\n\
             concurrency=[2]\nfeatures=false\n{rest}"
        );
        let sent = Study::parse_sent(&text, &Recipes::builtin()).unwrap();
        assert_eq!(sent.workloads, [WorkloadId::own("mirror")]);
        assert!(sent.sites.is_empty());
    }

    #[test]
    fn a_site_that_cannot_run_is_refused_by_key() {
        let dir = site_dir();
        let refused = |workloads: &str, rest: &str| match study_in(dir.path(), workloads, rest) {
            Ok(_) => panic!("accepted: {rest}"),
            Err(e) => format!("{e:#}"),
        };
        let cases: &[(&str, &str, &str)] = &[
            (
                "['site']",
                "[workload.site]\ndocroot = 'site'\n",
                "[workload.site] docroot: site is a built-in workload, stored under that name in \
                 every run; give your own site another name",
            ),
            (
                "['My Site']",
                "[workload.'My Site']\ndocroot = 'site'\n",
                "[workload.My Site] docroot: workload name \"My Site\" must start with a lowercase \
                 letter or digit and hold only lowercase letters, digits, '.', '_' and '-'",
            ),
            (
                "['tiny']",
                "[workload.tiny]\nurls = 'paths.txt'\n",
                "[workload.tiny] urls: a URL list belongs to a site of your own; give its folder \
                 as `docroot`",
            ),
            (
                "['tiny']",
                "[load]\nurls = 'paths.txt'\n",
                "[load] urls: a site of your own is one workload; give it in a [workload.NAME] \
                 table",
            ),
            (
                "['tiny']",
                "[load]\ndocroot = 'site'\n",
                "[load] docroot: a site of your own is one workload; give it in a \
                 [workload.NAME] table",
            ),
            (
                "['mirror']",
                "",
                "unknown workload \"mirror\" (known: tiny, small-files, page, large, site, cgi, \
                 php, phpinfo, app)",
            ),
            (
                "['tiny']",
                "[workload.mirror]\ndocroot = 'site'\n",
                "[workload.mirror]: mirror is not one of the study's workloads (tiny); add it to \
                 `workloads` or remove the table",
            ),
            (
                "['mirror']",
                "[workload.mirror]\ndocroot = ''\n",
                "[workload.mirror] docroot: is empty: name the site's folder",
            ),
            (
                "['mirror']",
                "[workload.mirror]\ndocroot = 'gone'\n",
                "[workload.mirror] docroot: gone: No such file or directory (os error 2)",
            ),
            (
                "['mirror']",
                "[workload.mirror]\ndocroot = 'site'\nurls = 'paths.txt'\norder = 'shuffled'\n",
                "[workload.mirror] order = \"shuffled\": give \"random\" or \"sequential\"",
            ),
        ];
        for (workloads, rest, message) in cases {
            assert_eq!(&refused(workloads, rest), message, "{rest}");
        }
        std::fs::write(dir.path().join("paths.txt"), "/a/b.css\n/a/c.css\n").unwrap();
        assert_eq!(
            refused(
                "['mirror']",
                "[workload.mirror]\ndocroot = 'site'\nurls = 'paths.txt'\n"
            ),
            "[workload.mirror] urls: paths.txt line 2: /a/c.css: no file site/a/c.css"
        );
    }
}
