//! `palisade [zoo.cfg] [--port N] [--bind ADDR] [--data-dir DIR] [--truncate-corrupt-log]
//! [--log-format text|json]`, `palisade import-zookeeper|export-zookeeper …` (see
//! `palisade::migrate`), `palisade backup|restore …` (see `palisade::backup::cli`), or
//! `palisade --check-config zoo.cfg | --print-config-reference | --version` (see
//! `palisade::config::check`).
//!
//! With no arguments it serves 127.0.0.1:2181 with data in ./data. Logs go to stderr: text
//! (colours only when stderr is a terminal) or, with `--log-format json`, one JSON object a
//! line for log shippers. RUST_LOG sets the filter (default info).

use palisade::config::Config;
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: a request allocates a few small buffers and frees them on
/// another thread; glibc spent about a quarter of the core thread's time in malloc/free and its
/// consolidation. Measured: 3.7–4.3 µs of server CPU per setData instead of 5.8 (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn usage() -> &'static str {
    "usage: palisade [zoo.cfg] [--port N] [--bind ADDR] [--data-dir DIR] [--truncate-corrupt-log]\n\
     \x20               [--force-new-ensemble] [--log-format text|json]\n\
     \x20      palisade --check-config zoo.cfg | --print-config-reference | --version\n\
     --force-new-ensemble    after the ensemble's quorum is lost for good: this member becomes\n\
     \x20                       an ensemble of one with its own log, in a new term. Writes\n\
     \x20                       acknowledged only by the lost members are gone\n\
     --truncate-corrupt-log  start even if the log is corrupt (a damaged or truncated segment, a\n\
     \x20                       bad record anywhere), dropping every record from the damage on\n\
     \x20                       (moved to log/detached/)"
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

/// The log format from the arguments, read before anything else so the first lines (config
/// warnings) are already in it.
fn log_format() -> Result<LogFormat, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut format = LogFormat::Text;
    for (i, a) in args.iter().enumerate() {
        let value = if a == "--log-format" {
            args.get(i + 1).map(String::as_str)
        } else if let Some(v) = a.strip_prefix("--log-format=") {
            Some(v)
        } else {
            continue;
        };
        format = match value {
            Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            other => {
                return Err(format!(
                    "invalid value for --log-format: {:?} (text or json)\n{}",
                    other.unwrap_or(""),
                    usage()
                ))
            }
        };
    }
    Ok(format)
}

fn init_logs(format: LogFormat) {
    use std::io::IsTerminal;
    // openraft's own info lines narrate every vote, and its replication logs each retry to a
    // member that is down (two lines a retry, several retries a second); the peer links log
    // a member going away and coming back once each instead. RUST_LOG shows them all.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        "info,openraft=warn,openraft::replication=off,\
         openraft::engine::handler::replication_handler=off"
            .into()
    });
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Json => builder.json().with_ansi(false).init(),
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

/// Takes the hard limit of open files as the soft one (as Go's runtime does at start): a
/// default soft limit of 1,024 is few for a server of many clients, and the log, the snapshot
/// writer and the client port must never run out because connections took them all (the peer
/// port holds a bounded number: limits.rs `PEER_PENDING` + `PEER_LINKS`).
fn raise_open_files() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the one struct passed, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            let was = l.rlim_cur;
            l.rlim_cur = l.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 {
                tracing::debug!(
                    was,
                    now = l.rlim_max,
                    "open-file limit raised to its hard limit"
                );
            }
        }
    }
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config::default();
    let env = |k| std::env::var(k).unwrap_or_default();
    cfg.apply_jvm_flags(&env("SERVER_JVMFLAGS"), &env("JVMFLAGS"))?;
    let mut args = std::env::args().skip(1);
    let mut overrides = Vec::new();
    let mut truncate = false;
    let mut force = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" | "--bind" | "--data-dir" => {
                let v = args
                    .next()
                    .ok_or_else(|| format!("{a} needs a value\n{}", usage()))?;
                overrides.push((a, v));
            }
            "--truncate-corrupt-log" => truncate = true,
            palisade::ensemble::raft::recovery::FLAG => force = true,
            // Read by log_format() before the logs start.
            "--log-format" => {
                args.next();
            }
            f if f.starts_with("--log-format=") => {}
            "-h" | "--help" => return Err(usage().to_string()),
            f if !f.starts_with('-') => {
                let text = std::fs::read_to_string(f).map_err(|e| format!("reading {f}: {e}"))?;
                for k in cfg.apply_zoo_cfg(&text)? {
                    tracing::warn!(key = %k, file = f, "unknown configuration key (ignored)");
                }
            }
            other => return Err(format!("unknown option {other}\n{}", usage())),
        }
    }
    cfg.truncate_corrupt_log = truncate;
    if force && cfg.members.len() < 2 {
        return Err(format!(
            "{} is for a member of an ensemble whose quorum is lost for good: this \
             configuration has no server.N lines",
            palisade::ensemble::raft::recovery::FLAG
        ));
    }
    if force && !cfg.reconfig_enabled {
        return Err(format!(
            "{} needs reconfigEnabled=true: the ensemble of one grows back by reconfig, and \
             members started empty must join it rather than form another",
            palisade::ensemble::raft::recovery::FLAG
        ));
    }
    cfg.force_new_ensemble = force;
    for (k, v) in overrides {
        match k.as_str() {
            "--port" => {
                cfg.client_port = v
                    .parse()
                    .map_err(|_| format!("invalid value for --port: {v:?}"))?;
                cfg.client_port_set = true;
            }
            "--bind" => cfg.client_port_address = v,
            _ => cfg.data_dir = v.into(),
        }
    }
    Ok(cfg)
}

fn main() -> ExitCode {
    match log_format() {
        Ok(f) => init_logs(f),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if let Some(code) = first
        .as_deref()
        .and_then(|c| palisade::config::check::main(c, &mut args))
    {
        return ExitCode::from(code);
    }
    if let Some(code) = first.and_then(|c| palisade::migrate::main(&c, args)) {
        return ExitCode::from(code);
    }
    // `palisade backup|restore …` (palisade::backup::cli).
    let mut args = std::env::args().skip(1);
    if let Some(code) = args
        .next()
        .and_then(|c| palisade::backup::cli::main(&c, args))
    {
        return ExitCode::from(code);
    }
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    raise_open_files();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        let addr = format!("{}:{}", cfg.client_port_address, cfg.client_port);
        let listener = if cfg.plaintext_listener() {
            let l = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            Some(l)
        } else {
            None
        };
        palisade::server::run(cfg, listener)
            .await
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("palisade: {e}");
            ExitCode::FAILURE
        }
    }
}
