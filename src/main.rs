//! `palisade [zoo.cfg] [--port N] [--bind ADDR] [--data-dir DIR] [--truncate-corrupt-log]`,
//! or `palisade import-zookeeper|export-zookeeper …` (see `palisade::migrate`).
//!
//! With no arguments it serves 127.0.0.1:2181 with data in ./data.

use palisade::config::Config;
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: a request allocates a few small buffers and frees them on
/// another thread; glibc spent about a quarter of the core thread's time in malloc/free and its
/// consolidation. Measured: 3.7–4.3 µs of server CPU per setData instead of 5.8 (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn usage() -> &'static str {
    "usage: palisade [zoo.cfg] [--port N] [--bind ADDR] [--data-dir DIR] [--truncate-corrupt-log]\n\
     --truncate-corrupt-log  start even if the log is corrupt in the middle, dropping every\n\
     \x20                       record from the corruption on (moved to log/detached/)"
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut args = std::env::args().skip(1);
    let mut overrides = Vec::new();
    let mut truncate = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" | "--bind" | "--data-dir" => {
                let v = args
                    .next()
                    .ok_or_else(|| format!("{a} needs a value\n{}", usage()))?;
                overrides.push((a, v));
            }
            "--truncate-corrupt-log" => truncate = true,
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
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let mut args = std::env::args().skip(1);
    if let Some(code) = args.next().and_then(|c| palisade::migrate::main(&c, args)) {
        return ExitCode::from(code);
    }
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
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
