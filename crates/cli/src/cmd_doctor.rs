#[derive(clap::Args)]
pub struct DoctorArgs {}

pub fn run(_args: DoctorArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
