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

fn config() -> openraft::Config {
    // lease 300 ms, heartbeat 50 ms, election timeout 150..300 ms
    raft_config(2000, 10, 5, 100_000).unwrap()
}

fn follower(leader: NodeId, touched: Instant) -> Look {
    Look {
        state: ServerState::Follower,
        vote: Vote::new_committed(2, leader),
        touched: Some(touched),
        voters: vec![1, 2, 3],
    }
}

/// Calls the driver as its loop would: at `now`, then again when it asked, until `until`;
/// the time of the first election, if any.
fn run_until(d: &mut Driver, look: &Look, mut now: Instant, until: Instant) -> Option<Instant> {
    while now <= until {
        match d.next(look, now) {
            Act::Elect => return Some(now),
            Act::Wait(w) => now += w,
        }
    }
    None
}

#[test]
fn a_silent_leader_is_replaced_once_its_lease_is_over_in_rank_order() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut d = Driver::new(3, &config(), t0);
    // member 3 took leader 1's vote at t0 and heard it again 10 ms later
    assert!(matches!(d.next(&follower(1, t0), t0), Act::Wait(_)));
    let heard = t0 + ms(10);
    let at = run_until(&mut d, &follower(1, heard), t0 + ms(10), t0 + ms(2000)).unwrap();
    // lease 300 ms, then rank 1 among the others (2 goes first): 25 + 50 ms
    assert!(at >= heard + ms(375), "{:?}", at - heard);
    assert!(at < heard + ms(375) + ms(50), "{:?}", at - heard);
}

#[test]
fn a_leader_never_heard_since_the_vote_is_left_to_the_random_timeout() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut d = Driver::new(2, &config(), t0);
    // a member back from a restart: the vote is committed, its leader has not spoken since
    let at = run_until(&mut d, &follower(1, t0), t0, t0 + ms(5000)).unwrap();
    let waited = at - t0;
    // lease + 150..300 ms (its loop looks at least every heartbeat)
    assert!(waited >= ms(450) && waited <= ms(650), "{waited:?}");
}

#[test]
fn a_leader_back_from_a_restart_waits_a_lease_before_it_campaigns() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    // its own vote of term 2, saved again uncommitted at the restart (step_down.rs)
    let back = Look {
        state: ServerState::Follower,
        vote: Vote::new(2, 2),
        touched: None,
        voters: vec![1, 2, 3],
    };
    let mut d = Driver::new(2, &config(), t0);
    let waited = run_until(&mut d, &back, t0, t0 + ms(5000)).unwrap() - t0;
    assert!(waited >= ms(450) && waited <= ms(650), "{waited:?}");
    // after its first candidacy failed it retries as any failed candidate does
    let at = t0 + waited;
    let retry = Look {
        state: ServerState::Candidate,
        vote: Vote::new(3, 2),
        touched: Some(at),
        ..back.clone()
    };
    let again = run_until(&mut d, &retry, at, at + ms(5000)).unwrap() - at;
    assert!(again >= ms(450) && again <= ms(650), "{again:?}");
    // a member with no vote yet waits a lease too (it may be the newcomer to an ensemble
    // that formed without it: a_member_at_its_first_start_waits_a_lease_before_it_campaigns)
    let fresh = Look {
        vote: Vote::new(0, 0),
        ..back
    };
    let mut d = Driver::new(2, &config(), t0);
    let first = run_until(&mut d, &fresh, t0, t0 + ms(5000)).unwrap() - t0;
    assert!(first >= ms(450) && first <= ms(650), "{first:?}");
}

#[test]
fn a_member_that_did_not_run_waits_a_lease_from_when_it_runs_again() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut d = Driver::new(2, &config(), t0);
    let heard = t0 + ms(10);
    assert!(matches!(d.next(&follower(1, t0), t0), Act::Wait(_)));
    let Act::Wait(w) = d.next(&follower(1, heard), heard) else {
        panic!("elected while hearing the leader")
    };
    // stopped for 1.5 s: every deadline has passed when it runs again, but it waits
    let woke = heard + w + ms(1500);
    assert!(matches!(d.next(&follower(1, heard), woke), Act::Wait(_)));
    // the leader's heartbeat, read from the socket after the wake-up, keeps it a follower
    let after = woke + ms(40);
    assert_eq!(
        run_until(&mut d, &follower(1, after), after, after + ms(300)),
        None
    );
    // a leader that really is gone: an election a lease (and its rank) after the wake-up
    let at = run_until(&mut d, &follower(1, after), after, woke + ms(2000)).unwrap();
    assert!(at >= woke + ms(300), "{:?}", at - woke);
}

#[test]
fn a_failed_candidacy_retries_after_a_lease_and_a_random_election_timeout() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut d = Driver::new(1, &config(), t0);
    let look = Look {
        state: ServerState::Candidate,
        vote: Vote::new(5, 1),
        touched: Some(t0),
        voters: vec![1, 2, 3],
    };
    let at = run_until(&mut d, &look, t0, t0 + ms(2000)).unwrap();
    let waited = at - t0;
    // a lease first, so that a member whose log is up to date campaigns before it
    assert!(waited >= ms(450) && waited <= ms(650), "{waited:?}");
}

#[test]
fn leaders_learners_and_lone_voters() {
    let t0 = Instant::now();
    let far = t0 + Duration::from_secs(10);
    let mut d = Driver::new(1, &config(), t0);
    let mut look = follower(1, t0);
    look.state = ServerState::Leader;
    assert_eq!(run_until(&mut d, &look, t0, far), None);
    // a learner (not among the voters) never campaigns
    let mut d = Driver::new(4, &config(), t0);
    assert_eq!(run_until(&mut d, &follower(1, t0), t0, far), None);
    // the only voter elects at once
    let mut d = Driver::new(1, &config(), t0);
    let mut look = follower(1, t0);
    look.voters = vec![1];
    assert_eq!(d.next(&look, t0), Act::Elect);
}

/// A third member started for the first time after the other two formed: it has no vote, and
/// must hear their leader before it would campaign (a lease and a timeout), not after a bare
/// timeout — its candidacy of the leader's term outranked that leader.
#[test]
fn a_member_at_its_first_start_waits_a_lease_before_it_campaigns() {
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let mut d = Driver::new(3, &config(), t0);
    let fresh = Look {
        state: ServerState::Follower,
        vote: Vote::default(),
        touched: None,
        voters: vec![1, 2, 3],
    };
    let waited = run_until(&mut d, &fresh, t0, t0 + ms(5000)).unwrap() - t0;
    assert!(
        waited >= ms(300),
        "campaigned after {waited:?}, within the lease"
    );
}
