//! `palisade --check-config zoo.cfg`: reads a configuration as the server would at start —
//! the keys, the TLS stores and JAAS files they name, an ensemble member's myid — without
//! opening a port or the data, and reports the effective settings and every warning.

use super::{keys, Config};

/// A configuration that would start, with what an operator should know about it.
pub struct Checked {
    pub config: Config,
    pub warnings: Vec<String>,
}

/// Checks `path` with the JVM flag variables as the server takes them (SERVER_JVMFLAGS,
/// JVMFLAGS). `Err`: the server would refuse to start, and why.
pub fn check(path: &str, server_jvmflags: &str, jvmflags: &str) -> Result<Checked, String> {
    let mut cfg = Config::default();
    cfg.apply_jvm_flags(server_jvmflags, jvmflags)?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let mut warnings: Vec<String> = cfg
        .apply_zoo_cfg(&text)?
        .into_iter()
        .map(|k| format!("unknown configuration key {k} (ignored)"))
        .collect();
    let client_tls = cfg.secure_client_port.is_some() || cfg.port_unification;
    if client_tls {
        crate::net::tls::Acceptor::new(cfg.tls.clone())?;
    }
    // Logs its own warning (a JAAS file with no SASL provider).
    cfg.sasl.resolve(client_tls)?;
    if cfg.members.len() > 1 {
        let myid_path = cfg.data_dir.join("myid");
        let text = std::fs::read_to_string(&myid_path).map_err(|e| {
            format!(
                "{}: {e} (an ensemble member needs dataDir/myid holding its server.N id)",
                myid_path.display()
            )
        })?;
        let myid = crate::ensemble::members::parse_myid(&text).map_err(|e| e.to_string())?;
        let listen = cfg
            .members
            .iter()
            .find(|m| m.id == myid)
            .and_then(crate::ensemble::raft::reconcile::peer_addr);
        if listen.is_none() {
            warnings.push(format!(
                "myid {myid} has no server.{myid} line: this member only dials out"
            ));
        }
        crate::ensemble::link::Security::open(
            myid,
            listen,
            &cfg.quorum,
            cfg.sasl.jaas_file.as_deref(),
        )?;
        let voters = cfg
            .members
            .iter()
            .filter(|m| m.role != crate::membership::members::Role::Observer)
            .count();
        if voters % 2 == 0 {
            warnings.push(format!(
                "{voters} voting members tolerate no more failures than {}: an odd number is \
                 the usual choice",
                voters - 1
            ));
        }
    }
    if !cfg.force_sync {
        warnings.push(
            "forceSync=no: writes are acknowledged before they are on disk; a power cut or \
             kernel crash loses them"
                .into(),
        );
    }
    if cfg.skip_acl {
        warnings.push("skipACL=yes: no ACL is checked".into());
    }
    Ok(Checked {
        config: cfg,
        warnings,
    })
}

/// Writes to stdout; a reader that went away (`| head`) ends the output, not the process with
/// a panic as `print!` would.
fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The `--check-config`, `--print-config-reference` and `--version` options, if `first` is
/// one of them: runs it and returns the exit code.
pub fn main(first: &str, mut rest: impl Iterator<Item = String>) -> Option<u8> {
    match first {
        "--version" | "-V" => {
            say(&format!("{}\n", version()));
            Some(0)
        }
        "--print-config-reference" => {
            say(&keys::reference_page());
            Some(0)
        }
        "--check-config" => {
            let Some(path) = rest.next() else {
                eprintln!("usage: palisade --check-config zoo.cfg");
                return Some(2);
            };
            let env = |k| std::env::var(k).unwrap_or_default();
            match check(&path, &env("SERVER_JVMFLAGS"), &env("JVMFLAGS")) {
                Ok(c) => {
                    let mut out = keys::effective(&c.config);
                    for w in &c.warnings {
                        out.push_str(&format!("warning: {w}\n"));
                    }
                    out.push_str(&format!("{path}: OK ({} warning(s))\n", c.warnings.len()));
                    say(&out);
                    Some(0)
                }
                Err(e) => {
                    eprintln!("{path}: error: {e}");
                    Some(1)
                }
            }
        }
        _ => None,
    }
}

/// `palisade <version> (<commit>)`: the commit is build.rs's, from git or from
/// PALISADE_BUILD_COMMIT when built outside a checkout.
pub fn version() -> String {
    format!(
        "palisade {} (build {}, {})",
        env!("CARGO_PKG_VERSION"),
        env!("PALISADE_BUILD_COMMIT"),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
        p.display().to_string()
    }

    #[test]
    fn a_standalone_file_checks_with_its_warnings() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let f = write(
            dir.path(),
            "zoo.cfg",
            "clientPort=2222\nbogus=1\nforceSync=no\n",
        );
        let c = check(&f, "", "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.config.client_port, 2222);
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("bogus") && c.warnings[1].contains("forceSync"));
        assert!(keys::effective(&c.config).contains("clientPort = 2222\n"));
        let bad = write(dir.path(), "bad.cfg", "syncLimit=0\n");
        assert!(check(&bad, "", "").is_err_and(|e| e.contains("syncLimit")));
        assert!(check("/nonexistent/zoo.cfg", "", "").is_err());
    }

    #[test]
    fn an_ensemble_member_needs_its_myid() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap_or_else(|e| panic!("{e}"));
        let servers: String = (1..=4)
            .map(|i| format!("server.{i}=127.0.0.1:{}:{}\n", 2887 + i, 3887 + i))
            .collect();
        let f = write(
            dir.path(),
            "zoo.cfg",
            &format!("dataDir={}\n{servers}", data.display()),
        );
        let e = check(&f, "", "").err().unwrap_or_default();
        assert!(e.contains("myid"), "{e}");
        std::fs::write(data.join("myid"), "2\n").unwrap_or_else(|e| panic!("{e}"));
        let c = check(&f, "", "").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.warnings.iter().any(|w| w.contains("4 voting members")),
            "{:?}",
            c.warnings
        );
        std::fs::write(data.join("myid"), "x\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(check(&f, "", "").is_err());
    }
}
