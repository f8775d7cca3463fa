//! The words that change something: crst and srst (statistics reset), csnp (a snapshot now),
//! ydld and rqld (leadership handed over).

use crate::core::member::LeadershipAsk;
use crate::core::Core;
use palisade_proto::FourLetterWord;
use std::fmt::Write as _;

impl Core {
    pub(super) fn crst(&mut self, out: &mut String) {
        for c in self.conns.values_mut() {
            c.received = 0;
            c.sent = 0;
        }
        out.push_str("Connection stats reset.\n");
    }

    pub(super) fn srst(&mut self, out: &mut String) {
        self.stats = Default::default();
        self.reset_namespace_stats();
        out.push_str("Server stats reset.\n");
    }

    pub(super) fn csnp(&mut self, out: &mut String) {
        match self.request_snapshot().or_else(|| self.ask_raft_snapshot()) {
            Some(z) => {
                let _ = writeln!(out, "Snapshot creation scheduled at zxid {z:#x}.");
            }
            None => out.push_str(
                "Failed to schedule snapshot creation: one is being taken, or snapshots are off.\n",
            ),
        }
    }

    /// ClickHouse Keeper's ydld and rqld: the Raft side hands leadership over (ensemble/raft/
    /// transfer.rs; the admin commands ask the same, core/admin.rs); `srvr` shows the outcome.
    pub(super) fn leadership_word(&mut self, out: &mut String, word: FourLetterWord) {
        let ask = if word == FourLetterWord::Ydld {
            LeadershipAsk::Yield
        } else {
            LeadershipAsk::Request
        };
        match self.leadership(ask) {
            Ok(()) => out.push_str("Sent.\n"),
            Err(super::super::admin::LEADERSHIP_GONE) => out.push_str("Failed to send request.\n"),
            Err(why) => {
                let _ = writeln!(out, "Failed to send request: {why}.");
            }
        }
    }
}
