//! The table against the parsers, the defaults and the reference page.

use super::*;

/// A value each key's parser takes, with any keys it needs beside it.
fn sample(k: &Key, dir: &std::path::Path) -> (String, String) {
    let name = match k.name {
        "server.N" => "server.1",
        "authProvider.N" => "authProvider.1",
        "superUser.*" => "superUser.2",
        n => n,
    };
    let value = match k.name {
        "server.N" => "127.0.0.1:2888:3888".to_string(),
        "authProvider.N" => crate::auth::SASL_PROVIDER.to_string(),
        "authProvider.x509" => "org.apache.zookeeper.server.auth.X509AuthenticationProvider".into(),
        "metricsProvider.className" => super::super::PROMETHEUS_PROVIDER.into(),
        "ssl.clientAuth" | "ssl.quorum.clientAuth" => "need".into(),
        "skipACL" => "no".into(),
        "dynamicConfigFile" => {
            let f = dir.join("zoo.cfg.dynamic");
            std::fs::write(&f, "server.1=127.0.0.1:2888:3888\n").unwrap_or_default();
            f.display().to_string()
        }
        n if n.ends_with(".type") => "PEM".into(),
        _ => match k.kind {
            Kind::Bool => "false".into(),
            Kind::Int if k.default.parse::<u64>().is_ok() => k.default.into(),
            Kind::Int => "2281".into(),
            Kind::Text | Kind::Class if !k.default.starts_with('(') => k.default.into(),
            Kind::Text | Kind::Class => "x".into(),
            Kind::Path => "/etc/palisade/x.pem".into(),
            Kind::List => "srvr".into(),
        },
    };
    // A secure port needs its stores named (checked before the files are read).
    let context = if name == "secureClientPort" {
        "ssl.keyStore.location=/k.pem\nssl.trustStore.location=/t.pem\n"
    } else {
        ""
    };
    (format!("{context}{name}={value}\n"), name.to_string())
}

#[test]
fn every_row_is_a_key_the_parsers_take() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    for k in KEYS {
        let (text, name) = sample(k, dir.path());
        for spelling in [name.clone(), format!("zookeeper.{name}")] {
            let text = text.replace(&format!("{name}="), &format!("{spelling}="));
            let mut c = Config::default();
            assert_eq!(c.apply_zoo_cfg(&text), Ok(vec![]), "{text}");
        }
        assert!(find(&name).is_some_and(|r| r.name == k.name), "{name}");
    }
    let mut c = Config::default();
    assert_eq!(
        c.apply_zoo_cfg("noSuchKey=1\n"),
        Ok(vec!["noSuchKey".into()])
    );
    assert!(find("noSuchKey").is_none());
}

#[test]
fn defaults_are_the_ones_the_code_runs_with() {
    let d = Config::default();
    for k in KEYS {
        let v = (k.value)(&d);
        if v == NO_VALUE {
            assert!(
                k.default == UNSET,
                "{}: a key with no effect has no default",
                k.name
            );
            continue;
        }
        // Parenthesised defaults are derived ("(2 × tickTime)"), except "(unset)".
        if !k.default.starts_with('(') || k.default == UNSET {
            assert_eq!(v, k.default, "{}", k.name);
        }
    }
}

#[test]
fn names_are_unique_and_grouped() {
    let mut seen = std::collections::BTreeSet::new();
    for k in KEYS {
        assert!(seen.insert(k.name), "{} twice", k.name);
    }
}

/// The body of the first function whose signature contains `signature`: up to the closing
/// brace at the signature's own indent.
fn body<'a>(src: &'a str, signature: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = src.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(signature))
        .unwrap_or_else(|| panic!("no {signature}"));
    let indent = lines[start].len() - lines[start].trim_start().len();
    let close = format!("{}}}", " ".repeat(indent));
    lines[start..]
        .iter()
        .take_while(|l| **l != close)
        .copied()
        .collect()
}

fn quoted(s: &str) -> Vec<String> {
    s.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The keys a parser matches on: the string patterns of its outermost `match key` arms
/// (those at the indent of the first arm that is a string), and the `k == ".."` /
/// `starts_with("..")` guards at that indent. Returns (exact keys, prefixes).
fn arms(src: &str, signature: &str) -> (Vec<String>, Vec<String>) {
    let body = body(src, signature);
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let first = body
        .iter()
        .find(|l| l.trim_start().starts_with('"'))
        .unwrap_or_else(|| panic!("no string arm in {signature}"));
    let indent = indent_of(first);
    let (mut exact, mut prefixes) = (Vec::new(), Vec::new());
    for l in body.iter().filter(|l| indent_of(l) == indent) {
        let t = l.trim_start();
        let pattern = t.split("=>").next().unwrap_or("");
        if t.starts_with('"') || t.starts_with("| \"") {
            exact.extend(quoted(pattern));
        } else if t.starts_with("k if") {
            for part in pattern.split("||").flat_map(|p| p.split("&&")) {
                if part.contains("starts_with(") {
                    prefixes.extend(quoted(part));
                } else if part.contains("==") {
                    exact.extend(quoted(part));
                }
            }
        }
    }
    (exact, prefixes)
}

/// The parsers `apply_key` (config.rs) hands a key to, as it calls them, each with its file
/// and the signature of its body: one per area of the reference, in src/config/, and the
/// blocks that parse their own keys.
const DISPATCHED: &[(&str, &str, &str)] = &[
    (
        "self.apply_basics(",
        include_str!("basics.rs"),
        "fn apply_basics(",
    ),
    (
        "self.apply_storage(",
        include_str!("storage.rs"),
        "fn apply_storage(",
    ),
    (
        "self.apply_limits(",
        include_str!("limits.rs"),
        "fn apply_limits(",
    ),
    (
        "self.apply_ensemble(",
        include_str!("ensemble.rs"),
        "fn apply_ensemble(",
    ),
    (
        "self.apply_client_tls(",
        include_str!("client_tls.rs"),
        "fn apply_client_tls(",
    ),
    (
        "self.admin.apply(",
        include_str!("admin.rs"),
        "fn apply(&mut self, key: &str",
    ),
    (
        "self.sasl.apply(",
        include_str!("../auth/settings.rs"),
        "pub fn apply(&mut self, key: &str",
    ),
    (
        "self.quorum.apply(",
        include_str!("../ensemble/link/settings.rs"),
        "pub fn apply(&mut self, key: &str",
    ),
];

/// The client TLS block's parser, which client_tls.rs hands the `ssl.` keys to.
const TLS_PARSER: (&str, &str, &str) = (
    "self.tls.apply(",
    include_str!("../net/tls.rs"),
    "pub fn apply(&mut self, key: &str",
);

#[test]
fn the_scan_covers_every_parser_the_dispatch_calls() {
    let dispatch = body(include_str!("../config.rs"), "fn apply_key(").join("\n");
    let mut calls: Vec<&str> = dispatch
        .match_indices("self.")
        .filter_map(|(at, _)| {
            let rest = dispatch.get(at..)?;
            let end = rest.find('(')?;
            let call = rest.get(..=end)?;
            call.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.(".contains(c))
                .then_some(call)
        })
        .collect();
    calls.sort_unstable();
    let mut scanned: Vec<&str> = DISPATCHED.iter().map(|(call, _, _)| *call).collect();
    scanned.sort_unstable();
    assert_eq!(
        calls, scanned,
        "apply_key calls a parser this test does not scan (add it to DISPATCHED), or no \
         longer calls one it lists"
    );
}

#[test]
fn the_parsers_take_no_key_the_table_lacks() {
    let mut total = 0;
    for &(parser, src, sig) in DISPATCHED.iter().chain([&TLS_PARSER]) {
        let (exact, prefixes) = arms(src, sig);
        assert!(exact.len() >= 3, "{parser}): the scan found {exact:?}");
        total += exact.len();
        for key in exact {
            assert!(
                KEYS.iter().any(|k| k.name == key),
                "{key} is parsed ({parser}..)) but has no row in src/config/keys.rs"
            );
        }
        for p in prefixes {
            // `ssl.` hands the key to the TLS block's parser, scanned itself; so does
            // `metricsProvider.ssl.` (its store keys have rows of their own).
            assert!(
                p == "ssl."
                    || (p == "metricsProvider.ssl."
                        && find("metricsProvider.ssl.keyStore.location").is_some())
                    || KEYS
                        .iter()
                        .any(|k| k.name.starts_with(&p) && find(&format!("{p}x")).is_some()),
                "keys starting {p} are parsed ({parser}..)) but no row stands for them"
            );
        }
    }
    assert!(total > 60, "the scan found only {total} keys");
    // The quorum block takes every TLS key as ssl.quorum.<rest> too.
    let (tls, _) = arms(TLS_PARSER.1, TLS_PARSER.2);
    for key in tls {
        let q = key.replacen("ssl.", "ssl.quorum.", 1);
        assert!(
            KEYS.iter().any(|k| k.name == q),
            "{q} is parsed but has no row"
        );
    }
}

#[test]
fn the_reference_page_is_the_table() {
    let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    // PALISADE_BLESS=1 writes the page instead (the same text --print-config-reference prints).
    if std::env::var_os("PALISADE_BLESS").is_some() {
        std::fs::write(&page, reference_page()).unwrap_or_else(|e| panic!("{e}"));
    }
    let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    assert!(
        text == reference_page(),
        "{} differs from src/config/keys.rs: regenerate it with \
         `palisade --print-config-reference > docs/configuration.md` (or \
         PALISADE_BLESS=1 cargo test --release --lib config::keys)",
        page.display()
    );
}
