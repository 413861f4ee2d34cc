//! Builds the futex-hash shim (`shim/futex_global.rs`) into a shared object
//! the crate carries in its own bytes (`futex::SHIM`): it is written next
//! to a run's servers wherever they start, this machine or a server host
//! the same binary was sent to, with no file of its own to install.

use std::path::PathBuf;
use std::process::Command;

const FLAGS: &str =
    "--crate-type cdylib --edition 2021 -C opt-level=2 -C panic=abort -C strip=symbols -D warnings";

fn main() {
    let src = "shim/futex_global.rs";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("futex_global.so");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let target = std::env::var("TARGET").expect("TARGET");
    let status = Command::new(rustc)
        .args(FLAGS.split(' '))
        .args(["--target", &target, "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .expect("running rustc for the futex-hash shim");
    assert!(status.success(), "building {src} failed");
}
