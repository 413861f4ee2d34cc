//! The flag that stops a study. Whoever owns the process's signals (the
//! CLI) triggers it; the lab only reads it, stops the running load round at
//! once through the engine's [`Control`], and unwinds: steps measured so
//! far are kept, the run is marked incomplete, servers are stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
    pub fn control(&self) -> Control {
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
