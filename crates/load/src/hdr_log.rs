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
        let name = path
            .file_name()
            .ok_or_else(|| std::io::Error::other("names a directory, not a file"))?;
        if path.is_dir() {
            return Err(std::io::Error::other("is a directory"));
        }
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
