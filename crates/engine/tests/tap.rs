//! A run's seconds handed over as they end: each thread's ticks come in
//! increasing seconds and end with one marked last, their histograms merge
//! to the run's latency bit for bit, a second's histograms hold that
//! second's responses of the timeline, and the last ticks' counts are the
//! run's.

mod common;

use std::time::Duration;

use common::{answer, Server};
use hdrhistogram::Histogram;
use throng_engine::tap::Tick;
use throng_engine::{Control, Stop};

#[test]
fn ticks_add_up_to_the_run() {
    let server = Server::start(answer);
    let mut spec = server.spec();
    spec.connections = 4;
    spec.threads = 2;
    spec.rate = Some(400.0);
    spec.stop = Stop::Duration(Duration::from_millis(2500));
    spec.timeline = true;
    let (tx, rx) = std::sync::mpsc::channel::<Tick>();
    let r = throng_engine::run_tapped(&spec, &Control::new(), Some(tx)).unwrap();
    let ticks: Vec<Tick> = rx.iter().collect();
    assert!(r.counts.completed > 0);
    let mut all = Histogram::<u64>::new_from(&r.latency);
    let mut per_second = vec![0u64; r.timeline.len().max(4)];
    let mut completed = 0;
    for thread in 0..2 {
        let mine: Vec<&Tick> = ticks.iter().filter(|t| t.thread == thread).collect();
        assert!(mine.iter().all(|t| t.threads == 2));
        assert!(mine.windows(2).all(|w| w[0].second < w[1].second));
        assert_eq!(mine.iter().filter(|t| t.last).count(), 1);
        let last = mine.last().unwrap();
        assert!(last.last);
        completed += last.completed;
        assert_eq!(last.status[2], last.completed);
        for t in &mine {
            if let Some(h) = &t.latency {
                all.add(h).unwrap();
                per_second[t.second as usize] += h.len();
            }
        }
    }
    assert_eq!(completed, r.counts.completed);
    assert!(all == r.latency, "the ticks merge to the run's histogram");
    for (k, s) in r.timeline.iter().enumerate() {
        assert_eq!(per_second[k], s.completed, "second {k}");
    }
    assert_eq!(
        per_second[r.timeline.len()..].iter().sum::<u64>(),
        0,
        "no tick holds a second the timeline lacks"
    );
}
