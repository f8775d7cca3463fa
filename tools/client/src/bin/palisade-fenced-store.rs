//! `palisade-fenced-store`: the example external resource of docs/LOCKS.md. It keeps one value
//! in a file together with the highest fencing token it has accepted, and **rejects every write
//! whose token is lower**: a holder that lost its lock (paused past its session timeout, say)
//! and comes back with its old token cannot overwrite what a later holder wrote. Writes with
//! the highest token itself are accepted, so one holder may write many times.
//!
//!   palisade-fenced-store serve --listen 127.0.0.1:7000 --file /var/lib/store
//!   palisade-fenced-store write --server 127.0.0.1:7000 [--token N] DATA   # N: $PALISADE_FENCE_TOKEN
//!   palisade-fenced-store read  --server 127.0.0.1:7000
//!
//! Protocol: one line per request over TCP. `WRITE <token> <data>` → `OK <token>` or
//! `REJECT <highest>`; `READ` → `STATE <highest> <data>`. The state file (`<highest>\n<data>`) is
//! replaced atomically (write, fsync, rename) before `OK` is sent; every decision is appended
//! to `<file>.log` (`ACCEPT <token> <data>` / `REJECT <token> <highest>`).
//!
//! `write` exits 0 when accepted, 1 when rejected, 2 on any error.

use clap::{Parser, Subcommand};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Parser)]
#[command(
    about = "A file-backed store that rejects writes with a fencing token lower than the highest it accepted"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the store; prints "listening HOST:PORT" once ready.
    Serve {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
        #[arg(long)]
        file: PathBuf,
    },
    /// Write DATA with a token (default: $PALISADE_FENCE_TOKEN).
    Write {
        #[arg(long)]
        server: String,
        #[arg(long)]
        token: Option<i64>,
        data: String,
    },
    /// Print the highest token and the data.
    Read {
        #[arg(long)]
        server: String,
    },
}

/// The store's state and its files; one writer at a time (the mutex), so a decision and its
/// durable effect are one step.
struct Store {
    file: PathBuf,
    highest: i64,
    data: String,
}

impl Store {
    fn open(file: PathBuf) -> io::Result<Store> {
        let (highest, data) = match std::fs::read_to_string(&file) {
            Ok(text) => {
                let (first, rest) = text.split_once('\n').unwrap_or((text.as_str(), ""));
                let highest = first.trim().parse().map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: bad token line", file.display()),
                    )
                })?;
                (highest, rest.to_string())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => (i64::MIN, String::new()),
            Err(e) => return Err(e),
        };
        Ok(Store {
            file,
            highest,
            data,
        })
    }

    /// The fencing rule. `Ok(true)` when accepted (and durable).
    fn write(&mut self, token: i64, data: &str) -> io::Result<bool> {
        if token < self.highest {
            self.audit(&format!("REJECT {token} {}", self.highest))?;
            return Ok(false);
        }
        let tmp = self.file.with_extension("tmp");
        {
            let mut f = std::fs::File::create(&tmp)?;
            write!(f, "{token}\n{data}")?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.file)?;
        if let Some(dir) = self.file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        self.highest = token;
        self.data = data.to_string();
        self.audit(&format!("ACCEPT {token} {data}"))?;
        Ok(true)
    }

    fn audit(&self, line: &str) -> io::Result<()> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path(&self.file))?;
        writeln!(log, "{line}")
    }
}

fn log_path(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".log");
    PathBuf::from(s)
}

async fn serve(listen: String, file: PathBuf) -> io::Result<()> {
    let store = Arc::new(Mutex::new(Store::open(file)?));
    let listener = TcpListener::bind(&listen).await?;
    println!("listening {}", listener.local_addr()?);
    io::stdout().flush()?;
    loop {
        let (sock, _) = listener.accept().await?;
        let store = store.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(sock, store).await {
                eprintln!("palisade-fenced-store: {e}");
            }
        });
    }
}

async fn connection(sock: TcpStream, store: Arc<Mutex<Store>>) -> io::Result<()> {
    let (r, mut w) = sock.into_split();
    let mut lines = BufReader::new(r).lines();
    while let Some(line) = lines.next_line().await? {
        let reply = answer(&line, &store);
        w.write_all(reply.as_bytes()).await?;
    }
    Ok(())
}

fn answer(line: &str, store: &Mutex<Store>) -> String {
    let mut s = store.lock().unwrap_or_else(|e| e.into_inner());
    let mut parts = line.splitn(3, ' ');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("READ"), None, None) => format!("STATE {} {}\n", s.highest, s.data),
        (Some("WRITE"), Some(token), data) => match token.parse::<i64>() {
            Ok(t) => match s.write(t, data.unwrap_or("")) {
                Ok(true) => format!("OK {t}\n"),
                Ok(false) => format!("REJECT {}\n", s.highest),
                Err(e) => format!("ERROR {e}\n"),
            },
            Err(_) => "ERROR bad token\n".to_string(),
        },
        _ => "ERROR bad request\n".to_string(),
    }
}

async fn request(server: &str, line: &str) -> io::Result<String> {
    let sock = TcpStream::connect(server).await?;
    let (r, mut w) = sock.into_split();
    w.write_all(format!("{line}\n").as_bytes()).await?;
    let mut lines = BufReader::new(r).lines();
    lines
        .next_line()
        .await?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no answer"))
}

async fn write(server: String, token: Option<i64>, data: String) -> i32 {
    let token = match token.map(Ok).unwrap_or_else(|| {
        std::env::var("PALISADE_FENCE_TOKEN")
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or(())
    }) {
        Ok(t) => t,
        Err(()) => {
            eprintln!("palisade-fenced-store: no --token and no PALISADE_FENCE_TOKEN");
            return 2;
        }
    };
    if data.contains('\n') {
        eprintln!("palisade-fenced-store: data must be one line");
        return 2;
    }
    match request(&server, &format!("WRITE {token} {data}")).await {
        Ok(a) if a.starts_with("OK ") => {
            println!("accepted token {token}");
            0
        }
        Ok(a) if a.starts_with("REJECT ") => {
            println!("rejected token {token}: the store has seen {}", &a[7..]);
            1
        }
        Ok(a) => {
            eprintln!("palisade-fenced-store: {a}");
            2
        }
        Err(e) => {
            eprintln!("palisade-fenced-store: {server}: {e}");
            2
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let code = match Cli::parse().cmd {
        Cmd::Serve { listen, file } => match serve(listen, file).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("palisade-fenced-store: {e}");
                2
            }
        },
        Cmd::Write {
            server,
            token,
            data,
        } => write(server, token, data).await,
        Cmd::Read { server } => match request(&server, "READ").await {
            Ok(a) => {
                println!("{}", a.strip_prefix("STATE ").unwrap_or(&a));
                0
            }
            Err(e) => {
                eprintln!("palisade-fenced-store: {server}: {e}");
                2
            }
        },
    };
    std::process::exit(code);
}
