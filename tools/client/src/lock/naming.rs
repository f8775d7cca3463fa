//! Lock node names and the rule that decides, from the lock directory's children, whether a
//! contender holds the lock or whom it waits for. Each rule is the one Curator 5.4 or kazoo
//! 2.11 applies, so Rust contenders and theirs agree on every decision (docs/LOCKS.md).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whose node names and ordering rule a lock uses. Contenders interoperate only with
/// contenders using the same convention on the same path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// Apache Curator's `InterProcessMutex` (`_c_<uuid>-lock-<seq>`) and
    /// `InterProcessReadWriteLock` (`_c_<uuid>-__READ__<seq>`, `_c_<uuid>-__WRIT__<seq>`). Every
    /// child of the lock path counts, ordered by the text after the last lock name.
    #[default]
    Curator,
    /// kazoo's `Lock`/`WriteLock` (`<uuid hex>__lock__<seq>`) and `ReadLock`
    /// (`<uuid hex>__rlock__<seq>`). Only children matching kazoo's contender pattern count.
    Kazoo,
}

impl Naming {
    /// The name the CLI and the docs use.
    pub fn name(self) -> &'static str {
        match self {
            Naming::Curator => "curator",
            Naming::Kazoo => "kazoo",
        }
    }
}

/// Which recipe a contender plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Mutex,
    Read,
    Write,
}

/// What a contender does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Holds,
    /// Wait until this child (a bare name) changes, then decide again.
    Wait(String),
    /// The contender's own node is not among the children.
    Gone,
}

const CURATOR_PROTECTED: &str = "_c_";
const CURATOR_MUTEX: &str = "lock-";
const CURATOR_READ: &str = "__READ__";
const CURATOR_WRITE: &str = "__WRIT__";
const KAZOO_LOCK: &str = "__lock__";
const KAZOO_READ: &str = "__rlock__";

/// The name a contender creates (the server appends the 10-digit sequence). Curator's
/// "protected" prefix `_c_<uuid>-` and kazoo's `<uuid hex>` make it unique, so a create whose
/// reply was lost can be found again.
pub(crate) fn node_prefix(naming: Naming, kind: Kind) -> String {
    let id = random_u128();
    match naming {
        Naming::Curator => {
            let name = match kind {
                Kind::Mutex => CURATOR_MUTEX,
                Kind::Read => CURATOR_READ,
                Kind::Write => CURATOR_WRITE,
            };
            format!("{CURATOR_PROTECTED}{}-{name}", uuid_text(id))
        }
        Naming::Kazoo => {
            let name = match kind {
                Kind::Mutex | Kind::Write => KAZOO_LOCK,
                Kind::Read => KAZOO_READ,
            };
            format!("{id:032x}{name}")
        }
    }
}

/// Decides for the contender whose node is `ours` (a bare name starting with `prefix`).
pub(crate) fn decide(
    naming: Naming,
    kind: Kind,
    children: &[String],
    ours: &str,
    prefix: &str,
) -> Decision {
    match naming {
        Naming::Curator => curator(kind, children, ours),
        Naming::Kazoo => kazoo(kind, children, ours, prefix),
    }
}

/// Curator's `StandardLockInternalsDriver.standardFixForSorting`: the text after the last
/// occurrence of the lock name, or the whole name without one.
fn after_last<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(i) => name.get(i + lock_name.len()..).unwrap_or(""),
        None => name,
    }
}

/// The sort key: the mutex sorts by the text after "lock-"; the read-write lock's
/// `SortingLockInternalsDriver` strips "__READ__" and then "__WRIT__".
fn curator_key(kind: Kind, name: &str) -> &str {
    match kind {
        Kind::Mutex => after_last(name, CURATOR_MUTEX),
        Kind::Read | Kind::Write => after_last(after_last(name, CURATOR_READ), CURATOR_WRITE),
    }
}

/// `LockInternals.getSortedChildren` then `getsTheLock`: a mutex or writer holds when it sorts
/// first and waits for the node right before it; a reader (`readLockPredicate`) holds when no
/// name containing "__WRIT__" sorts before it, and waits for the first such.
fn curator(kind: Kind, children: &[String], ours: &str) -> Decision {
    let mut sorted: Vec<&String> = children.iter().collect();
    // Stable, like Java's Collections.sort.
    sorted.sort_by(|a, b| curator_key(kind, a).cmp(curator_key(kind, b)));
    match kind {
        Kind::Mutex | Kind::Write => match sorted.iter().position(|c| *c == ours) {
            None => Decision::Gone,
            Some(0) => Decision::Holds,
            Some(i) => Decision::Wait(
                sorted
                    .get(i - 1)
                    .map_or_else(String::new, |s| s.to_string()),
            ),
        },
        Kind::Read => {
            let mut first_write = None;
            for (i, c) in sorted.iter().enumerate() {
                if c.contains(CURATOR_WRITE) {
                    first_write.get_or_insert(i);
                } else if c.starts_with(ours) {
                    return match first_write.and_then(|w| sorted.get(w)) {
                        None => Decision::Holds,
                        Some(w) => Decision::Wait(w.to_string()),
                    };
                }
            }
            Decision::Gone
        }
    }
}

/// kazoo's contender pattern `(?:name|…)(-?\d{10})$`: the sequence text of a child, if the
/// child is a contender.
fn kazoo_seq<'a>(child: &'a str, names: &[&str]) -> Option<&'a str> {
    let b = child.as_bytes();
    let n = b.len();
    let digits = b.get(n.checked_sub(10)?..)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // The regex takes the leftmost match: "-" before the digits joins the sequence when a
    // contender name ends right before it.
    if n >= 11 && b.get(n - 11) == Some(&b'-') {
        let head = child.get(..n - 11)?;
        if names.iter().any(|nm| head.ends_with(nm)) {
            return child.get(n - 11..);
        }
    }
    let head = child.get(..n - 10)?;
    names
        .iter()
        .any(|nm| head.ends_with(nm))
        .then(|| child.get(n - 10..))
        .flatten()
}

/// kazoo's `Lock._get_predecessor`: the contenders are the children matching the excluded
/// names (`Lock`: `__lock__`; `WriteLock`: `__lock__`, `__rlock__`; `ReadLock`: `__lock__`)
/// whose sequence text sorts before ours; holds when there is none, else waits for the
/// greatest of them.
fn kazoo(kind: Kind, children: &[String], ours: &str, prefix: &str) -> Decision {
    let names: &[&str] = match kind {
        Kind::Mutex | Kind::Read => &[KAZOO_LOCK],
        Kind::Write => &[KAZOO_LOCK, KAZOO_READ],
    };
    if !children.iter().any(|c| c == ours) {
        return Decision::Gone;
    }
    let own_seq = ours.get(prefix.len()..).unwrap_or("");
    children
        .iter()
        .filter_map(|c| kazoo_seq(c, names).filter(|s| *s < own_seq).map(|s| (s, c)))
        .max_by(|a, b| a.0.cmp(b.0))
        .map_or(Decision::Holds, |(_, c)| Decision::Wait(c.clone()))
}

/// 128 random bits from std's per-process random hash keys, mixed with the time and a counter
/// (unique per call even within a nanosecond).
fn random_u128() -> u128 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let half = |salt: u64| {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u64(n);
        h.write_u128(t);
        h.write_u32(std::process::id());
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// The textual form of a version-4 UUID (as Java's `UUID.randomUUID().toString()`).
fn uuid_text(id: u128) -> String {
    let v4 =
        (id & !(0xF000u128 << 64) | (0x4000u128 << 64)) & !(0xC000u128 << 48) | (0x8000u128 << 48);
    let h = format!("{v4:032x}");
    let part = |a: usize, b: usize| h.get(a..b).unwrap_or("");
    format!(
        "{}-{}-{}-{}-{}",
        part(0, 8),
        part(8, 12),
        part(12, 16),
        part(16, 20),
        part(20, 32)
    )
}

#[cfg(test)]
#[path = "naming_test.rs"]
mod tests;
