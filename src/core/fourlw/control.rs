//! The words that change something: crst and srst (statistics reset), csnp (a snapshot now),
//! ydld and rqld (leadership handed over; `leadership` is the ask the admin commands make too).

use crate::core::member::LeadershipAsk;
use crate::core::Core;
use palisade_proto::FourLetterWord;
use std::fmt::Write as _;

/// Why a leadership ask was not sent when the Raft side is gone (a member stopping).
pub(crate) const LEADERSHIP_GONE: &str = "the ensemble's side of this server is gone";

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
            Err(LEADERSHIP_GONE) => out.push_str("Failed to send request.\n"),
            Err(why) => {
                let _ = writeln!(out, "Failed to send request: {why}.");
            }
        }
    }

    /// An operator's leadership ask (`ydld`/`rqld`, as four-letter words and admin
    /// commands): sent to the Raft side (ensemble/raft/transfer.rs), or why it cannot be.
    pub(crate) fn leadership(&mut self, ask: LeadershipAsk) -> Result<(), &'static str> {
        let leads = self.member_leads();
        if leads.is_none() {
            Err("this server is standalone")
        } else if ask == LeadershipAsk::Yield && leads == Some(false) {
            Err("this server is not the leader")
        } else if self.ask_leadership(ask) {
            Ok(())
        } else {
            Err(LEADERSHIP_GONE)
        }
    }
}
