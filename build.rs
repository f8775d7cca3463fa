//! Records the commit a binary is built from, for `palisade --version`: from
//! PALISADE_BUILD_COMMIT when set (a build from a tarball, or a packager's), else from git,
//! else "unknown" (a tarball without .git). It reruns when the checkout's HEAD moves, so the
//! commit printed is never a stale one.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn own_checkout() -> bool {
    let top = git(&["rev-parse", "--show-toplevel"]).map(std::path::PathBuf::from);
    let here = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    match (
        top.and_then(|t| t.canonicalize().ok()),
        here.and_then(|h| h.canonicalize().ok()),
    ) {
        (Some(t), Some(h)) => t == h,
        _ => false,
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PALISADE_BUILD_COMMIT");
    let commit = match std::env::var("PALISADE_BUILD_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        // Only this checkout's own commit: a tarball unpacked inside another repository must
        // not take that repository's.
        _ if !own_checkout() => "unknown".into(),
        _ => {
            // A commit, a checkout or a reset writes the worktree's logs/HEAD.
            for p in ["HEAD", "logs/HEAD"] {
                if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
            git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    println!("cargo:rustc-env=PALISADE_BUILD_COMMIT={commit}");
}
