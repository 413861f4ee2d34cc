//! What the tests that start servers share: the certificate, whether a
//! recipe can be tried here, and the wait for its processes to end.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use throng_servers::launch::TlsFiles;
use throng_servers::process::is_alive;
use throng_servers::{Recipe, Recipes};

/// The recipes installed here, each with its backend; the others are
/// named as skipped.
pub fn installed(recipes: &Recipes) -> Vec<(&Recipe, Option<&Recipe>)> {
    let mut out = Vec::new();
    for recipe in recipes.all() {
        let backend = recipe.backend.as_ref().map(|b| recipes.get(b).unwrap());
        if !recipe.is_installed() || backend.is_some_and(|b| !b.is_installed()) {
            eprintln!("skipped {}: not installed", recipe.name);
            continue;
        }
        out.push((recipe, backend));
    }
    out
}

/// The test kit's self-signed ECDSA P-256 leaf for localhost and
/// 127.0.0.1, as a recipe's TLS files.
pub fn certificate() -> TlsFiles {
    let pair = throng_testkit::cert::localhost();
    TlsFiles {
        cert_pem: pair.cert_pem,
        key_pem: pair.key_pem,
    }
}

/// Why a recipe cannot be tried on this machine, over TLS when `tls`, if
/// it cannot.
pub fn missing(recipe: &Recipe, tls: bool) -> Option<String> {
    if !recipe.is_installed() {
        return Some(format!("{} is not installed", recipe.binary));
    }
    // Debian ships lighttpd's TLS module in a package of its own.
    let module = Path::new("/usr/lib/lighttpd/mod_openssl.so");
    if tls && recipe.name == "lighttpd" && !module.exists() {
        return Some(format!(
            "{} is missing (Debian package lighttpd-mod-openssl)",
            module.display()
        ));
    }
    None
}

/// Waits, within `within`, until none of `pids` is alive.
pub fn gone(pids: &[i32], within: Duration) -> bool {
    throng_testkit::wait::wait_for(within, || pids.iter().all(|&p| !is_alive(p)))
}
