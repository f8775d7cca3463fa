//! The layout's promise (ARCHITECTURE.md): `src/` reads as net → core → prep → state and
//! core → durability → state, with no import circles between its top-level modules. This
//! reads every non-test source file's `crate::` paths and checks the graph, so a new import
//! that breaks the layering fails here rather than in a reader's head. Inside src/core, the
//! engine does no I/O: only the runtime's files may (`the_engine_does_no_io`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// What each layer may import from the crate (besides itself). Every module has a row.
const ALLOWED: &[(&str, &[&str])] = &[
    ("path", &["limits"]),
    ("acl", &["limits"]),
    ("metrics", &["limits"]),
    ("auth", &[]),
    ("limits", &[]),
    ("spin", &[]),
    // The negative controls' fault switches (issue 15): a leaf, one-line call sites.
    ("faults", &[]),
    // The ensemble's configuration model: plain data the core and ensemble/ both read.
    ("membership", &[]),
    ("state", &["acl", "path", "limits"]),
    ("prep", &["acl", "path", "state", "limits", "faults"]),
    ("durability", &["acl", "state", "metrics", "spin", "limits"]),
    (
        "core",
        &[
            "acl",
            "auth",
            "path",
            "state",
            "prep",
            "durability",
            "metrics",
            "spin",
            "limits",
            "faults",
            "membership",
            "seam",
        ],
    ),
    // What the core and the consensus glue exchange (issue 36): a leaf both sides name.
    ("seam", &[]),
    // The consensus glue reaches the core only through the seam (never `core`).
    (
        "ensemble",
        &[
            "seam",
            "membership",
            "durability",
            "state",
            "auth",
            "net",
            "metrics",
            "spin",
            "limits",
        ],
    ),
    ("net", &["core", "limits", "metrics", "acl"]),
    // Above the engine and the ensemble: what the operator and the process see.
    // The ZooKeeper formats in and out (import, export, the observer of a live ensemble, whose
    // link reuses the members' quorum TLS and SASL).
    (
        "migrate",
        &[
            "acl",
            "auth",
            "config",
            "ensemble",
            "durability",
            "limits",
            "membership",
            "path",
            "state",
        ],
    ),
    // zoo.cfg read into settings, some of them the ensemble's and the links' own types.
    (
        "config",
        &["auth", "ensemble", "limits", "membership", "net", "spin"],
    ),
    // Backups taken and restored, standalone or through a member.
    (
        "backup",
        &[
            "config",
            "durability",
            "ensemble",
            "limits",
            "migrate",
            "net",
            "state",
        ],
    ),
    // The AdminServer and the metrics endpoint: asks the core, answers HTTP.
    (
        "admin",
        &[
            "acl",
            "backup",
            "config",
            "core",
            "durability",
            "limits",
            "metrics",
            "migrate",
            "net",
        ],
    ),
    // The process: starts every part and wires them.
    (
        "server",
        &[
            "acl",
            "admin",
            "auth",
            "config",
            "core",
            "durability",
            "ensemble",
            "limits",
            "metrics",
            "migrate",
            "net",
            "state",
        ],
    ),
];

/// The crate's roots, which name every module (lib.rs, main.rs) and the shared test kit.
const ROOTS: &[&str] = &["lib", "main", "testkit"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src/") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Test files and the shared test kit may reach anywhere.
fn is_test_file(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with("_test.rs") || name == "testkit.rs"
}

/// The text of a file without its comments and its `#[cfg(test)] mod tests` tail.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Every top-level module named after `crate::`, including `crate::{a::x, b}`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(ch);
            }
            out.insert(ident(&item));
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut g = Graph::new();
    for f in files.iter().filter(|f| !is_test_file(f)) {
        let rel = f.strip_prefix(&src).expect("under src/");
        let first = rel.components().next().expect("a component");
        let top = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(f).expect("read source");
        let entry = g.entry(top.clone()).or_default();
        entry.extend(imports(&code(&text)).into_iter().filter(|m| *m != top));
    }
    g
}

/// A circle through `from`, if any: the path of modules back to it.
fn circle(g: &Graph, from: &str) -> Option<Vec<String>> {
    fn walk(
        g: &Graph,
        at: &str,
        goal: &str,
        seen: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> bool {
        for next in g.get(at).into_iter().flatten() {
            if next == goal {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(g, next, goal, seen, path) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_string()];
    walk(g, from, from, &mut BTreeSet::new(), &mut path).then_some(path)
}

#[test]
fn no_import_circles_between_top_level_modules() {
    let g = graph();
    assert!(
        g.contains_key("core") && g.contains_key("state"),
        "src/ layout not found: {g:?}"
    );
    for m in g.keys() {
        if let Some(c) = circle(&g, m) {
            panic!("import circle: {}", c.join(" → "));
        }
    }
}

#[test]
fn each_layer_imports_only_what_is_below_it() {
    let g = graph();
    let unlisted: Vec<_> = g
        .keys()
        .filter(|m| !ROOTS.contains(&m.as_str()) && !ALLOWED.iter().any(|(a, _)| a == m))
        .collect();
    assert!(
        unlisted.is_empty(),
        "modules without a row in ALLOWED (say what each may import): {unlisted:?}"
    );
    for (module, allowed) in ALLOWED {
        let Some(uses) = g.get(*module) else {
            panic!("module {module} not found in src/");
        };
        let bad: Vec<_> = uses
            .iter()
            .filter(|u| !allowed.contains(&u.as_str()))
            .collect();
        assert!(
            bad.is_empty(),
            "{module} imports {bad:?}; it may import only {allowed:?}"
        );
    }
}

#[test]
fn the_scanner_sees_grouped_and_nested_imports() {
    let found = imports("use crate::{a::b, c::{d, e}, f};\nlet x = crate::g::h(); // crate::no");
    let want: BTreeSet<String> = ["a", "c", "f", "g", "no"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, want);
    assert_eq!(imports(&code("x // crate::no")), BTreeSet::new());
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("a".into());
    assert_eq!(
        circle(&g, "a"),
        Some(vec!["a".to_string(), "b".into(), "a".into()])
    );
}

/// The data tree's mutations, by name: `state` alone calls them (issue 36: the single
/// mutation path). Everything else reads the tree, and changes state through `State::apply`
/// or the named changes in src/state (`set_ensemble_config`, `recount_quotas`).
const TREE_MUTATIONS: &[&str] = &[
    "apply_create",
    "apply_delete",
    "apply_set_data",
    "apply_set_acl",
    "raise_pzxid",
    "rebuild_quotas",
    "set_data_unchecked",
];

/// Every `pub` item signature in `code` that takes `&mut self`, as `fn name(`: the tree's
/// mutating methods must be private or `pub(super)`/`pub(in crate::state)`, never `pub` or
/// `pub(crate)`.
fn public_mutators(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for vis in ["pub fn ", "pub(crate) fn "] {
        let mut rest = code;
        while let Some(i) = rest.find(vis) {
            rest = &rest[i + vis.len()..];
            let sig_end = rest.find(['{', ';']).unwrap_or(rest.len());
            if rest[..sig_end].contains("&mut self") {
                out.push(format!("{vis}{}(", ident(rest)));
            }
        }
    }
    out
}

#[test]
fn only_state_mutates_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let state = root.join("src/state");
    // The tree's own files: none of its `&mut self` methods is visible outside `state`, and
    // its struct has no public field (the loader, load.rs, builds a tree; it changes none).
    for f in ["mod.rs", "node.rs", "mutate.rs", "quota.rs", "digest.rs"] {
        let text = std::fs::read_to_string(state.join("tree").join(f)).expect("read tree");
        let bad = public_mutators(&code(&text));
        assert!(
            bad.is_empty(),
            "src/state/tree/{f}: {bad:?} would let code outside src/state change the tree; make it pub(in crate::state) and go through State"
        );
    }
    let tree = std::fs::read_to_string(state.join("tree/mod.rs")).expect("read tree");
    let fields = tree
        .split("pub struct DataTree {")
        .nth(1)
        .and_then(|t| t.split("\n}").next())
        .expect("struct DataTree in src/state/tree/mod.rs");
    assert!(
        !fields.lines().any(|l| l.trim_start().starts_with("pub")),
        "DataTree has a public field: {fields}"
    );
    // Nobody outside src/state, tests and tools included, calls the mutations or replaces a
    // state's tree.
    let mut files = Vec::new();
    for dir in ["src", "tools", "tests"] {
        sources(&root.join(dir), &mut files);
    }
    // (This file names the patterns it looks for.)
    let me = root.join(file!());
    for f in files.iter().filter(|f| !f.starts_with(&state) && **f != me) {
        let text = std::fs::read_to_string(f).expect("read source");
        let code = code(&text);
        for m in TREE_MUTATIONS {
            let calls = [format!(".{m}("), format!("::{m}(")];
            assert!(
                !calls.iter().any(|c| code.contains(c.as_str())),
                "{} calls the tree's {m}: go through State::apply or a named change in src/state",
                f.display()
            );
        }
        let replaced = code
            .match_indices(".tree =")
            .any(|(i, _)| !code[i + ".tree =".len()..].starts_with('='));
        let borrowed = code.match_indices("&mut ").any(|(i, _)| {
            let place: String = code[i + "&mut ".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            place == "tree" || place.ends_with(".tree")
        });
        assert!(
            !replaced && !borrowed,
            "{} replaces or borrows a tree mutably",
            f.display()
        );
    }
}

#[test]
fn the_mutator_scanner_sees_multi_line_signatures() {
    let code = "pub fn a(&self) {}\npub fn b(\n    &mut self,\n    x: u32,\n) {}\npub(crate) fn c(&mut self);\npub(in crate::state) fn d(&mut self) {}\nfn e(&mut self) {}";
    assert_eq!(public_mutators(code), vec!["pub fn b(", "pub(crate) fn c("]);
}

/// The core's runtime: the files of src/core that may do I/O (issue 36). Everything else in
/// src/core is the engine, which steps on inputs and pushes outputs into its outbox.
const CORE_RUNTIME: &[&str] = &[
    "runtime/mod.rs",
    "runtime/host.rs",
    "runtime/routes.rs",
    "runtime/inbox.rs",
];

/// What the engine may not use, by what it is: it reads no clock and draws no random number
/// (time and randomness are inputs: `Now`, a seed), touches no file or socket, keeps nothing
/// in a thread-local, starts no thread and reads no process environment.
const ENGINE_FORBIDDEN: &[(&str, &str)] = &[
    ("tokio::", "tokio"),
    ("std::fs", "files"),
    ("std::net", "sockets"),
    ("std::thread", "threads"),
    ("std::process", "processes"),
    ("Instant::now", "the clock"),
    ("SystemTime", "the clock"),
    (".elapsed()", "the clock"),
    ("thread_local!", "a thread-local"),
    ("rand::", "a random source"),
    ("fastrand::u", "a random source (the global generator)"),
    ("fastrand::i", "a random source (the global generator)"),
    ("fastrand::f", "a random source (the global generator)"),
    (
        "fastrand::shuffle",
        "a random source (the global generator)",
    ),
    ("fastrand::choice", "a random source (the global generator)"),
    ("fastrand::bool", "a random source (the global generator)"),
    (
        "fastrand::alphanumeric",
        "a random source (the global generator)",
    ),
    (
        "Rng::new(",
        "a random source (a generator seeded from the system)",
    ),
    ("std::env::var", "the process environment"),
    ("std::env::current_dir", "the process environment"),
    ("std::env::temp_dir", "the process environment"),
];

/// Whether `code` uses `pat` as a path (not as the tail of a longer name: `fastrand::` is not
/// `rand::`).
fn uses(code: &str, pat: &str) -> bool {
    code.match_indices(pat).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        !pat.starts_with(|c: char| c.is_ascii_alphanumeric())
            || !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Every engine file's forbidden uses, as "file: what (pattern)".
fn engine_io(core: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(core, &mut files);
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !is_test_file(f)) {
        let rel = f
            .strip_prefix(core)
            .expect("under src/core")
            .to_string_lossy()
            .replace('\\', "/");
        if CORE_RUNTIME.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        let code = code(&text);
        for (pat, what) in ENGINE_FORBIDDEN {
            if uses(&code, pat) {
                bad.push(format!("src/core/{rel}: {what} ({pat})"));
            }
        }
    }
    bad
}

#[test]
fn the_engine_does_no_io() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    for f in CORE_RUNTIME {
        assert!(
            core.join(f).is_file(),
            "runtime file src/core/{f} not found"
        );
    }
    let bad = engine_io(&core);
    assert!(
        bad.is_empty(),
        "the engine (src/core outside {CORE_RUNTIME:?}) does I/O; hand it in from the runtime or push it to the outbox:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_engine_scanner_tells_paths_from_longer_names() {
    assert!(uses("let x = rand::random();", "rand::"));
    assert!(!uses("let r = fastrand::Rng::with_seed(1);", "rand::"));
    assert!(uses("fastrand::u64(0..9)", "fastrand::u"));
    assert!(!uses("fastrand::Rng::with_seed(s)", "fastrand::u"));
    assert!(uses("at.elapsed()", ".elapsed()"));
    assert!(!uses(&code("// Instant::now()"), "Instant::now"));
}

/// The module a source file is, as a path from the crate root (`core/role/mod.rs` is
/// `core::role`; lib.rs and main.rs are the root).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// The path segments of `s` from its start: `a::b::{c, d::e}` gives `[a, b]` and the rest
/// from the brace on.
fn segments(s: &str) -> (Vec<String>, &str) {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let id = ident(rest);
        if id.is_empty() {
            return (out, rest);
        }
        rest = &rest.trim_start()[id.len()..];
        out.push(id);
        match rest.strip_prefix("::") {
            Some(r) if !r.starts_with('{') => rest = r,
            Some(r) => return (out, r),
            None => return (out, rest),
        }
    }
}

/// Every path a use tree names, from `{`'s inside on: `a::X, b::{c, d}}` → `[a, X]`, `[b, c]`, `[b, d]`.
fn use_tree(prefix: &[String], s: &str, out: &mut Vec<Vec<String>>) -> usize {
    let mut i = 0;
    let bytes = s.as_bytes();
    while i < s.len() {
        let c = bytes[i] as char;
        if c == '}' {
            return i + 1;
        }
        if c == ',' || c.is_whitespace() {
            i += 1;
            continue;
        }
        let (segs, rest) = segments(&s[i..]);
        let used = s.len() - i - rest.len();
        let mut path = prefix.to_vec();
        path.extend(segs.iter().filter(|s| *s != "self").cloned());
        if let Some(inner) = rest.strip_prefix('{') {
            i += used + 1 + use_tree(&path, inner, out);
        } else {
            out.push(path);
            i += used.max(1);
        }
    }
    s.len()
}

/// Every crate path a file at module `me` names through `crate::`, `super::` or `self::`,
/// resolved from the crate root.
fn module_refs(me: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("::") {
        let head_start = code[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let head = &code[head_start..i];
        let before = code[..head_start].chars().next_back();
        if before == Some(':') || !matches!(head, "crate" | "super" | "self") {
            continue;
        }
        let mut base: Vec<String> = if head == "crate" {
            Vec::new()
        } else {
            me.to_vec()
        };
        if head == "super" {
            base.pop();
        }
        let (segs, rest) = segments(&code[i + 2..]);
        let mut path = base;
        for s in segs {
            if s == "super" {
                path.pop();
            } else {
                path.push(s);
            }
        }
        if let Some(inner) = rest.strip_prefix('{') {
            use_tree(&path, inner, &mut out);
        } else {
            out.push(path);
        }
    }
    out
}

/// For each folder of src/, the imports between its members (its files and sub-folders, each
/// as one; its mod.rs is the folder itself and not counted: it owns its members).
fn folder_graphs() -> BTreeMap<Vec<String>, Graph> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let files: Vec<(Vec<String>, String)> = files
        .iter()
        .filter(|f| !is_test_file(f))
        .map(|f| {
            let rel = f.strip_prefix(&src).expect("under src/");
            let text = std::fs::read_to_string(f).expect("read source");
            (module_of(rel), code(&text))
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let owner = |p: &[String]| -> Vec<String> {
        (0..=p.len())
            .rev()
            .map(|n| p[..n].to_vec())
            .find(|m| modules.contains(m))
            .unwrap_or_default()
    };
    let mut graphs: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
    for (me, text) in &files {
        for r in module_refs(me, text) {
            let to = owner(&r);
            // The members of the deepest folder holding both ends.
            let common = me.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common >= me.len() || common >= to.len() {
                continue; // one end is the other's folder (its mod.rs) or the same module
            }
            graphs
                .entry(me[..common].to_vec())
                .or_default()
                .entry(me[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    graphs
}

#[test]
fn no_import_circles_inside_any_folder() {
    let graphs = folder_graphs();
    assert!(
        graphs.contains_key(&vec!["core".to_string()]),
        "src/core's members not found: {:?}",
        graphs.keys().collect::<Vec<_>>()
    );
    let mut circles = Vec::new();
    for (folder, g) in &graphs {
        for m in g.keys() {
            if let Some(c) = circle(g, m) {
                circles.push(format!("src/{}: {}", folder.join("/"), c.join(" → ")));
                break;
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_folder_scanner_resolves_relative_and_grouped_paths() {
    let me: Vec<String> = ["core", "intake"].iter().map(|s| s.to_string()).collect();
    let refs = module_refs(
        &me,
        "use super::{pending::P, role::{member::M, Role}};\nlet x = crate::state::State::new(); super::super::seam::X; a::self::b",
    );
    let want: Vec<Vec<String>> = [
        "core::pending::P",
        "core::role::member::M",
        "core::role::Role",
        "state::State::new",
        "seam::X",
    ]
    .iter()
    .map(|p| p.split("::").map(String::from).collect())
    .collect();
    assert_eq!(refs, want);
    assert_eq!(
        module_of(Path::new("core/role/mod.rs")),
        vec!["core", "role"]
    );
    assert_eq!(module_of(Path::new("lib.rs")), Vec::<String>::new());
}
