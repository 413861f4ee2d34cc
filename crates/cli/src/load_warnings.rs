//! A load's warnings in words, for the terminal and the JSON document
//! alike (docs/json-schema.md: `warnings[]`, one warning in English). The
//! summary keeps them as codes with figures.

use throng_model::Warning;

/// A warning in words for the reader of a summary. No option is named:
/// the same words are printed for a load and its JSON document.
pub fn text(w: &Warning) -> String {
    match w {
        Warning::ResponseChanged { url, sizes } => format!(
            "threads saw different first responses for {url} (body sizes {sizes:?}): the \
             response changed during the run, so size checks hold each thread to its own"
        ),
        Warning::FewerConnections {
            established,
            requested,
        } => format!(
            "only {established} of {requested} connections could be established: \
             the load was lighter than asked"
        ),
        Warning::LateSends { late, sent } => {
            let sent = (*sent).max(1);
            format!(
                "{late} of {sent} sends ({:.1}%) went out more than 1 ms after their intended \
                 time: latency includes that wait (no coordinated omission), but the client or \
                 server could not keep up with the schedule",
                *late as f64 * 100.0 / sent as f64
            )
        }
        Warning::Unsent { unsent, sent } => format!(
            "{unsent} requests fell due in the measured time but were never sent, beside the \
             {sent} sent: every connection was still busy with an earlier request, so their \
             latency (at least from their intended time to the end) is in no figure; use more \
             connections or a lower rate"
        ),
        Warning::UringUnavailable { reason } => {
            format!("io_uring could not be set up ({reason}): the load ran on epoll")
        }
        Warning::SharedCpus { threads, cpus } => format!(
            "{threads} load threads shared {cpus} CPU{}: they took turns, so their latency \
             and the client's CPU include waits for one another; one thread per CPU is the most \
             that helps",
            if *cpus == 1 { "" } else { "s" }
        ),
        // Stored in words by an earlier build: as they were.
        Warning::Worded(words) => words.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_worded_without_option_names() {
        let late = text(&Warning::LateSends { late: 5, sent: 200 });
        assert!(
            late.starts_with("5 of 200 sends (2.5%) went out more than 1 ms"),
            "{late}"
        );
        let few = text(&Warning::FewerConnections {
            established: 8,
            requested: 10,
        });
        assert_eq!(
            few,
            "only 8 of 10 connections could be established: the load was lighter than asked"
        );
        for w in [late, few] {
            assert!(!w.contains("--"), "{w}");
        }
    }
}
