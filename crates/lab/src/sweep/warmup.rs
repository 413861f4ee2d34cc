//! The warmup: one timed round per started server before the first
//! level, at the connections that level opens. It readies the server and
//! measures nothing, but its pace sizes the first level's rounds.

use super::failure::Down;
use super::Sweep;
use crate::round::RoundKind;
use crate::study::Level;

impl Sweep<'_, '_> {
    pub(super) fn warm_up(&mut self) {
        let study = self.study;
        if study.warmup_s <= 0.0 {
            return;
        }
        // Timed whatever the rounds are, and in the closed model even
        // before offered rates: it readies the server, at the connections
        // the first level opens.
        let first = Level::closed(self.levels[0].concurrency);
        let mut load = study.round_load(self.group, first, 1).timed(study.warmup_s);
        load.warmup_s = 0.0;
        for id in self.up.clone() {
            if self.interrupted() {
                break;
            }
            // Not started again for this launch: nothing to warm.
            if self.down[id.index()].is_some() {
                continue;
            }
            load.client_cpus = self.group.client_cpus_of(id.index()).to_vec();
            match self.exec.round(id, &load, RoundKind::Warmup) {
                Ok(m) => self.paces.update(id, &m.summary),
                Err(e) => self.down[id.index()] = Some(Down::Warmup(e)),
            }
        }
    }
}
