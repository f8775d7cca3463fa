//! The observer's quorum link to a ZooKeeper ensemble's leader: the sockets, the clock and the
//! leader hunt around `palisade_zab::Learner` (which decides everything else), feeding what
//! it outputs into the mirror.
//!
//! Only the leader listens on its quorum port for learners, so the link tries each
//! participant's in turn until one answers with LEADERINFO; after a resync (the leader gone,
//! a silent or broken stream, a protocol error) it starts over from the next one. Each
//! connection is first secured as the ensemble's zoo.cfg says (secure.rs: TLS, quorum SASL);
//! one refused there is logged and tried again after a pause that grows while refusals go on.

use super::mirror::{Failure, Mirror};
use super::secure::{tls_alert, LinkSecurity, Refused};
use crate::ensemble::link::Stream;
use bytes::BytesMut;
use palisade_zab::{Decoder, Direction, Input, Learner, LearnerConfig, Limits, Output, SyncMode};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::limits::{
    OBSERVER_CONNECT_TIMEOUT as CONNECT_TIMEOUT, OBSERVER_READ_CHUNK as READ_CHUNK,
    OBSERVER_REFUSED_MAX_PAUSE as REFUSED_MAX_PAUSE, OBSERVER_RETRY_PAUSE as RETRY_PAUSE,
};

/// A participant's quorum (peer) port.
#[derive(Debug, Clone)]
pub struct Participant {
    pub addr: SocketAddr,
    /// The host its `server.N` line names: what its TLS certificate must name.
    pub host: String,
}

pub struct LinkConfig {
    pub server_id: i64,
    /// Every participant: the leader is one of them.
    pub participants: Vec<Participant>,
    /// TLS and quorum SASL, as the ensemble's zoo.cfg asks.
    pub security: LinkSecurity,
    pub tick_ms: u64,
    pub init_limit: u64,
    pub sync_limit: u64,
    pub limits: Limits,
    /// The caller's stopping rule watches for this node (published as `Progress::marker`).
    pub marker: Option<String>,
}

/// What the link saw, for the caller's summary and its stopping rule.
#[derive(Default, Debug, Clone)]
pub struct Progress {
    pub synced_at: Option<i64>,
    pub last_zxid: i64,
    pub connections: u64,
    /// The mirror holds `LinkConfig::marker`.
    pub marker: bool,
    /// From the connection that synced being opened to UPTODATE (a sync's cost, with the
    /// snapshot's transfer and load).
    pub sync_ms: Option<u64>,
    pub resyncs: Vec<String>,
    /// Connections given up in their TLS handshake or quorum SASL exchange, and why.
    pub refused: Vec<String>,
    /// How the leader synced each connection, in order.
    pub syncs: Vec<SyncMode>,
    /// The data dir failed: the run stopped.
    pub fatal: Option<String>,
}

/// Why a connection ended.
enum End {
    /// The leader's TLS alert before its first packet: refused as a handshake is.
    Refused(Refused),
    /// Connect again (to the next participant) and sync.
    Resync(String),
    /// Stop the run.
    Fatal(String),
}

/// Runs the link until `stop` turns true (or its sender is gone); `progress` is published
/// after every batch of outputs.
pub async fn run(
    cfg: LinkConfig,
    mirror: &mut Mirror,
    mut stop: watch::Receiver<bool>,
    progress: &watch::Sender<Progress>,
) {
    let mut link = Link {
        cfg: &cfg,
        mirror,
        progress,
        p: Progress::default(),
        origin: Instant::now(),
    };
    let n = cfg.participants.len().max(1);
    let mut next = 0usize;
    let mut refused_pause = RETRY_PAUSE;
    // ZooKeeper's learner reads its socket with this timeout while it connects.
    let handshake = Duration::from_millis(cfg.tick_ms.saturating_mul(cfg.init_limit).max(1));
    while !*stop.borrow() {
        let Some(peer) = cfg.participants.get(next % n) else {
            return;
        };
        let addr = peer.addr;
        next = next.wrapping_add(1);
        let conn = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await;
        let Ok(Ok(stream)) = conn else {
            if next.is_multiple_of(n) {
                pause(RETRY_PAUSE, &mut stop).await;
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        link.p.connections += 1;
        let ended = match cfg.security.secure(stream, &peer.host, handshake).await {
            Ok((stream, rest)) => link.connection(stream, rest, &mut stop).await,
            Err(refused) => End::Refused(refused),
        };
        link.mirror.abort_snapshot();
        if link.p.synced_at.is_some() {
            refused_pause = RETRY_PAUSE;
        }
        let why = match ended {
            End::Resync(why) => why,
            End::Refused(refused) => {
                let why = match &refused {
                    Refused::Tls(why) => {
                        tracing::warn!(participant = %addr, why = %why, retry_in = ?refused_pause, "observer: the TLS handshake with a ZooKeeper member failed; retrying");
                        format!("TLS: {why}")
                    }
                    Refused::Sasl(why) => {
                        tracing::warn!(leader_candidate = %addr, why = %why, retry_in = ?refused_pause, "observer: quorum SASL with the ZooKeeper leader failed; retrying");
                        format!("SASL: {why}")
                    }
                };
                link.p.refused.push(why);
                progress.send_replace(link.p.clone());
                pause(refused_pause, &mut stop).await;
                refused_pause = refused_pause.saturating_mul(2).min(REFUSED_MAX_PAUSE);
                continue;
            }
            End::Fatal(why) => {
                tracing::error!(why = %why, "observer: the data dir failed; stopping");
                link.p.fatal = Some(why);
                progress.send_replace(link.p.clone());
                return;
            }
        };
        tracing::info!(leader_candidate = %addr, why = %why, "observer: the link to the ZooKeeper leader ended");
        if *stop.borrow() {
            break; // stopped: the last sync stands, for the summary
        }
        link.p.resyncs.push(why);
        link.p.synced_at = None;
        progress.send_replace(link.p.clone());
    }
}

/// Sleeps `d`, or less if `stop` changes.
async fn pause(d: Duration, stop: &mut watch::Receiver<bool>) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = stop.changed() => {}
    }
}

/// What lives across connections: the mirror (with the epochs it stores, as ZooKeeper keeps
/// them in files), what was seen.
struct Link<'a> {
    cfg: &'a LinkConfig,
    mirror: &'a mut Mirror,
    progress: &'a watch::Sender<Progress>,
    p: Progress,
    origin: Instant,
}

impl Link<'_> {
    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// One connection, until the learner asks for a resync or `stop`; why it ended.
    async fn connection(
        &mut self,
        mut stream: Stream,
        rest: BytesMut,
        stop: &mut watch::Receiver<bool>,
    ) -> End {
        let mut learner = self.learner();
        let mut decoder = Decoder::new(Direction::FromLeader, self.cfg.limits);
        // What the leader sent after the SASL exchange (nothing, as ZooKeeper's leader waits
        // for OBSERVERINFO; bounded by the auth decoder's limits anyway).
        decoder.push(&rest);
        let mut buf = vec![0u8; READ_CHUNK];
        let mut tick = tokio::time::interval(Duration::from_millis((self.cfg.tick_ms / 2).max(1)));
        learner.step(Input::Tick {
            now_ms: self.now_ms(),
        });
        let mut outs = learner.step(Input::Connected);
        let opened = Instant::now();
        // Whether the leader sent anything yet (a TLS alert before that is a refusal).
        let mut seen_any = !rest.is_empty();
        loop {
            let mut send = BytesMut::new();
            let was_synced = self.p.synced_at.is_some();
            let mut ended = None;
            for o in outs.drain(..) {
                if let Err(end) = output(o, self.mirror, &mut send, &mut self.p) {
                    ended = Some(end);
                    break;
                }
            }
            // What was applied is made durable (and the epochs stored) before anything more
            // is read; a connection that ends keeps what it applied.
            let epochs = (learner.accepted_epoch(), learner.current_epoch());
            if let Err(e) = self.mirror.sync(epochs) {
                return End::Fatal(e.to_string());
            }
            if let Some(end) = ended {
                return end;
            }
            if !was_synced && self.p.synced_at.is_some() {
                self.p.sync_ms = Some(opened.elapsed().as_millis() as u64);
            }
            self.publish();
            if !send.is_empty() {
                if let Err(e) = stream.write_all(&send).await {
                    return End::Resync(format!("write: {e}"));
                }
            }
            if *stop.borrow() {
                return End::Resync("stopped".into());
            }
            tokio::select! {
                r = stream.read(&mut buf) => {
                    let n = match r {
                        Ok(0) => return End::Resync("the leader closed the connection".into()),
                        Ok(n) => n,
                        Err(e) => {
                            if let (false, Some(alert)) = (seen_any, tls_alert(&e)) {
                                return End::Refused(Refused::Tls(alert));
                            }
                            return End::Resync(format!("read: {e}"));
                        }
                    };
                    seen_any = true;
                    decoder.push(buf.get(..n).unwrap_or_default());
                    step_frames(&mut decoder, &mut learner, &mut outs);
                }
                _ = tick.tick() => outs = learner.step(Input::Tick { now_ms: self.now_ms() }),
                _ = stop.changed() => {}
            }
        }
    }

    /// A learner starting from what the data dir holds.
    fn learner(&self) -> Learner {
        let (accepted_epoch, current_epoch) = self.mirror.epochs();
        Learner::new(LearnerConfig {
            server_id: self.cfg.server_id,
            config_version: 0,
            accepted_epoch,
            current_epoch,
            last_zxid: self.mirror.last_zxid(),
            tick_ms: self.cfg.tick_ms,
            init_limit: self.cfg.init_limit,
            sync_limit: self.cfg.sync_limit,
        })
    }

    fn publish(&mut self) {
        let (p, mirror) = (&mut self.p, &self.mirror);
        p.last_zxid = mirror.last_zxid();
        p.marker = self
            .cfg
            .marker
            .as_deref()
            .is_some_and(|m| mirror.state().is_some_and(|s| s.tree.lookup(m).is_some()));
        self.progress.send_replace(p.clone());
    }
}

/// Carries out one learner output; `Err` ends the connection.
fn output(
    o: Output,
    mirror: &mut Mirror,
    send: &mut BytesMut,
    p: &mut Progress,
) -> Result<(), End> {
    let failed = |mirror: &mut Mirror, f: Failure| match f {
        Failure::Disk(why) => End::Fatal(why),
        Failure::Diverged(why) => {
            tracing::error!(why = %why, "observer: the mirror refused what the leader sent; syncing again from nothing");
            match mirror.reset() {
                Ok(()) => End::Resync(why),
                Err(e) => End::Fatal(e.to_string()),
            }
        }
    };
    match o {
        Output::Send(packet) => packet.write(send),
        Output::Syncing { mode, zxid, from } => {
            tracing::info!(
                mode = ?mode,
                zxid = format_args!("{zxid:#x}"),
                from = format_args!("{from:#x}"),
                "observer: the ZooKeeper leader syncs us"
            );
            p.syncs.push(mode);
            if mode == SyncMode::Snap {
                mirror.begin_snapshot();
            }
        }
        Output::SnapshotItems(items) => {
            mirror
                .snapshot_items(items)
                .map_err(|f| failed(mirror, f))?;
        }
        Output::SnapshotEnd { zxid, .. } => {
            mirror.end_snapshot(zxid).map_err(|f| failed(mirror, f))?;
        }
        Output::Truncate { zxid } => mirror.truncate(zxid).map_err(|f| failed(mirror, f))?,
        Output::Apply { entry } => mirror.apply(entry).map_err(|f| failed(mirror, f))?,
        Output::Synced { zxid } => {
            tracing::info!(
                zxid = format_args!("{zxid:#x}"),
                "observer: in sync with the ZooKeeper leader"
            );
            p.synced_at = Some(zxid);
        }
        Output::Resync(why) => return Err(End::Resync(format!("{why:?}"))),
        // No clients of its own yet: nothing is forwarded, so nothing is answered.
        Output::WriteDone { .. }
        | Output::SyncDone { .. }
        | Output::Revalidated { .. }
        | Output::Dropped(_)
        | Output::Reconfigured { .. }
        | Output::Ignored { .. } => {}
    }
    Ok(())
}

#[cfg(test)]
#[path = "link_test.rs"]
mod tests;

/// Steps `learner` on every whole frame `decoder` holds (a bad stream ends the frames: the
/// learner asks for a resync).
fn step_frames(decoder: &mut Decoder, learner: &mut Learner, outs: &mut Vec<Output>) {
    loop {
        match decoder.next_frame() {
            Ok(Some(f)) => outs.extend(learner.step(Input::Frame(f))),
            Ok(None) => return,
            Err(e) => {
                outs.extend(learner.step(Input::BadStream(e)));
                return;
            }
        }
    }
}
