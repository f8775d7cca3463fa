//! Four-letter words, in ZooKeeper 3.8's output formats: `four_letter` checks the whitelist
//! and whether the server serves, then hands each word to its function — `stats` (srvr,
//! stat, cons, mntr), `watches` (wchs, wchc, wchp), `dump`, `environment` (envi, conf, dirs)
//! and `control` (the words that change something: crst, srst, csnp, ydld, rqld).
//!
//! Owns: the words' output, built from the engine's state and the host facts the runtime
//! read for the word (`Core::probe`). May not touch: files, sockets or the clock (the runtime's);
//! the state only reads, and `control`'s words change it only through the engine's own calls.

mod control;
mod dump;
mod environment;
mod stats;
mod watches;

use crate::core::host::HostTask;
use crate::core::{Core, Out, OutTx};
use ::core::net::SocketAddr;
use palisade_proto::FourLetterWord;
use std::fmt::Write as _;

/// The version string clients and monitoring parse (`zookeeper.version=3.8.0-...`).
pub const VERSION: &str = concat!("3.8.0-palisade-", env!("CARGO_PKG_VERSION"));

impl Core {
    fn allowed(&self, word: &str) -> bool {
        self.cfg
            .four_letter_words
            .iter()
            .any(|w| w == "*" || w == word)
    }

    /// Answers a four-letter word and closes. `dirs` walks the file system, so it runs on a
    /// thread of its own, not on the core thread (a data dir of many files took the core
    /// away from every client for as long as the walk took).
    pub(crate) fn answer_four_letter(
        &mut self,
        word: FourLetterWord,
        out: OutTx,
        peer: SocketAddr,
    ) {
        if matches!(word, FourLetterWord::Dirs) && self.allowed(word.name()) {
            self.outbox.task(HostTask::DirSizes {
                out,
                data_dir: self.cfg.data_dir.clone(),
                log_dir: self.cfg.data_log_dir.clone(),
            });
            return;
        }
        let text = self.four_letter(word, peer);
        self.outbox.send(&out, Out::Bytes(bytes::Bytes::from(text)));
        self.outbox.send(&out, Out::Close);
    }

    pub(crate) fn four_letter(&mut self, word: FourLetterWord, peer: SocketAddr) -> String {
        let name = word.name();
        if !self.allowed(name) {
            return format!("{name} is not executed because it is not in the whitelist.\n");
        }
        let mut out = String::new();
        let needs_server = !matches!(
            word,
            FourLetterWord::Ruok
                | FourLetterWord::Isro
                | FourLetterWord::Conf
                | FourLetterWord::Envi
                | FourLetterWord::Lgif
        );
        let ro = self.read_only();
        if needs_server && !self.serving() && !ro {
            // An ensemble member without a leader, as ZooKeeper answers it.
            return "This ZooKeeper instance is not currently serving requests\n".into();
        }
        match word {
            FourLetterWord::Ruok => out.push_str("imok"),
            FourLetterWord::Lgif => self.lgif(&mut out),
            FourLetterWord::Isro => self.isro(&mut out, ro),
            FourLetterWord::Srvr => self.srvr(&mut out, ro),
            FourLetterWord::Stat => self.stat(&mut out, ro, peer),
            FourLetterWord::Cons => self.cons(&mut out, peer),
            FourLetterWord::Envi => environment::envi(&self.host, &self.probe, &mut out),
            FourLetterWord::Conf => self.conf(&mut out),
            FourLetterWord::Mntr => self.mntr(&mut out),
            FourLetterWord::Wchs => self.wchs(&mut out),
            FourLetterWord::Dump => self.dump(&mut out),
            FourLetterWord::Wchc => self.wchc(&mut out),
            FourLetterWord::Wchp => self.wchp(&mut out),
            FourLetterWord::Crst => self.crst(&mut out),
            FourLetterWord::Srst => self.srst(&mut out),
            // The runtime walks the directories (`answer_four_letter`): nothing here.
            FourLetterWord::Dirs => {}
            FourLetterWord::Csnp => self.csnp(&mut out),
            FourLetterWord::Hash => self.hash(&mut out),
            FourLetterWord::Ydld | FourLetterWord::Rqld => self.leadership_word(&mut out, word),
            // Not supported: answered with nothing, as ZooKeeper answers a word it does not run.
            FourLetterWord::Gtmk | FourLetterWord::Stmk => {}
        }
        out
    }

    fn lgif(&self, out: &mut String) {
        match self.raft_info() {
            Some(t) => out.push_str(&t),
            None => out.push_str("This server is standalone: it has no Raft log.\n"),
        }
    }

    /// ZooKeeper's: "null" while no server runs (a member without a quorum), which kazoo and
    /// the Java client's search for a read-write server rely on.
    fn isro(&self, out: &mut String, ro: bool) {
        out.push_str(if ro {
            "ro"
        } else if self.serving() {
            "rw"
        } else {
            "null"
        })
    }

    /// ZooKeeper's layout (`<zxid hex>: <digest>`), with Palisade's digest of the current
    /// tree (see digest.rs; not the same function as ZooKeeper's).
    fn hash(&self, out: &mut String) {
        let _ = writeln!(out, "{:x}: {}", self.state.zxid(), self.state.tree.digest());
    }
}
