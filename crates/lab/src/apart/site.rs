//! The coordinator's side of a site of the user's own apart: the site it
//! read and checked where the study file is, sent to the server host
//! (`archive`), which verifies it before any server starts.

use throng_remote::Place;

use super::archive;
use super::wire::{LabReply, LabRequest};
use crate::workload::OwnSite;

/// Sends `site` to the server host at `place` through `call`: its
/// manifest, every chunk, then its end, which the host answers once every
/// file is verified. A refusal there names the host and the file. A site
/// of gigabytes takes a while: `stopped` is asked before each chunk.
pub(super) fn send(
    call: &mut dyn FnMut(LabRequest) -> Result<LabReply, String>,
    place: &Place,
    site: &OwnSite,
    stopped: &dyn Fn() -> bool,
) -> anyhow::Result<()> {
    let manifest = archive::manifest(site)?;
    let mut ask = |req: LabRequest| {
        if stopped() {
            anyhow::bail!("interrupted while sending the site to {place}");
        }
        match call(req) {
            Ok(LabReply::Done) => Ok(()),
            Ok(other) => Err(anyhow::anyhow!("{place}: unexpected reply {other:?}")),
            Err(e) => Err(anyhow::anyhow!("{place}: {e}")),
        }
    };
    ask(LabRequest::SiteBegin {
        manifest: manifest.clone(),
    })?;
    archive::send_chunks(site, &manifest, &mut |path, data| {
        ask(LabRequest::SiteChunk {
            path: path.to_string(),
            data,
        })
    })?;
    ask(LabRequest::SiteEnd)
}

#[cfg(test)]
mod tests {
    use super::super::ServerHost;
    use super::*;
    use crate::workload::WorkloadId;

    /// A server host in this process with the study open, or `None` (and
    /// why, printed) where nginx, which the study names, is not installed.
    fn opened() -> Option<ServerHost> {
        let mut host = ServerHost::new();
        let open = host.handle(LabRequest::Open {
            study_toml: "name = 's'\nservers = ['nginx']\nworkloads = ['mirror']\ncores = [1]\n\
                         concurrency = [2]\nfeatures = false\nserver_host = 'ssh://srv'\n\
                         [workload.mirror]\ndocroot = 'site'\nurls = 'paths.txt'\n"
                .into(),
            recipes: Vec::new(),
            listen: "127.0.0.1".parse().unwrap(),
            keep_workdir: false,
        });
        match open {
            Ok(_) => Some(host),
            Err(e) => {
                println!("skipped: {e}");
                None
            }
        }
    }

    fn site(dir: &std::path::Path) -> OwnSite {
        std::fs::create_dir_all(dir.join("site/a")).unwrap();
        std::fs::write(dir.join("site/index.html"), "home\n").unwrap();
        std::fs::write(dir.join("site/a/b.css"), "p {}\n").unwrap();
        std::fs::write(dir.join("paths.txt"), "/a/b.css\n/\n").unwrap();
        OwnSite::open(WorkloadId::own("mirror"), dir, "site", Some("paths.txt")).unwrap()
    }

    #[test]
    fn a_file_altered_on_its_way_to_the_server_host_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut host) = opened() else {
            return;
        };
        let srv = Place::parse("ssh://srv").unwrap();
        // One byte of index.html changed between the two hosts.
        let mut tamper = |req: LabRequest| {
            let req = match req {
                LabRequest::SiteChunk { path, .. } if path == "index.html" => {
                    LabRequest::SiteChunk {
                        path,
                        data: archive::encode(b"hone\n"),
                    }
                }
                other => other,
            };
            host.handle(req)
        };
        let e = send(&mut tamper, &srv, &site(dir.path()), &|| false).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "ssh://srv: [workload.mirror] docroot: index.html on the server host does not \
                 match the file sent: SHA-256 {} there, {} sent",
                &archive::sha256_of(&b"hone\n"[..]).unwrap()[..16],
                &archive::sha256_of(&b"home\n"[..]).unwrap()[..16],
            )
        );
        // Nothing can start on a site that was refused.
        let start = host.handle(LabRequest::Start {
            server: "nginx".into(),
            cores: 1,
            server_cpus: vec![0],
            workload: "mirror".into(),
            max_concurrency: 2,
        });
        assert_eq!(
            start.err().as_deref(),
            Some("[workload.mirror] docroot: the site was not sent to this host")
        );
        // Sent whole to a study opened afresh, it is taken; twice, it is
        // refused.
        let s = site(dir.path());
        host.shutdown();
        let Some(mut host) = opened() else {
            return;
        };
        send(&mut |r| host.handle(r), &srv, &s, &|| false).unwrap();
        assert_eq!(
            format!(
                "{:#}",
                send(&mut |r| host.handle(r), &srv, &s, &|| false).unwrap_err()
            ),
            "ssh://srv: [workload.mirror] docroot: not a site of the study still to be sent"
        );
        // An interrupt stops the sending before the next message.
        host.shutdown();
        let Some(mut host) = opened() else {
            return;
        };
        assert_eq!(
            format!(
                "{:#}",
                send(&mut |r| host.handle(r), &srv, &s, &|| true).unwrap_err()
            ),
            "interrupted while sending the site to ssh://srv"
        );
        host.shutdown();
    }
}
