//! palisade-lock as a user runs it: the environment it gives the command, the command's own exit
//! status, each documented exit code, shared read holds, and what it does to the command when
//! the lock is lost (SIGTERM to its process group, SIGKILL after --grace).

mod support;

use palisade_client::lock::Mutex;
use palisade_client::Client;
use std::time::{Duration, Instant};
use support::{alive, exit_code, palisade_lock, temp_dir, wait_file, Server};

const LIMIT: Duration = Duration::from_secs(15);

#[tokio::test]
async fn command_gets_the_token_and_its_exit_status_is_passed_through() {
    let srv = Server::start("cli-env");
    let dir = temp_dir("cli-env");
    let (env, go) = (dir.join("env"), dir.join("go"));
    let script = format!(
        "echo \"$PALISADE_FENCE_TOKEN $PALISADE_LOCK_PATH $PALISADE_LOCK_NODE\" > {}; \
         while [ ! -e {} ]; do sleep 0.01; done; exit 7",
        env.display(),
        go.display()
    );
    let mut p = palisade_lock(&srv.addr(), &["/locks/cli", "--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    let text = wait_file(&env, LIMIT).await;
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [token, path, node] = parts[..] else {
        panic!("{text:?}")
    };
    assert_eq!(path, "/locks/cli");
    assert!(
        node.starts_with("/locks/cli/_c_") && node.contains("-lock-"),
        "{node}"
    );
    let c = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    let st = c
        .exists(node)
        .await
        .unwrap()
        .expect("lock node held while the command runs");
    assert_eq!(token.parse::<i64>().unwrap(), st.czxid);
    std::fs::write(&go, "").unwrap();
    assert_eq!(exit_code(&mut p, LIMIT).await, 7);
    assert_eq!(
        c.get_children("/locks/cli").await.unwrap(),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn not_acquired_within_timeout_is_75_and_the_command_never_runs() {
    let srv = Server::start("cli-timeout");
    let dir = temp_dir("cli-timeout");
    let c = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    let held = Mutex::new(&c, "/locks/busy")
        .unwrap()
        .acquire(None)
        .await
        .unwrap();
    let ran = dir.join("ran");
    let t0 = Instant::now();
    let mut p = palisade_lock(
        &srv.addr(),
        &[
            "--timeout",
            "0.3",
            "/locks/busy",
            "--",
            "touch",
            ran.to_str().unwrap(),
        ],
    )
    .spawn()
    .unwrap();
    assert_eq!(exit_code(&mut p, LIMIT).await, 75);
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert!(!ran.exists());
    // Its contender node is gone; only the holder's is left.
    assert_eq!(c.get_children("/locks/busy").await.unwrap().len(), 1);
    held.release().await.unwrap();
}

#[tokio::test]
async fn usage_connection_and_exec_failures_have_their_codes() {
    let srv = Server::start("cli-codes");
    let a = srv.addr();
    let code = |args: Vec<String>| async move {
        let mut p = tokio::process::Command::new(support::LOCK_BIN)
            .args(&args)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        exit_code(&mut p, LIMIT).await
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        code(s(&["--server", &a, "/locks/x", "true"])).await,
        64,
        "no --"
    );
    assert_eq!(
        code(s(&[
            "--server", &a, "--read", "--write", "/l", "--", "true"
        ]))
        .await,
        64
    );
    assert_eq!(
        code(s(&["--server", &a, "locks/rel", "--", "true"])).await,
        64
    );
    assert_eq!(
        code(s(&["--server", &a, "--grace", "-1", "/l", "--", "true"])).await,
        64
    );
    assert_eq!(code(s(&["--help"])).await, 0);
    let dead = format!("127.0.0.1:{}", support::free_port());
    assert_eq!(code(s(&["--server", &dead, "/l", "--", "true"])).await, 69);
    assert_eq!(
        code(s(&["--server", &a, "/l", "--", "/no/such/command"])).await,
        127
    );
    assert_eq!(
        code(s(&["--server", &a, "/l", "--", "sh", "-c", "kill -9 $$"])).await,
        137
    );
    assert_eq!(code(s(&["--server", &a, "/l", "--", "true"])).await, 0);
    let c = Client::connect(&a, LIMIT).await.unwrap();
    assert!(c.get_children("/l").await.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn readers_hold_together_and_a_writer_waits() {
    let srv = Server::start("cli-rw");
    let dir = temp_dir("cli-rw");
    let go = dir.join("go");
    let reader = |name: &str| {
        let script = format!(
            "touch {}; while [ ! -e {} ]; do sleep 0.01; done",
            dir.join(name).display(),
            go.display()
        );
        palisade_lock(
            &srv.addr(),
            &["--read", "/locks/rw", "--", "sh", "-c", &script],
        )
        .spawn()
        .unwrap()
    };
    let (mut r1, mut r2) = (reader("r1"), reader("r2"));
    wait_file_exists(&dir.join("r1")).await;
    wait_file_exists(&dir.join("r2")).await;
    let mut w = palisade_lock(
        &srv.addr(),
        &["--write", "--timeout", "0.3", "/locks/rw", "--", "true"],
    )
    .spawn()
    .unwrap();
    assert_eq!(exit_code(&mut w, LIMIT).await, 75);
    std::fs::write(&go, "").unwrap();
    assert_eq!(exit_code(&mut r1, LIMIT).await, 0);
    assert_eq!(exit_code(&mut r2, LIMIT).await, 0);
    let mut w = palisade_lock(
        &srv.addr(),
        &["--write", "--timeout", "5", "/locks/rw", "--", "true"],
    )
    .spawn()
    .unwrap();
    assert_eq!(exit_code(&mut w, LIMIT).await, 0);
}

async fn wait_file_exists(p: &std::path::Path) {
    let t0 = Instant::now();
    while !p.exists() {
        assert!(t0.elapsed() < LIMIT, "{} never appeared", p.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn lost_lock_sends_sigterm_to_the_command_and_exits_76() {
    let srv = Server::start("cli-lost");
    let dir = temp_dir("cli-lost");
    let (pid, term) = (dir.join("pid"), dir.join("term"));
    let script = format!(
        "trap 'echo TERM > {}; exit 0' TERM; echo $$ > {}; while :; do sleep 0.02; done",
        term.display(),
        pid.display()
    );
    let mut p = palisade_lock(
        &srv.addr(),
        &["--grace", "10", "/locks/lost", "--", "sh", "-c", &script],
    )
    .spawn()
    .unwrap();
    wait_file(&pid, LIMIT).await;
    // Someone deletes the lock node: the holder must stop.
    let admin = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    let node = admin.get_children("/locks/lost").await.unwrap().remove(0);
    let t0 = Instant::now();
    admin
        .delete(&format!("/locks/lost/{node}"), None)
        .await
        .unwrap();
    assert_eq!(exit_code(&mut p, LIMIT).await, 76);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(wait_file(&term, LIMIT).await.trim(), "TERM");
}

#[tokio::test]
async fn a_command_ignoring_sigterm_is_killed_after_the_grace_period() {
    let srv = Server::start("cli-grace");
    let dir = temp_dir("cli-grace");
    let pid_file = dir.join("pid");
    let script = format!(
        "trap '' TERM; echo $$ > {}; while :; do sleep 0.02; done",
        pid_file.display()
    );
    let mut p = palisade_lock(
        &srv.addr(),
        &["--grace", "0.5", "/locks/grace", "--", "sh", "-c", &script],
    )
    .spawn()
    .unwrap();
    let pid: i32 = wait_file(&pid_file, LIMIT).await.trim().parse().unwrap();
    let admin = Client::connect(&srv.addr(), LIMIT).await.unwrap();
    let node = admin.get_children("/locks/grace").await.unwrap().remove(0);
    let t0 = Instant::now();
    admin
        .delete(&format!("/locks/grace/{node}"), None)
        .await
        .unwrap();
    assert_eq!(exit_code(&mut p, LIMIT).await, 76);
    assert!(
        t0.elapsed() >= Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
    assert!(!alive(pid), "the command survived SIGKILL");
}
