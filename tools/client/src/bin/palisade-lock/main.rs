//! `palisade-lock`: runs a command while holding a Palisade lock (docs/LOCKS.md).
//!
//!   palisade-lock [--read|--write] --server HOST:PORT [--timeout SECS] [--session-timeout MS]
//!                 [--grace SECS] [--naming curator|kazoo] [--lost-after F] /locks/NAME -- CMD ARGS…
//!
//! The command gets PALISADE_FENCE_TOKEN (the lock node's czxid, decimal), PALISADE_LOCK_PATH
//! (the lock path) and PALISADE_LOCK_NODE (this holder's node). The session is kept alive while
//! the command runs; if the lock may be lost, the command's process group gets SIGTERM, then
//! SIGKILL after --grace. Exit status: see `exit_code`.

mod exit_code;
mod run;

use clap::{ArgGroup, Parser, ValueEnum};
use palisade_client::lock::Naming;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "palisade-lock",
    about = "Run a command while holding a Palisade (ZooKeeper) lock, with a fencing token",
    after_help = exit_code::HELP,
    group(ArgGroup::new("mode").args(["read", "write"]))
)]
pub struct Cli {
    /// Take the shared side of a read-write lock.
    #[arg(long)]
    pub read: bool,
    /// Take the exclusive side of a read-write lock (the default is a plain mutex).
    #[arg(long)]
    pub write: bool,
    /// The server, HOST:PORT.
    #[arg(long)]
    pub server: String,
    /// Give up (exit 75) if the lock is not acquired within SECS (default: wait forever).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The session timeout to ask for, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub session_timeout: u64,
    /// After SIGTERM on a lost lock, wait SECS before SIGKILL.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub grace: f64,
    /// Node names and ordering: Curator's (interoperates with InterProcessMutex /
    /// InterProcessReadWriteLock) or kazoo's (Lock / ReadLock / WriteLock).
    #[arg(long, value_enum, default_value_t = NamingArg::Curator)]
    pub naming: NamingArg,
    /// The lock counts as lost when the server has not answered for this fraction of the
    /// session timeout.
    #[arg(long, value_name = "F", default_value_t = 2.0 / 3.0)]
    pub lost_after: f64,
    /// Report acquisition and release on stderr.
    #[arg(short, long)]
    pub verbose: bool,
    /// The lock path, e.g. /locks/NAME.
    pub path: String,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum NamingArg {
    Curator,
    Kazoo,
}

impl NamingArg {
    pub fn naming(self) -> Naming {
        match self {
            NamingArg::Curator => Naming::Curator,
            NamingArg::Kazoo => Naming::Kazoo,
        }
    }
}

/// Seconds from the command line as a Duration; `None` for negative or non-finite values.
pub fn seconds(s: f64) -> Option<Duration> {
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s))
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            std::process::exit(if usage { exit_code::USAGE } else { 0 });
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("palisade-lock: cannot start: {e}");
            std::process::exit(exit_code::UNAVAILABLE);
        }
    };
    let code = rt.block_on(run::run(cli));
    std::process::exit(code);
}
