#[derive(clap::Args)]
pub struct CompareArgs {}

pub fn run(_args: CompareArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
