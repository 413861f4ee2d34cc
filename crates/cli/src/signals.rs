//! The process's signals are the CLI's: the libraries only read flags.
//! The first SIGINT, SIGTERM or SIGHUP asks the running command to stop
//! cleanly (a load run ends within milliseconds, reports what it measured
//! as interrupted, and exits with 130; a lab study keeps what it measured
//! and stops its servers); a second one kills every server group this
//! process started and exits with 130 at once.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Exit code of a command stopped by a signal, as shells report one
/// killed by SIGINT: scripts see that the run is not the one asked for.
pub const INTERRUPTED: u8 = 130;

/// Watches the signals on a thread of its own and calls `stop` on the
/// first one.
pub fn on_interrupt(stop: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("throng-signals".into())
        .spawn(move || {
            let mut seen = 0;
            for _ in signals.forever() {
                seen += 1;
                if seen == 1 {
                    stop();
                } else {
                    throng_servers::process::kill_all_servers();
                    // No drop runs past exit: what they would remove goes
                    // here, or a run directory was left behind.
                    throng_servers::rundir::remove_all_live();
                    eprintln!(
                        "throng: interrupted again: stopped at once, the run left incomplete"
                    );
                    std::process::exit(i32::from(INTERRUPTED));
                }
            }
        })?;
    Ok(())
}
