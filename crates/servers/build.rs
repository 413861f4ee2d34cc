//! Builds the futex-hash shim (`shim/futex_global.c`) into a shared object
//! the crate carries in its own bytes (`futex::SHIM`): it is written next
//! to a run's servers wherever they start, this machine or a server host
//! the same binary was sent to, with no file of its own to install.

use std::path::PathBuf;

fn main() {
    let src = "shim/futex_global.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("futex_global.so");
    let compiler = cc::Build::new().get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(src)
        .arg("-lpthread")
        .status()
        .expect("running the C compiler for the futex-hash shim");
    assert!(status.success(), "compiling {src} failed");
}
