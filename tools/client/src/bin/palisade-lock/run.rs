//! Connect, acquire, run the command while the lock is held, and end it if the lock is lost.

use crate::{exit_code, seconds, Cli};
use palisade_client::lock::{Guard, LockOptions, Mutex, ReadWriteLock};
use palisade_client::{Client, Error};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// How long releasing and closing may take after the command ended.
const CLEANUP: Duration = Duration::from_secs(5);

macro_rules! say {
    ($($t:tt)*) => { eprintln!("palisade-lock: {}", format!($($t)*)) };
}

pub async fn run(cli: Cli) -> i32 {
    let Some(grace) = seconds(cli.grace) else {
        say!("--grace must be a non-negative number of seconds");
        return exit_code::USAGE;
    };
    let session_timeout = Duration::from_millis(cli.session_timeout);
    let timeout = match cli.timeout.map(seconds) {
        Some(None) => {
            say!("--timeout must be a non-negative number of seconds");
            return exit_code::USAGE;
        }
        Some(Some(t)) => Some(t),
        None => None,
    };
    let Ok(mut signals) = Signals::new() else {
        say!("cannot install signal handlers");
        return exit_code::UNAVAILABLE;
    };
    let client = match Client::connect(&cli.server, session_timeout).await {
        Ok(c) => c,
        Err(e) => {
            say!("cannot connect to {}: {e}", cli.server);
            return exit_code::UNAVAILABLE;
        }
    };
    let guard = tokio::select! {
        g = acquire(&client, &cli, timeout) => match g {
            Ok(g) => g,
            Err(code) => {
                let _ = tokio::time::timeout(CLEANUP, client.close()).await;
                return code;
            }
        },
        sig = signals.recv() => {
            // Closing the session deletes the contender node the interrupted attempt left.
            let _ = tokio::time::timeout(CLEANUP, client.close()).await;
            return 128 + sig;
        }
    };
    if cli.verbose {
        say!("acquired {} token {}", guard.node(), guard.token());
    }
    let code = hold(&cli, &guard, &mut signals, grace).await;
    // Also after a loss: a session that was only suspended still has the node.
    if let Ok(Err(e)) = tokio::time::timeout(CLEANUP, guard.release()).await {
        say!("release failed: {e}");
    }
    let _ = tokio::time::timeout(CLEANUP, client.close()).await;
    if cli.verbose {
        say!("released, exit {code}");
    }
    code
}

async fn acquire(client: &Client, cli: &Cli, timeout: Option<Duration>) -> Result<Guard, i32> {
    let opts = LockOptions {
        naming: cli.naming.naming(),
        lost_after: cli.lost_after,
        data: Vec::new(),
    };
    let bad = |e: Error| {
        say!("{}: {e}", cli.path);
        exit_code::USAGE
    };
    let r = if cli.read || cli.write {
        let l = ReadWriteLock::with_options(client, &cli.path, opts).map_err(bad)?;
        if cli.read {
            l.acquire_read(timeout).await
        } else {
            l.acquire_write(timeout).await
        }
    } else {
        Mutex::with_options(client, &cli.path, opts)
            .map_err(bad)?
            .acquire(timeout)
            .await
    };
    r.map_err(|e| match e {
        Error::Timeout => {
            say!(
                "{} not acquired within {:?}",
                cli.path,
                timeout.unwrap_or_default()
            );
            exit_code::NOT_ACQUIRED
        }
        e => {
            say!("acquiring {}: {e}", cli.path);
            exit_code::UNAVAILABLE
        }
    })
}

/// Runs the command; its exit code, or LOST.
async fn hold(cli: &Cli, guard: &Guard, signals: &mut Signals, grace: Duration) -> i32 {
    let Some((program, args)) = cli.command.split_first() else {
        return exit_code::USAGE;
    };
    // A holder paused between the grant and here must not start the command.
    if guard.is_lost() {
        say!("lock lost before the command started");
        return exit_code::LOST;
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("PALISADE_FENCE_TOKEN", guard.token().to_string())
        .env("PALISADE_LOCK_PATH", &cli.path)
        .env("PALISADE_LOCK_NODE", guard.node())
        // Its own process group: a lost lock terminates the command and everything it started.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            say!("cannot run {program}: {e}");
            return match e.kind() {
                std::io::ErrorKind::NotFound => exit_code::NOT_FOUND,
                _ => exit_code::CANNOT_EXECUTE,
            };
        }
    };
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    loop {
        tokio::select! {
            biased;
            reason = guard.lost() => {
                say!("lock {} lost ({reason:?}): terminating the command", guard.node());
                terminate(&mut child, pgid, grace).await;
                return exit_code::LOST;
            }
            st = child.wait() => {
                if guard.is_lost() {
                    say!("lock lost before the command ended");
                    return exit_code::LOST;
                }
                return match st {
                    Ok(st) => status_code(st),
                    Err(e) => {
                        say!("waiting for the command: {e}");
                        exit_code::CANNOT_EXECUTE
                    }
                };
            }
            sig = signals.recv() => {
                // Passed on; the command decides, and its exit ends the hold.
                if let Some(g) = pgid {
                    kill_group(g, sig);
                }
            }
        }
    }
}

/// SIGTERM to the command's group, SIGKILL after `grace` if it has not exited.
async fn terminate(child: &mut Child, pgid: Option<i32>, grace: Duration) {
    let Some(g) = pgid else {
        let _ = child.kill().await;
        return;
    };
    kill_group(g, libc::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        say!("the command ignored SIGTERM for {grace:?}: SIGKILL");
        kill_group(g, libc::SIGKILL);
        let _ = child.wait().await;
    }
}

fn kill_group(pgid: i32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

fn status_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => exit_code::CANNOT_EXECUTE,
    }
}

/// SIGINT, SIGTERM and SIGHUP to palisade-lock itself.
struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal's number.
    async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }
}
