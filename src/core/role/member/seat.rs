//! What a member does with a write: its `Seat`, and the moves between seats that Raft's view
//! (`CoreMsg::Role`) and read-only mode's grace clock make. Each move says what of the old
//! seat survives:
//!
//! - Follower → Leader (`lead`, a ready leader of its term): a fresh lead (duties, no
//!   configuration pending); the follower's queue of forwards is empty (a leader-elect serves
//!   no clients).
//! - Leader → Follower (a leader change, or its proposals superseded): the lead is dropped
//!   with its pending configuration; its clients are dropped by the caller.
//! - Leader or Follower → ReadOnly (no quorum for the grace period): a leader's lead is kept
//!   beneath read-only mode, so that the same term's quorum coming back finds its prepper,
//!   duties and pending configuration as they were; a follower's queue holds nothing (its
//!   clients were dropped when it stopped serving).
//! - ReadOnly → the seat beneath (serving again): the lead kept, or a follower; the local
//!   sessions are forgotten by the caller.
//!
//! A ZooKeeper observer (issue 35) would be a fourth seat: it holds no lead and forwards
//! nothing; `Role::forwards_writes` and `preps` answer for it from its variant.

use super::follower::Following;
use super::leader::Leading;
use super::read_only::ReadOnly;
use super::RoleView;
use crate::core::Core;
use crate::faults::{self, Fault};
use crate::prep::Prepper;
use std::collections::HashSet;

pub(in crate::core) enum Seat {
    /// The ready Raft leader: preps and proposes (leader.rs).
    Leader(Leading),
    /// Forwards writes to the leader it knows; also a candidate, a leader-elect not yet ready
    /// and a learner (follower.rs).
    Follower(Following),
    /// No quorum for the grace period: serves read-only clients, refuses writes
    /// (read_only.rs).
    ReadOnly(ReadOnly),
}

impl Seat {
    /// The lead, if this member holds it (as leader, or beneath read-only mode).
    pub(in crate::core) fn leading(&self) -> Option<&Leading> {
        match self {
            Seat::Leader(l) => Some(l),
            Seat::ReadOnly(r) => r.lead.as_ref(),
            Seat::Follower(_) => None,
        }
    }

    pub(in crate::core) fn leading_mut(&mut self) -> Option<&mut Leading> {
        match self {
            Seat::Leader(l) => Some(l),
            Seat::ReadOnly(r) => r.lead.as_mut(),
            Seat::Follower(_) => None,
        }
    }

    pub(in crate::core) fn is_local_session(&self, id: i64) -> bool {
        matches!(self, Seat::ReadOnly(r) if r.sessions.contains(&id))
    }

    /// Takes a new lead (`lead`).
    fn take_lead(&mut self, lead: Leading) {
        match self {
            Seat::ReadOnly(r) => r.lead = Some(lead),
            Seat::Follower(f) => {
                debug_assert!(f.queued.is_empty(), "a leader-elect holds no forwards");
                *self = Seat::Leader(lead);
            }
            Seat::Leader(_) => *self = Seat::Leader(lead),
        }
    }

    /// Drops the lead, if held, with what it had pending.
    pub(super) fn drop_lead(&mut self) {
        match self {
            Seat::Leader(_) => *self = Seat::Follower(Following::default()),
            Seat::ReadOnly(r) => r.lead = None,
            Seat::Follower(_) => {}
        }
    }

    /// Read-only mode begins: a leader's lead is kept beneath it.
    pub(super) fn enter_read_only(&mut self) {
        let lead = match std::mem::replace(self, Seat::Follower(Following::default())) {
            Seat::Leader(l) => Some(l),
            Seat::Follower(f) => {
                debug_assert!(
                    f.queued.is_empty(),
                    "a member not serving holds no forwards"
                );
                None
            }
            Seat::ReadOnly(r) => {
                *self = Seat::ReadOnly(r);
                return;
            }
        };
        *self = Seat::ReadOnly(ReadOnly {
            sessions: HashSet::new(),
            lead,
        });
    }

    /// Read-only mode ends: back to the lead kept, or to following. Returns its local
    /// sessions.
    pub(super) fn leave_read_only(&mut self) -> HashSet<i64> {
        let Seat::ReadOnly(r) = std::mem::replace(self, Seat::Follower(Following::default()))
        else {
            unreachable!("leave_read_only outside read-only mode");
        };
        if let Some(l) = r.lead {
            *self = Seat::Leader(l);
        }
        r.sessions
    }
}

impl Core {
    /// Raft's view changed.
    pub(in crate::core) fn set_role(&mut self, v: RoleView) {
        let m = self.role.member_mut();
        let old = m.view;
        if old == v {
            return;
        }
        let was_serving = m.serving();
        m.view = v;
        let changed = old.leader != v.leader || old.term != v.term;
        if changed {
            // Whatever this member led, it leads no more; a new lead is taken below.
            m.seat.drop_lead();
        }
        // A candidate alone raises its term at every try: its read-only clients stay.
        let keep_read_only = matches!(m.seat, Seat::ReadOnly(_)) && v.leader.is_none();
        if changed && !keep_read_only {
            self.leader_changed(v);
        }
        if v.config_version != old.config_version {
            // Before any drop below: a reconfig that removed this leader is answered first.
            self.release_parked();
        }
        let serving = self.role.serving();
        if !changed && ((old.quorum && !v.quorum) || (was_serving && !serving)) {
            tracing::warn!(
                clients = self.conns.len(),
                "no quorum acknowledges this leader, or it steps down; dropping clients"
            );
            self.drop_all_conns();
            self.pending = Default::default();
        }
        if v.ready && (changed || !old.ready) {
            self.lead(v.term);
        } else if v.ready && !old.quorum && v.quorum && !faults::on(Fault::ExpireWithoutQuorum) {
            // The same leader, acknowledged again after an outage it kept its term through
            // (no election, so nothing else re-arms them): its sessions' clients could not be
            // heard meanwhile, so each gets a full timeout from now, as from a new leader.
            let sessions = self.rearm_sessions();
            tracing::info!(
                sessions,
                "a quorum acknowledges this leader again: sessions re-armed"
            );
        }
        let m = self.role.member_mut();
        if !v.ready {
            m.seat.drop_lead();
        }
        assert_eq!(
            m.seat.leading().is_some(),
            m.view.ready,
            "a member holds the lead exactly while Raft says it is the ready leader"
        );
        self.leave_read_only();
    }

    /// Another leader, or another term: every client is dropped (it resumes its session on
    /// any member) and everything in flight is forgotten.
    fn leader_changed(&mut self, v: RoleView) {
        tracing::info!(
            leader = ?v.leader,
            term = v.term,
            clients = self.conns.len(),
            "leader changed; dropping clients, which resume their sessions"
        );
        let m = self.role.member_mut();
        if let Seat::Follower(f) = &mut m.seat {
            f.queued.clear();
        }
        m.syncs.clear();
        m.parked.clear();
        self.drop_all_conns();
        self.pending = Default::default();
        self.inflight.clear();
        self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        self.restore_leader_changed(false);
    }

    /// Becomes the ready leader of `term`.
    fn lead(&mut self, term: u64) {
        let base = ((term.min(i32::MAX as u64) as i64) << 32).max(self.state.zxid());
        self.prep = Prepper::new(base, self.cfg.ttl_enabled);
        let lead = Leading::new(self.cfg.container_check_ms);
        self.role.member_mut().seat.take_lead(lead);
        self.rearm_sessions();
        tracing::info!(
            term,
            sessions = self.liveness.len(),
            zxid = format_args!("{:#x}", self.state.zxid()),
            "leading"
        );
        self.propose_key();
        self.commit_first_config(term);
        self.restore_leader_changed(true);
    }

    /// Another leader's entries were committed over this one's proposals: they will not
    /// commit, and this member leads no more.
    pub(super) fn abandon_proposals(&mut self) {
        tracing::warn!(
            proposals = self.inflight.len(),
            "proposals superseded by another leader's entries"
        );
        self.inflight.clear();
        self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        let m = self.role.member_mut();
        m.view.ready = false;
        m.seat.drop_lead();
    }

    /// Every session gets a full timeout from now (a leader starting to serve); returns how
    /// many there are.
    fn rearm_sessions(&mut self) -> usize {
        let now = self.now_ms();
        let ids: Vec<i64> = self.state.sessions().keys().copied().collect();
        for &id in &ids {
            self.liveness.touch(id, now);
        }
        ids.len()
    }
}
