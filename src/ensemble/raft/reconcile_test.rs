use super::*;
use crate::ensemble::members::parse_member;

fn config(lines: &[&str]) -> DynConfig {
    let members = lines
        .iter()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("=");
            parse_member(k, v).expect("line")
        })
        .collect();
    DynConfig {
        members,
        version: 7,
    }
}

fn nodes(ids: &[(u64, u16)]) -> BTreeMap<NodeId, String> {
    ids.iter()
        .map(|(id, p)| (*id, format!("127.0.0.1:{p}")))
        .collect()
}

fn set(ids: &[u64]) -> BTreeSet<NodeId> {
    ids.iter().copied().collect()
}

/// Asserts that the next step (`reconfig` enabled or not) adds `id` at `addr` as a learner,
/// and takes it.
fn learner_added(
    want: &DynConfig,
    voters: &BTreeSet<NodeId>,
    have: &mut BTreeMap<NodeId, String>,
    reconfig: bool,
    id: NodeId,
    addr: &str,
) {
    assert_eq!(
        next_step(want, voters, have, reconfig),
        Some(Step::AddLearner(id, addr.into()))
    );
    have.insert(id, addr.into());
}

#[test]
fn the_membership_is_brought_to_the_configuration_one_step_at_a_time() {
    let want = config(&[
        "server.1=127.0.0.1:11:12",
        "server.2=127.0.0.1:21:22",
        "server.4=127.0.0.1:41:42:participant;4000",
        "server.5=127.0.0.1:51:52:observer;5000",
    ]);
    // Raft has 1, 2, 3 voting: 4 and 5 are added as learners first, then the voters change
    // (3 stays a learner: retain).
    let mut voters = set(&[1, 2, 3]);
    let mut have = nodes(&[(1, 11), (2, 21), (3, 31)]);
    assert!(!matches(&want, &voters, &have));
    learner_added(&want, &voters, &mut have, true, 4, "127.0.0.1:41");
    learner_added(&want, &voters, &mut have, true, 5, "127.0.0.1:51");
    assert_eq!(
        next_step(&want, &voters, &have, true),
        Some(Step::Voters(set(&[1, 2, 4])))
    );
    voters = set(&[1, 2, 4]);
    assert_eq!(next_step(&want, &voters, &have, true), None);
    assert!(
        matches(&want, &voters, &have),
        "3, a learner outside it, is allowed"
    );
    // A new address for 2.
    have.insert(2, "127.0.0.1:29".into());
    assert!(!matches(&want, &voters, &have));
    assert_eq!(
        next_step(&want, &voters, &have, true),
        Some(Step::SetAddress(2, "127.0.0.1:21".into()))
    );
}

#[test]
fn without_reconfig_only_observers_are_added() {
    let want = config(&[
        "server.1=127.0.0.1:11:12",
        "server.2=127.0.0.1:21:22",
        "server.9=127.0.0.1:91:92:observer",
    ]);
    let voters = set(&[1, 2, 3]);
    let mut have = nodes(&[(1, 11), (2, 21), (3, 31)]);
    learner_added(&want, &voters, &mut have, false, 9, "127.0.0.1:91");
    assert_eq!(
        next_step(&want, &voters, &have, false),
        None,
        "voters stay zoo.cfg's"
    );
}
