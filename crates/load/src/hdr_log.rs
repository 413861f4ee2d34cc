//! A run's latency as an HdrHistogram interval log: one histogram per
//! second of the measured phase, in the format wrk2's users and
//! HdrHistogram's own tools (`HistogramLogProcessor`, the plotters) read.
//! Values are microseconds, as the summary's. A second is written once
//! every thread has handed it over, so the log never holds more than a
//! few seconds in memory; the file is written beside its destination and
//! renamed onto it when the run is over, so FILE is either absent or
//! whole.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use throng_engine::tap::Tick;

pub struct IntervalLog {
    path: PathBuf,
    partial: PathBuf,
    out: BufWriter<File>,
    serializer: V2DeflateSerializer,
    /// Seconds handed over by some threads, merged as they come.
    pending: BTreeMap<u64, Histogram<u64>>,
    /// Per thread, the latest second it handed over, and whether it is done.
    passed: Vec<Option<u64>>,
    done: Vec<bool>,
    /// The next second to write, and the last second anything was recorded in.
    next: u64,
    last_data: Option<u64>,
    /// An empty histogram of the run's bounds, for seconds without data.
    empty: Option<Histogram<u64>>,
    started: bool,
}

impl IntervalLog {
    /// Opens the file the log is written to until it is whole: a path
    /// that cannot be written is refused here, before any request.
    pub fn create(path: &Path) -> std::io::Result<IntervalLog> {
        // Renamed onto its destination when whole: a device or a pipe
        // (/dev/stdout) would be replaced rather than written, and a link
        // must keep pointing where it did.
        let path = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return Err(std::io::Error::other("is a directory")),
            Ok(m) if !m.is_file() => return Err(std::io::Error::other("is not a regular file")),
            Ok(_) => std::fs::canonicalize(path)?,
            Err(_) => path.to_path_buf(),
        };
        let path = path.as_path();
        let name = path
            .file_name()
            .ok_or_else(|| std::io::Error::other("names a directory, not a file"))?;
        let mut partial_name = std::ffi::OsString::from(".");
        partial_name.push(name);
        partial_name.push(format!(".{}.partial", std::process::id()));
        let partial = path.with_file_name(partial_name);
        let file = File::create(&partial)?;
        Ok(IntervalLog {
            path: path.to_path_buf(),
            partial,
            out: BufWriter::new(file),
            serializer: V2DeflateSerializer::new(),
            pending: BTreeMap::new(),
            passed: Vec::new(),
            done: Vec::new(),
            next: 0,
            last_data: None,
            empty: None,
            started: false,
        })
    }

    /// A thread's second: merged with the other threads' of that second,
    /// and every second all threads have passed written out.
    pub fn tick(&mut self, tick: Tick) -> std::io::Result<()> {
        if !self.started {
            self.header(tick.start_unix_s - tick.second as f64)?;
        }
        if self.passed.len() < tick.threads {
            self.passed.resize(tick.threads, None);
            self.done.resize(tick.threads, false);
        }
        if let Some(h) = tick.latency {
            if self.empty.is_none() {
                self.empty = Some(Histogram::new_from(&h));
            }
            self.last_data = Some(self.last_data.map_or(tick.second, |d| d.max(tick.second)));
            match self.pending.get_mut(&tick.second) {
                // Same bounds in every thread: adding cannot fail.
                Some(sum) => sum.add(&h).map_err(std::io::Error::other)?,
                None => {
                    self.pending.insert(tick.second, h);
                }
            }
        }
        if let Some(p) = self.passed.get_mut(tick.thread) {
            *p = Some(tick.second);
        }
        if tick.last {
            if let Some(d) = self.done.get_mut(tick.thread) {
                *d = true;
            }
        }
        let whole = self
            .passed
            .iter()
            .zip(&self.done)
            .map(|(p, &d)| if d { Some(u64::MAX) } else { *p })
            .min()
            .flatten();
        if let (Some(whole), Some(last)) = (whole, self.last_data) {
            self.write_through(whole.min(last))?;
        }
        Ok(())
    }

    /// The run is over: what is left is written and the log takes its
    /// name. `started_unix_s` dates a log in which nothing was recorded.
    pub fn finish(mut self, started_unix_s: f64) -> std::io::Result<PathBuf> {
        if !self.started {
            self.header(started_unix_s)?;
        }
        if let Some(last) = self.last_data {
            self.write_through(last)?;
        }
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        std::fs::rename(&self.partial, &self.path)?;
        Ok(self.path.clone())
    }

    fn header(&mut self, start_unix_s: f64) -> std::io::Result<()> {
        self.started = true;
        writeln!(self.out, "#[Latency of throng load, one interval per second of the measured phase, values in microseconds]")?;
        writeln!(self.out, "#[Histogram log format version 1.3]")?;
        writeln!(
            self.out,
            "#[StartTime: {start_unix_s:.3} (seconds since epoch)]"
        )?;
        writeln!(
            self.out,
            "#[BaseTime: {start_unix_s:.3} (seconds since epoch)]"
        )?;
        writeln!(
            self.out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )
    }

    fn write_through(&mut self, through: u64) -> std::io::Result<()> {
        while self.next <= through {
            let second = self.next;
            let h = match self.pending.remove(&second) {
                Some(h) => h,
                None => match &self.empty {
                    Some(e) => e.clone(),
                    None => return Ok(()),
                },
            };
            // No headers asked of the builder: it only lends its writer.
            IntervalLogWriterBuilder::new()
                .begin_log_with(&mut self.out, &mut self.serializer)?
                .write_histogram(
                    &h,
                    Duration::from_secs(second),
                    Duration::from_secs(1),
                    None,
                )
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            self.next += 1;
        }
        Ok(())
    }
}

impl Drop for IntervalLog {
    /// A log never finished (a run that failed) leaves no file behind.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.partial);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    fn tick(thread: usize, second: u64, values: &[u64], last: bool) -> Tick {
        Tick {
            thread,
            threads: 2,
            second,
            start_unix_s: 1000.0 + second as f64,
            latency: (!values.is_empty()).then(|| hist(values)),
            completed: 0,
            errors: Default::default(),
            status: Default::default(),
            in_flight: 0,
            open: 0,
            last,
        }
    }

    #[test]
    fn threads_seconds_merge_per_second_and_a_quiet_second_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.hlog");
        let mut log = IntervalLog::create(&path).unwrap();
        // Thread 1 skips second 1 (nothing recorded) and ends first.
        for t in [
            tick(0, 0, &[10, 20], false),
            tick(1, 0, &[30], false),
            tick(1, 2, &[5000, 7], true),
            tick(0, 1, &[], false),
            tick(0, 2, &[40], true),
        ] {
            log.tick(t).unwrap();
        }
        assert!(!path.exists(), "the log takes its name only once whole");
        log.finish(1000.0).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("#[StartTime: 1000.000 (seconds since epoch)]\n"));
        assert!(text.contains("#[BaseTime: 1000.000 (seconds since epoch)]\n"));
        let mut de = Deserializer::new();
        let mut got = Vec::new();
        for e in IntervalLogIterator::new(text.as_bytes()) {
            if let LogEntry::Interval(i) = e.unwrap() {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let h: Histogram<u64> = de.deserialize(&mut &bytes[..]).unwrap();
                got.push((i.start_timestamp().as_secs(), h));
            }
        }
        let want = [
            (0, hist(&[10, 20, 30])),
            (1, hist(&[])),
            (2, hist(&[5000, 7, 40])),
        ];
        assert_eq!(got.len(), want.len());
        for ((s, h), (ws, wh)) in got.iter().zip(&want) {
            assert_eq!(s, ws);
            assert!(h == wh, "second {s}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_log_never_finished_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = IntervalLog::create(&dir.path().join("x.hlog")).unwrap();
        drop(log);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
