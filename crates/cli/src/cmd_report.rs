#[derive(clap::Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
