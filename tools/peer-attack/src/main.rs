//! `palisade-peer-attack`: an outsider with nothing but TCP access to an ensemble member's
//! peer port, replaying the attacks of issue 34 (tests/hostile_peer/run.py drives it and
//! checks the ensemble). Each subcommand tries every `--way` (the old protocol's raw frames,
//! the handshake claiming a member, TLS with no or a foreign certificate) as every `--as`
//! identity, and prints one JSON object: what each attempt got back. What the attack did to
//! the ensemble is for the caller to find out.

mod dial;
mod flood;
mod forge;
mod join;
mod raft_rpcs;
mod session_rpcs;

use clap::{Args, Parser, Subcommand};
use dial::{Creds, Target, Way};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "palisade-peer-attack",
    about = "Attack an ensemble member's peer port"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// Which ways to try and as whom.
#[derive(Args, Clone)]
pub struct Attempts {
    /// raw (frames, no handshake: the old protocol), claim (the handshake, claiming to be
    /// `--as`), tls-nocert, tls-foreign, sasl-wrong. Repeatable.
    #[arg(long = "way", value_enum, default_values_t = [Way::Raw, Way::Claim])]
    pub ways: Vec<Way>,
    /// The member id to claim (a made-up one, or a real member's). Repeatable.
    #[arg(long = "as", default_values_t = [7u64])]
    pub ases: Vec<u64>,
    /// tls-foreign's certificate and key (PEM), from a CA the members do not trust.
    #[arg(long)]
    pub foreign_cert: Option<PathBuf>,
    /// sasl-wrong's JAAS file (a QuorumLearner with a password that is not the ensemble's).
    #[arg(long)]
    pub jaas: Option<PathBuf>,
}

impl Attempts {
    /// Every (way, identity).
    pub fn pairs(&self) -> Vec<(Way, u64)> {
        self.ways
            .iter()
            .flat_map(|w| self.ases.iter().map(move |a| (*w, *a)))
            .collect()
    }

    fn creds(&self) -> Creds {
        Creds {
            foreign: self.foreign_cert.clone(),
            jaas: self.jaas.clone(),
        }
    }
}

fn secs(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?}: seconds"))
}

fn session_id(s: &str) -> Result<i64, String> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16)
            .map(|v| v as i64)
            .map_err(|e| e.to_string()),
        None => s
            .parse()
            .map_err(|e: std::num::ParseIntError| e.to_string()),
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Learn the member's vote and last log id (a vote of term 0), then append.
    Append {
        #[arg(long)]
        target: Target,
        #[arg(long, value_enum, default_value = "forged")]
        kind: raft_rpcs::AppendKind,
        /// The node a forged setACL opens to anyone.
        #[arg(long, default_value = "/secret")]
        secret: String,
        /// Data of the forged create.
        #[arg(long, default_value = "forged-by-an-outsider")]
        marker: String,
        #[command(flatten)]
        at: Attempts,
    },
    /// A vote of term 2^64-1 with the largest log id, to each target, every 250 ms until
    /// one is granted or `--duration-s` is over.
    Overflow {
        #[arg(long, required = true)]
        target: Vec<Target>,
        #[arg(long, value_parser = secs, default_value = "3")]
        duration_s: Duration,
        #[command(flatten)]
        at: Attempts,
    },
    /// The member's own vote replayed on snapshot chunks at 0, then at `--offset`.
    Snapshot {
        #[arg(long)]
        target: Target,
        #[arg(long, default_value_t = 1 << 40)]
        offset: u64,
        #[arg(long, value_parser = secs, default_value = "3")]
        hold_s: Duration,
        #[command(flatten)]
        at: Attempts,
    },
    /// Votes for term+1 claiming a longer log, to every target, every `--every-s`.
    VoteSpam {
        #[arg(long, required = true)]
        target: Vec<Target>,
        #[arg(long, value_parser = secs, default_value = "10")]
        duration_s: Duration,
        #[arg(long, value_parser = secs, default_value = "0.5")]
        every_s: Duration,
        #[command(flatten)]
        at: Attempts,
    },
    /// A made-up session creates itself, then writes to `--path` as the super user.
    ForwardWrite {
        #[arg(long)]
        target: Target,
        #[arg(long, default_value = "/secret")]
        path: String,
        #[arg(long, default_value = "forged-by-an-outsider")]
        marker: String,
        #[command(flatten)]
        at: Attempts,
    },
    /// A forwarded closeSession of `--victim` (hex with 0x, or decimal).
    ForwardClose {
        #[arg(long)]
        target: Target,
        #[arg(long, value_parser = session_id)]
        victim: i64,
        #[command(flatten)]
        at: Attempts,
    },
    /// Touches keeping `--session` alive.
    Touch {
        #[arg(long)]
        target: Target,
        #[arg(long, value_parser = session_id)]
        session: i64,
        #[arg(long, default_value_t = 30_000)]
        left_ms: u64,
        #[arg(long, value_parser = secs, default_value = "0.5")]
        every_s: Duration,
        #[arg(long, value_parser = secs, default_value = "10")]
        duration_s: Duration,
        #[command(flatten)]
        at: Attempts,
    },
    /// `--count` joins of ids from `--id-base`, giving `--listen` (where this tool plays
    /// the joiner and counts what it is sent).
    Join {
        #[arg(long)]
        target: Target,
        #[arg(long, default_value_t = 1)]
        count: u64,
        #[arg(long, default_value_t = 100)]
        id_base: u64,
        #[arg(long)]
        listen: String,
        /// Bytes of protected data to look for in what is streamed to the joiner.
        #[arg(long, default_value = "")]
        marker: String,
        #[arg(long, value_parser = secs, default_value = "5")]
        hold_s: Duration,
        #[command(flatten)]
        at: Attempts,
    },
    /// Links announcing big frames and sending part of each.
    Frames {
        #[arg(long)]
        target: Target,
        #[arg(long, default_value_t = 24)]
        links: usize,
        #[arg(long, default_value_t = 48)]
        mib: u64,
        #[arg(long, default_value_t = 40)]
        send_mib: u64,
        #[arg(long, value_parser = secs, default_value = "5")]
        hold_s: Duration,
        #[command(flatten)]
        at: Attempts,
    },
    /// Idle TCP connections to the peer port.
    Idle {
        #[arg(long)]
        target: Target,
        #[arg(long, default_value_t = 20_000)]
        count: u64,
        #[arg(long, value_parser = secs, default_value = "10")]
        hold_s: Duration,
        /// Spread over this many source addresses 127.0.0.2.. (0: 127.0.0.1).
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(0..=250))]
        sources: u8,
        #[arg(long, value_parser = secs, default_value = "20")]
        connect_within_s: Duration,
        /// (Internal: one of the processes a large count is split over.)
        #[arg(long, hide = true)]
        worker: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("palisade-peer-attack: {e}");
            return ExitCode::from(2);
        }
    };
    let (name, out) = rt.block_on(run(cli.cmd));
    let mut v = out;
    v["attack"] = serde_json::json!(name);
    println!("{v}");
    ExitCode::SUCCESS
}

async fn run(cmd: Cmd) -> (&'static str, serde_json::Value) {
    match cmd {
        Cmd::Append {
            target,
            kind,
            secret,
            marker,
            at,
        } => (
            "append",
            raft_rpcs::append(&target, &at, &at.creds(), kind, &secret, &marker).await,
        ),
        Cmd::Overflow {
            target,
            duration_s,
            at,
        } => (
            "overflow",
            raft_rpcs::overflow(&target, &at, &at.creds(), duration_s).await,
        ),
        Cmd::Snapshot {
            target,
            offset,
            hold_s,
            at,
        } => (
            "snapshot",
            raft_rpcs::snapshot(&target, &at, &at.creds(), offset, hold_s).await,
        ),
        Cmd::VoteSpam {
            target,
            duration_s,
            every_s,
            at,
        } => (
            "vote-spam",
            raft_rpcs::vote_spam(&target, &at, &at.creds(), duration_s, every_s).await,
        ),
        Cmd::ForwardWrite {
            target,
            path,
            marker,
            at,
        } => (
            "forward-write",
            session_rpcs::forward_write(&target, &at, &at.creds(), &path, &marker).await,
        ),
        Cmd::ForwardClose { target, victim, at } => (
            "forward-close",
            session_rpcs::forward_close(&target, &at, &at.creds(), victim).await,
        ),
        Cmd::Touch {
            target,
            session,
            left_ms,
            every_s,
            duration_s,
            at,
        } => (
            "touch",
            session_rpcs::touch(
                &target,
                &at,
                &at.creds(),
                session,
                left_ms,
                every_s,
                duration_s,
            )
            .await,
        ),
        Cmd::Join {
            target,
            count,
            id_base,
            listen,
            marker,
            hold_s,
            at,
        } => (
            "join",
            join::join(
                &target,
                &at,
                &at.creds(),
                join::Plan {
                    id_base,
                    count,
                    listen,
                    marker,
                    hold: hold_s,
                },
            )
            .await,
        ),
        Cmd::Frames {
            target,
            links,
            mib,
            send_mib,
            hold_s,
            at,
        } => (
            "frames",
            flood::frames(&target, &at, &at.creds(), links, mib, send_mib, hold_s).await,
        ),
        Cmd::Idle {
            target,
            count,
            hold_s,
            sources,
            connect_within_s,
            worker,
        } => (
            "idle",
            flood::idle(flood::Idle {
                target: target.addr,
                count,
                hold: hold_s,
                sources,
                connect_within: connect_within_s,
                worker,
            })
            .await,
        ),
    }
}
