//! `palisade-failover`: kill -9 a ZooKeeper-protocol server under load, at random moments and
//! at chosen ones, restart it on the same data dir, and prove after every cycle that nothing
//! acknowledged was lost and no sequential suffix was handed out twice. Works against any
//! server started by a command — Palisade, or Apache ZooKeeper 3.8 (see docs/design/FAILOVER.md).
//!
//!   palisade-failover live --start 'target/release/palisade /tmp/f/zoo.cfg' \
//!       --server 127.0.0.1:2181 --data-dir /tmp/f/data --cycles 20 --seed 7
//!   palisade-failover live --ensemble 3 --kind palisade|zookeeper --work /tmp/fo --cycles 10
//!       (N members on loopback; kill -9 or SIGSTOP the leader or a follower each cycle)
//!   palisade-failover offline DATADIR          (Palisade data dirs: validate + invariants)
//!   palisade-failover damage DATADIR WORKDIR   (drills on copies: tear, flip, drop; recover)

mod check;
mod damage;
mod ensemble;
mod ledger;
mod live;
mod server;
mod workload;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(about = "Failover-replay test tool for ZooKeeper-protocol servers")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Crash the server under load, cycle after cycle, checking every restart.
    Live(live::Args),
    /// Validate a (Palisade) data dir and check the invariants along its whole log.
    Offline { data_dir: PathBuf },
    /// Damage drills on copies of a (Palisade) data dir, each followed by the server's recovery.
    Damage {
        data_dir: PathBuf,
        /// Where the copies go (created; must not exist or be empty).
        work: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn offline(dir: PathBuf) -> Result<bool, String> {
    let d = palisade_inspect::DataDir::new(&dir);
    let v = palisade_inspect::validate(&d).map_err(|e| e.to_string())?;
    print!("{}", v.text());
    let inv = palisade_inspect::invariants(&d).map_err(|e| e.to_string())?;
    print!("{}", inv.text());
    Ok(v.ok() && inv.ok())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Live(args) => live::run(args),
        Cmd::Offline { data_dir } => offline(data_dir),
        Cmd::Damage {
            data_dir,
            work,
            seed,
        } => damage::drills(&data_dir, &work, seed),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("palisade-failover: {e}");
            ExitCode::from(2)
        }
    }
}
