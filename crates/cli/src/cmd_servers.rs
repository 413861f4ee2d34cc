#[derive(clap::Args)]
pub struct ServersArgs {}

pub fn run(_args: ServersArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
