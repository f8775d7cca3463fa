//! The read-only tools on the data dir of a server that is writing, rolling segments, taking
//! snapshots and purging old files the whole time: `validate` must never report a failure
//! (replays are bounded by the log as scanned, and files the server purges mid-run are
//! recognised), `replay` must always rebuild a state, and `invariants` either passes or says
//! that its starting snapshot was purged under it.

mod support;

use palisade_inspect::{invariants, replay, validate, DataDir};
use std::time::{Duration, Instant};
use support::*;

#[test]
fn read_only_tools_stay_correct_while_the_server_writes_and_purges() {
    let tmp = temp_dir("live");
    let server = Server::start_small(tmp.path(), "");
    let port = server.port;
    let writer = std::thread::spawn(move || workload(port, 4, 1200));
    let dir = DataDir::new(server.data());
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut rounds = 0;
    while !writer.is_finished() && Instant::now() < deadline {
        let v = validate(&dir).unwrap();
        assert!(v.ok(), "round {rounds}:\n{}", v.text());
        replay(&dir, None).unwrap_or_else(|e| panic!("round {rounds}: {e}"));
        let i = invariants(&dir).unwrap();
        assert!(
            i.ok()
                || i.stopped
                    .as_deref()
                    .is_some_and(|s| s.contains("removed while this ran")),
            "round {rounds}:\n{}",
            i.text()
        );
        rounds += 1;
    }
    writer.join().unwrap();
    assert!(rounds > 3, "only {rounds} rounds overlapped the writes");
    let v = validate(&dir).unwrap();
    assert!(v.ok(), "{}", v.text());
}
