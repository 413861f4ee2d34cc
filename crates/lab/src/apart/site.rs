//! The coordinator's side of a site of the user's own apart: the site it
//! read and checked where the study file is, sent to the server host
//! (`archive`), which verifies it before any server starts.

use throng_remote::Place;

use super::archive;
use super::wire::{LabReply, LabRequest};
use crate::workload::OwnSite;

/// Sends `site` to the server host at `place` through `call`: its
/// manifest, every chunk, then its end, which the host answers once every
/// file is verified. A refusal there names the host and the file.
pub(super) fn send(
    call: &mut dyn FnMut(LabRequest) -> Result<LabReply, String>,
    place: &Place,
    site: &OwnSite,
) -> anyhow::Result<()> {
    let manifest = archive::manifest(site)?;
    let mut ask = |req: LabRequest| match call(req) {
        Ok(LabReply::Done) => Ok(()),
        Ok(other) => Err(anyhow::anyhow!("{place}: unexpected reply {other:?}")),
        Err(e) => Err(anyhow::anyhow!("{place}: {e}")),
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
