//! `validate` checks that every log segment and snapshot carries the data dir's identity
//! (`dataDir/identity`), as the server does at start (issue 12 item 10): on a real data dir it
//! reports the identity as checked; with the identity file replaced by another data dir's,
//! every file is reported as belonging to another data dir and the verdict fails, and
//! `recover-report` says the server would refuse to start.

mod support;

use palisade::durability::datadir::encode_identity;
use palisade_inspect::damage;
use palisade_inspect::validate::Status;
use palisade_inspect::{validate, DataDir};
use support::*;

#[test]
fn validate_names_files_of_another_identity() {
    let tmp = temp_dir("validate-identity");
    let mut server = Server::start_small(tmp.path(), "");
    let last = workload(server.port, 5, 120);
    server.snapshot_now(last);
    server.kill9();
    let data = server.data();

    let good = validate(&DataDir::new(&data)).unwrap();
    assert!(good.ok(), "{}", good.text());
    assert!(
        good.verdicts
            .iter()
            .any(|v| v.kind == "identity" && v.status == Status::Ok),
        "{}",
        good.text()
    );

    let copy = tmp.path().join("copy");
    damage::prepare(&data, &copy).unwrap();
    std::fs::write(copy.join("identity"), encode_identity(0x0bad)).unwrap();
    let bad = validate(&DataDir::new(&copy)).unwrap();
    assert!(!bad.ok(), "{}", bad.text());
    let foreign: Vec<_> = bad
        .verdicts
        .iter()
        .filter(|v| v.kind == "identity" && v.status == Status::Failed)
        .collect();
    assert!(foreign.len() >= 2, "{}", bad.text());
    assert!(
        foreign
            .iter()
            .all(|v| v.detail.contains("another data dir")),
        "{}",
        bad.text()
    );
    // recover-report runs the server's start on the copy: refused as well.
    let r = palisade_inspect::recover_report::recover_report(&copy).unwrap();
    assert!(!r.recovered(), "{}", r.text());
    assert!(r.text().contains("another data dir"), "{}", r.text());
    let _ = std::fs::remove_dir_all(tmp.path());
}
