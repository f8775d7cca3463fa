use super::*;

#[test]
fn zookeeper_timing_maps_to_a_short_lease_with_room_for_six_heartbeats() {
    // tickTime=2000, syncLimit=5 (ZooKeeper's sample zoo.cfg)
    let c = raft_config(2000, 10, 5, 100_000).unwrap();
    assert_eq!(
        (
            c.heartbeat_interval,
            c.election_timeout_min,
            c.election_timeout_max
        ),
        (50, 150, 300)
    );
    assert_eq!(c.install_snapshot_timeout, 20_000);
    // a short tick: the lease is syncLimit·tickTime / 2, but 60 ms at least
    let c = raft_config(100, 10, 4, 1).unwrap();
    assert_eq!((c.heartbeat_interval, c.election_timeout_max), (33, 200));
    let c = raft_config(20, 1, 1, 1).unwrap();
    assert_eq!((c.heartbeat_interval, c.election_timeout_max), (10, 60));
    // nonsense in zoo.cfg does not overflow
    let c = raft_config(u64::MAX, u64::MAX, u64::MAX, 0).unwrap();
    assert_eq!((c.heartbeat_interval, c.election_timeout_max), (50, 300));
}

#[test]
fn followers_take_turns_after_the_lease_in_id_order() {
    let voters = [1, 2, 3, 4, 5];
    // leader 1 is silent: 2 goes first, half a heartbeat after the lease, then 3, 4, 5
    let t: Vec<u64> = [2, 3, 4, 5]
        .iter()
        .map(|me| stagger(*me, Some(1), &voters, 50).as_millis() as u64)
        .collect();
    assert_eq!(t, [25, 75, 125, 175]);
    // leader 3: the ranks skip it
    assert_eq!(stagger(4, Some(3), &voters, 50).as_millis(), 125);
    assert_eq!(stagger(2, Some(3), &voters, 50).as_millis(), 75);
    assert_eq!(stagger(1, None, &voters, 50).as_millis(), 25);
}
