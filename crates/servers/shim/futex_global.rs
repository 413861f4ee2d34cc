//! Loaded into every process of a server under test (`LD_PRELOAD`) when the
//! lab starts servers on the kernel's global futex hash (`crate::futex` of
//! throng-servers says why). Built by the crate's `build.rs` as a shared
//! object of its own: it cannot be part of the crate, which is linked into
//! throng, not loaded into servers.
//!
//! At load, and again in every child the process forks (a fork gets a new
//! address space, and with it no hash of its own yet: servers fork their
//! workers without exec), it asks for zero slots, which keeps the process on
//! the global hash. A kernel without private hashes refuses the request, and
//! nothing changes.

#![no_std]

use core::ffi::{c_int, c_ulong};

const PR_FUTEX_HASH: c_int = 78;
const PR_FUTEX_HASH_SET_SLOTS: c_ulong = 1;

#[link(name = "c")]
extern "C" {
    fn prctl(option: c_int, ...) -> c_int;
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> c_int;
}

extern "C" fn global_hash() {
    // SAFETY: prctl with integer arguments reads nothing of ours.
    unsafe {
        prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, 0 as c_ulong, 0 as c_ulong, 0 as c_ulong);
    }
}

extern "C" fn at_load() {
    global_hash();
    // SAFETY: registers a function that stays loaded as long as the process.
    unsafe {
        pthread_atfork(None, None, Some(global_hash));
    }
}

/// Run by the dynamic loader when the object is loaded, before the
/// program's own code.
#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
