//! The scenario of the fencing-token seed (the design note on fencing tokens): a lock holder pauses past its
//! session timeout, another holder is granted the lock and writes, and the first one wakes up
//! and writes with its old token. The TTL/session machinery cannot stop that write; the token
//! does.
//!
//! How: holder A is `palisade-lock` running a shell command that writes to the example fenced
//! store (tools/client/src/bin/palisade-fenced-store.rs) with $PALISADE_FENCE_TOKEN = t. The
//! test stops A (palisade-lock and its command's process group) with SIGSTOP; A's session
//! expires; holder B (another palisade-lock) is granted the lock with t' > t and writes. A is
//! resumed with SIGCONT: its command tries to write with t and the store rejects it, and A's
//! palisade-lock reports the lock lost (exit 76) and ends the command. The command ignores
//! SIGTERM on purpose: a zombie holder that keeps going is exactly what fencing is for.
//!
//! The second test kills the server with -9 and restarts it on its data dir while A is stopped,
//! between the two grants: tokens still increase, and the stale write is still rejected.

mod support;

use std::time::{Duration, Instant};
use support::{
    exit_code, palisade_lock, signal, temp_dir, wait_file, FencedStore, Server, STORE_BIN,
};

const LIMIT: Duration = Duration::from_secs(20);
/// A's session timeout.
const SESSION_MS: u64 = 1500;

#[tokio::test]
async fn paused_holder_is_fenced_off_after_its_session_expired() {
    scenario("seed-pause", false).await;
}

#[tokio::test]
async fn paused_holder_is_fenced_off_across_a_server_kill9_and_restart() {
    scenario("seed-restart", true).await;
}

async fn scenario(name: &str, restart_between: bool) {
    let mut srv = Server::start(name);
    let dir = temp_dir(name);
    let store = FencedStore::start(&dir);
    let f = |n: &str| dir.join(n).display().to_string();
    let write = |data: &str, out: &str| {
        format!(
            "{STORE_BIN} write --server {} '{data}' > {out} 2>&1",
            store.addr
        )
    };

    // Holder A: takes the token, writes once legitimately, then (after the pause) again.
    let script_a = format!(
        "trap '' TERM; echo $PALISADE_FENCE_TOKEN > {tok}; echo $$ > {pid}; {first}; \
         while [ ! -e {go} ]; do sleep 0.01; done; {stale}; echo $? > {rc}; sleep 30",
        tok = f("a.token"),
        pid = f("a.pid"),
        first = write("from A", &f("a.first")),
        go = f("a.go"),
        stale = write("stale A", &f("a.stale")),
        rc = f("a.rc"),
    );
    let session = SESSION_MS.to_string();
    let mut a = palisade_lock(
        &srv.addr(),
        &[
            "--session-timeout",
            &session,
            "--grace",
            "3",
            "/locks/seed",
            "--",
            "sh",
            "-c",
            &script_a,
        ],
    )
    .spawn()
    .unwrap();
    let a_pid = a.id().unwrap() as i32;
    let t: i64 = wait_file(&dir.join("a.token"), LIMIT)
        .await
        .trim()
        .parse()
        .unwrap();
    let a_group: i32 = wait_file(&dir.join("a.pid"), LIMIT)
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(wait_file(&dir.join("a.first"), LIMIT)
        .await
        .contains("accepted"));

    // A pauses (a GC pause, a VM migration…) and stays stopped past its session timeout.
    signal(-a_group, libc::SIGSTOP);
    signal(a_pid, libc::SIGSTOP);
    let paused_at = Instant::now();
    if restart_between {
        srv.kill9();
        srv.restart();
    }

    // Holder B is granted the lock only once A's session expired, with a higher token.
    let script_b = format!(
        "echo $PALISADE_FENCE_TOKEN > {tok}; {w}; cat {out}",
        tok = f("b.token"),
        w = write("from B", &f("b.out")),
        out = f("b.out"),
    );
    let mut b = palisade_lock(
        &srv.addr(),
        &[
            "--timeout",
            "15",
            "/locks/seed",
            "--",
            "sh",
            "-c",
            &script_b,
        ],
    )
    .spawn()
    .unwrap();
    assert_eq!(
        exit_code(&mut b, LIMIT).await,
        0,
        "B's write was not accepted"
    );
    let t2: i64 = wait_file(&dir.join("b.token"), LIMIT)
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(t2 > t, "B's token {t2} is not above A's {t}");
    assert!(
        paused_at.elapsed() >= Duration::from_millis(SESSION_MS / 2),
        "B was granted {:?} after A paused, before A's session could expire",
        paused_at.elapsed()
    );

    // A wakes up, believes it still holds the lock, and writes with its old token.
    std::fs::write(dir.join("a.go"), "").unwrap();
    signal(-a_group, libc::SIGCONT);
    signal(a_pid, libc::SIGCONT);
    let rc = wait_file(&dir.join("a.rc"), LIMIT).await;
    assert_eq!(
        rc.trim(),
        "1",
        "A's stale write was not rejected: {}",
        wait_file(&dir.join("a.stale"), LIMIT).await
    );
    assert!(wait_file(&dir.join("a.stale"), LIMIT)
        .await
        .contains("rejected"));
    // A's palisade-lock saw the loss and ended the command (SIGKILL after the grace period).
    assert_eq!(exit_code(&mut a, LIMIT).await, 76);

    let audit = store.audit();
    assert_eq!(
        audit,
        vec![
            format!("ACCEPT {t} from A"),
            format!("ACCEPT {t2} from B"),
            format!("REJECT {t} {t2}"),
        ],
        "the store's decisions"
    );
    let state = std::fs::read_to_string(&store.file).unwrap();
    assert_eq!(state, format!("{t2}\nfrom B"));
}
