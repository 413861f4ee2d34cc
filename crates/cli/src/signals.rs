//! Ctrl-C: stop the load (or the lab) cleanly, so that what was measured is
//! still reported and no child process is left behind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use throng_engine::Control;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: anything else is not async-signal-safe.
    if let Some(f) = FLAG.get() {
        f.store(true, Ordering::Relaxed);
    }
}

/// Make SIGINT and SIGTERM stop `control` instead of killing the process.
pub fn stop_on_interrupt(control: &Control) {
    if FLAG.set(control.flag()).is_err() {
        return;
    }
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler that only performs an atomic store.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}
