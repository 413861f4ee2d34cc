#[derive(clap::Args)]
pub struct LabArgs {}

pub fn run(_args: LabArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
