//! The server under test as a process: started with the user's command in its own process
//! group (so kill -9 reaches a JVM behind a shell script too), probed with `srvr`, killed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    command: String,
    pub port: u16,
    pub log: PathBuf,
    child: Option<Child>,
    pub started: Option<Instant>,
}

/// A four-letter word's answer ("" when nothing answers).
pub fn four(port: u16, word: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(word.as_bytes()).is_err() {
        return String::new();
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

impl Server {
    pub fn new(command: &str, port: u16, log: &Path) -> Server {
        Server {
            command: command.to_string(),
            port,
            log: log.to_path_buf(),
            child: None,
            started: None,
        }
    }

    /// Starts the command (`sh -c`) with extra environment; does not wait.
    pub fn spawn(&mut self, env: &[(String, String)]) -> std::io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        self.child = Some(cmd.spawn()?);
        self.started = Some(Instant::now());
        Ok(())
    }

    /// Waits until the server answers `srvr` with its mode (it serves), up to `limit`.
    pub fn wait_ready(&mut self, limit: Duration) -> Result<Duration, String> {
        let t0 = self.started.unwrap_or_else(Instant::now);
        while t0.elapsed() < limit {
            if four(self.port, "srvr").contains("Mode:") {
                return Ok(t0.elapsed());
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(format!("the server exited while starting ({st})"));
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Err(format!("no answer within {limit:?}"))
    }

    /// Whether the process has exited (a crash point fired, or it failed).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some())
    }

    /// A signal (SIGSTOP, SIGCONT) to the whole process group; false when not running.
    pub fn signal(&mut self, sig: i32) -> bool {
        let Some(c) = self.child.as_ref() else {
            return false;
        };
        let pgid = c.id() as i32;
        // SAFETY: as in kill9: plain integers, a negative pid names the child's process group.
        pgid > 0 && unsafe { libc::kill(-pgid, sig) } == 0
    }

    /// SIGKILL to the whole process group, then reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pgid = c.id() as i32;
            if pgid > 0 {
                // SAFETY: kill(2) takes plain integers; a negative pid names the process
                // group the child leads (process_group(0) above).
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}
