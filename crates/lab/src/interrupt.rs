//! Ctrl-C (and SIGTERM/SIGHUP): the first one stops the load engine and
//! lets the lab unwind (steps measured so far are kept, the run is marked
//! incomplete, servers are stopped by their guards); a second one kills
//! every server group at once and exits.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use throng_engine::Control;

/// Shared between the lab and whoever interrupts it.
#[derive(Clone, Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    current: Arc<Mutex<Option<Control>>>,
}

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the lab to stop: the running load round ends at once.
    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
        if let Ok(c) = self.current.lock() {
            if let Some(c) = c.as_ref() {
                c.stop();
            }
        }
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// A control for the next load run, stopped already if interrupted.
    pub(crate) fn control(&self) -> Control {
        let c = Control::new();
        if let Ok(mut cur) = self.current.lock() {
            *cur = Some(c.clone());
        }
        if self.is_set() {
            c.stop();
        }
        c
    }
}

static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Installs the handlers for the life of the process. A watcher thread does
/// the work, since a signal handler may only touch atomics.
pub fn install(interrupt: Interrupt) -> anyhow::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only increments an atomic.
        unsafe { sigaction(s, &action)? };
    }
    std::thread::Builder::new()
        .name("throng-interrupt".into())
        .spawn(move || {
            let mut seen = 0;
            loop {
                let n = SIGNALS.load(Ordering::SeqCst);
                if n > seen {
                    seen = n;
                    if n == 1 {
                        interrupt.trigger();
                    } else {
                        crate::process::kill_all_servers();
                        std::process::exit(130);
                    }
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        })?;
    Ok(())
}
