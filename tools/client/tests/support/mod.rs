//! Shared by the client crate's tests: the real server binary on a temp data dir (loopback
//! only), and a TCP proxy that can go silent or cut its connections, to break a client's
//! connection without touching the server.
#![allow(dead_code)]

#[path = "../../../../tests/support/scratch.rs"]
mod scratch;
pub use scratch::Scratch;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

/// The server binary: $PALISADE_BIN, else `palisade` next to this crate's binaries (the
/// workspace's target/<profile>/, where `cargo test --workspace` builds it).
pub fn server_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("PALISADE_BIN") {
        return PathBuf::from(p);
    }
    let lock = PathBuf::from(env!("CARGO_BIN_EXE_palisade-lock"));
    let bin = lock.with_file_name("palisade");
    assert!(
        bin.exists(),
        "{} not found: build the server first (cargo build [--release] --bin palisade, the \
         same profile as the tests) or set PALISADE_BIN",
        bin.display()
    );
    bin
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

static DIRS: AtomicU64 = AtomicU64::new(0);

/// A fresh directory under the system temp dir, unique per process and call (a `Scratch`:
/// removed unless the test fails).
pub fn temp_dir(name: &str) -> Scratch {
    let n = DIRS.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("palisade-client-{name}-{}-{n}", std::process::id()));
    Scratch::new(d)
}

/// A Palisade process on a data dir, on 127.0.0.1; killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: Scratch,
}

impl Server {
    /// tickTime 250 ms: sessions from 500 ms, expiry checked every 250 ms.
    pub fn start(name: &str) -> Server {
        let dir = temp_dir(name);
        let port = free_port();
        let cfg = format!(
            "tickTime=250\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\n4lw.commands.whitelist=*\n",
            dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), cfg).unwrap_or_else(|e| panic!("{e}"));
        let mut s = Server {
            child: None,
            port,
            dir,
        };
        s.restart();
        s
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the process (again) on the same data dir and waits until it answers ruok.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .unwrap_or_else(|e| panic!("{e}"));
        let child = Command::new(server_bin())
            .arg(self.dir.join("zoo.cfg"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", server_bin().display()));
        self.child = Some(child);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if ruok(self.port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("server did not start; log:\n{}", self.log());
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn ruok(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut out = String::new();
    s.write_all(b"ruok").is_ok() && s.read_to_string(&mut out).is_ok() && out == "imok"
}

/// A loopback TCP proxy to `target`. `silence(true)` stops forwarding in both directions
/// (bytes wait in the sockets, as on a partitioned network); `cut()` closes every proxied
/// connection.
pub struct Proxy {
    pub port: u16,
    silent: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    pub async fn start(target: String) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let silent = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (s2, c2) = (silent.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((down, _)) = listener.accept().await {
                let Ok(up) = TcpStream::connect(&target).await else {
                    continue;
                };
                let (dr, dw) = down.into_split();
                let (ur, uw) = up.into_split();
                let a = tokio::spawn(pump(dr, uw, s2.clone()));
                let b = tokio::spawn(pump(ur, dw, s2.clone()));
                let mut g = c2.lock().unwrap_or_else(|e| e.into_inner());
                g.push(a.abort_handle());
                g.push(b.abort_handle());
            }
        })
        .abort_handle();
        Proxy {
            port,
            silent,
            conns,
            accept,
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn silence(&self, on: bool) {
        self.silent.store(on, Ordering::SeqCst);
    }

    pub fn cut(&self) {
        for h in self
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            h.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    silent: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        while silent.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                // A read that raced the silence switch is held back until it ends.
                while silent.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Polls `f` until it is true or `limit` passes; whether it became true.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

pub fn path_exists(p: &Path) -> bool {
    p.exists()
}

pub const LOCK_BIN: &str = env!("CARGO_BIN_EXE_palisade-lock");
pub const STORE_BIN: &str = env!("CARGO_BIN_EXE_palisade-fenced-store");

/// `palisade-lock --server addr ARGS…` as a tokio command (killed if the test drops it).
pub fn palisade_lock(addr: &str, args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(LOCK_BIN);
    c.arg("--server").arg(addr).args(args).kill_on_drop(true);
    c
}

/// Waits for the process with a bound; its exit code (128+N for signal N).
pub async fn exit_code(child: &mut tokio::process::Child, limit: Duration) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    let st = tokio::time::timeout(limit, child.wait())
        .await
        .unwrap_or_else(|_| panic!("process still running after {limit:?}"))
        .unwrap_or_else(|e| panic!("{e}"));
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// Waits until `path` exists with non-empty content; the content.
pub async fn wait_file(path: &Path, limit: Duration) -> String {
    let t0 = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if !s.is_empty() {
                return s;
            }
        }
        assert!(
            t0.elapsed() < limit,
            "{} did not appear in {limit:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) only sends a signal.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The example fenced store, serving a file in `dir`; killed when dropped.
pub struct FencedStore {
    child: Child,
    pub addr: String,
    pub file: PathBuf,
}

impl FencedStore {
    pub fn start(dir: &Path) -> FencedStore {
        use std::io::BufRead;
        let file = dir.join("store");
        let mut child = Command::new(STORE_BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--file"])
            .arg(&file)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{STORE_BIN}: {e}"));
        let mut line = String::new();
        let out = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("store said {line:?}"))
            .to_string();
        FencedStore { child, addr, file }
    }

    /// The decisions so far, one per line: "ACCEPT token data" / "REJECT token highest".
    pub fn audit(&self) -> Vec<String> {
        let mut p = self.file.as_os_str().to_owned();
        p.push(".log");
        std::fs::read_to_string(PathBuf::from(p))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for FencedStore {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
