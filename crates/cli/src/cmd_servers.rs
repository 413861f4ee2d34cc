//! `throng servers`: the recipes, whether each server is installed, its
//! version, and the Debian package that installs a missing one.

use std::path::PathBuf;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use throng_lab::Recipes;

#[derive(clap::Args)]
pub struct ServersArgs {
    /// Folder of recipe TOML files that add to or replace the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub recipes: Option<PathBuf>,
    /// Also print each recipe's notes (settings a server lacks).
    #[arg(long)]
    pub notes: bool,
}

pub fn run(args: ServersArgs) -> anyhow::Result<u8> {
    let recipes = Recipes::load(args.recipes.as_deref())?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(["recipe", "model", "installed", "version", "package"]);
    let mut missing = 0;
    for r in recipes.all() {
        let installed = r.is_installed();
        let backend_ok = r
            .backend
            .as_deref()
            .and_then(|b| recipes.get(b))
            .is_none_or(|b| b.is_installed());
        if !installed || !backend_ok {
            missing += 1;
        }
        let state = match (installed, backend_ok) {
            (true, true) => "yes".to_string(),
            (true, false) => format!("backend {} missing", r.backend.as_deref().unwrap_or("")),
            _ => "no".to_string(),
        };
        // The package a report of this server will name: dpkg's owner of
        // the binary (nginx, apache2-bin), not the one to install it with.
        let package = if installed {
            throng_lab::features::installed_package(r)
        } else if r.package.is_empty() {
            r.package.clone()
        } else {
            format!("apt-get install {}", r.package)
        };
        let version = if installed {
            r.version()
        } else {
            String::new()
        };
        table.add_row([r.name.clone(), r.model.clone(), state, version, package]);
    }
    outln!("{table}")?;
    if args.notes {
        for r in recipes.all() {
            outln!("\n{}: {}", r.name, r.notes)?;
        }
    }
    if missing > 0 {
        outln!("\n{missing} recipe(s) cannot run until their package is installed.")?;
    }
    Ok(0)
}
