//! The spin-or-park decision, fed with wait lengths (no clocks: every gap is given), and the
//! polling loop's contract.

use super::*;

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// Feeds `n` waits of `gap` µs and returns whether the last decision was to spin.
fn feed(a: &mut Arrivals, gap: u64, n: usize) -> bool {
    for _ in 0..n {
        a.observe(us(gap));
    }
    !a.spin_budget().is_zero()
}

#[test]
fn a_fresh_thread_parks_until_messages_come_often() {
    let mut a = Arrivals::new(us(300));
    assert_eq!(a.spin_budget(), Duration::ZERO);
    // Queued messages (waits of 0) and quick round trips (30 µs: one session's get loop).
    assert!(
        !feed(&mut a, 0, 1),
        "one quick message must not start the polling"
    );
    assert!(feed(&mut a, 0, 19));
    assert_eq!(a.spin_budget(), us(300));
    let mut b = Arrivals::new(us(300));
    assert!(feed(&mut b, 30, 20));
    // About nine quick waits in a row from cold.
    let mut c = Arrivals::new(us(300));
    let n = (1..100).find(|_| feed(&mut c, 10, 1));
    assert!(n.is_some_and(|n| (5..=12).contains(&n)), "{n:?}");
}

#[test]
fn waits_shorter_than_the_window_spin_and_longer_ones_park() {
    // A write's fsync (~120 µs) and a 10,000/s arrival rate (100 µs) are within the window;
    // 1,000/s (1 ms) and 100/s (10 ms) are not; a wait of exactly the window is a miss.
    for (gap, spins) in [
        (0, true),
        (100, true),
        (120, true),
        (299, true),
        (300, false),
        (1_000, false),
        (10_000, false),
    ] {
        let mut a = Arrivals::new(us(300));
        assert_eq!(feed(&mut a, gap, 40), spins, "gap {gap} µs");
    }
}

#[test]
fn a_few_long_waits_among_quick_ones_do_not_stop_the_polling() {
    // A get loop on a shared machine: one wait in ten is preempted for milliseconds.
    let mut a = Arrivals::new(us(300));
    assert!(feed(&mut a, 30, 40));
    for _ in 0..20 {
        assert!(feed(&mut a, 30, 9));
        assert!(
            feed(&mut a, 5_000, 1),
            "one long wait in ten stopped the polling"
        );
    }
    // Two in a row are still tolerated; a run of them (the load has gone) is not.
    assert!(feed(&mut a, 30, 20));
    assert!(feed(&mut a, 5_000, 2));
    assert!(!feed(&mut a, 5_000, 3));
}

#[test]
fn the_decision_follows_a_change_of_pace() {
    let mut a = Arrivals::new(us(300));
    assert!(feed(&mut a, 20, 50));
    // Load drops to 100/s: parking starts after a few long waits.
    assert!(!feed(&mut a, 10_000, 6));
    // An idle hour counts as one miss; a burst brings the polling back within a dozen.
    a.observe(Duration::from_secs(3600));
    let quick = (1..100).find(|_| feed(&mut a, 10, 1));
    assert!(quick.is_some_and(|n| n <= 12), "{quick:?}");
}

#[test]
fn alternating_fsync_waits_and_long_gaps_park() {
    // A light write load: a short wait for the fsync, then a long wait for the next request.
    let mut a = Arrivals::new(us(300));
    for _ in 0..50 {
        a.observe(us(120));
        a.observe(us(5_000));
    }
    assert_eq!(a.spin_budget(), Duration::ZERO);
    assert!((0.4..0.6).contains(&a.hit_rate()), "{}", a.hit_rate());
}

#[test]
fn a_zero_window_always_parks_and_the_rate_stays_within_0_and_1() {
    let mut a = Arrivals::new(Duration::ZERO);
    assert!(!feed(&mut a, 0, 10));
    let mut b = Arrivals::new(Duration::MAX);
    for _ in 0..1000 {
        b.observe(Duration::ZERO);
        assert!(b.hit_rate() <= 1.0);
    }
    assert!(b.hit_rate() > 0.99);
    b.observe(Duration::MAX);
    assert!(b.hit_rate() > 0.8);
}

#[test]
fn wait_takes_a_queued_message_without_parking_and_parks_when_cold() {
    let mut s = Spinner::new(us(300));
    // Cold: nothing queued, so it parks at once (the park closure supplies the message).
    let mut polls = 0;
    let got = s.wait(
        &mut polls,
        |polls| {
            *polls += 1;
            None::<u32>
        },
        |_| 7,
    );
    assert_eq!((got, polls), (7, 1));
    // Queued: taken on the first try, the park closure never runs.
    let got = s.wait(
        &mut (),
        |_| Some(3),
        |_| panic!("parked with a message queued"),
    );
    assert_eq!(got, 3);
}

#[test]
fn wait_polls_when_warm() {
    let mut s = Spinner::new(Duration::from_secs(5));
    for _ in 0..40 {
        s.arrivals.observe(Duration::ZERO);
    }
    let mut n = 0;
    let got = s.wait(
        &mut n,
        |n| {
            *n += 1;
            (*n == 3).then_some("msg")
        },
        |_| panic!("parked while warm"),
    );
    assert_eq!((got, n), ("msg", 3));
}

#[test]
fn poll_for_returns_what_arrives_within_the_budget() {
    let mut n = 0;
    let got = poll_for(Duration::from_secs(5), || {
        n += 1;
        (n == 3).then_some("msg")
    });
    assert_eq!(got, Some("msg"));
    assert_eq!(n, 3);
}

#[test]
fn poll_for_gives_up_after_the_budget_and_a_zero_budget_never_polls() {
    let mut polls = 0;
    let got: Option<()> = poll_for(Duration::from_millis(2), || {
        polls += 1;
        None
    });
    assert_eq!(got, None);
    assert!(polls >= 1);
    let mut polled = false;
    let got: Option<()> = poll_for(Duration::ZERO, || {
        polled = true;
        Some(())
    });
    assert_eq!((got, polled), (None, false));
}

#[test]
fn the_lenient_decision_polls_at_half_hits() {
    // Half the waits within the window: the core's rule parks, the log thread's polls.
    let (mut core, mut log) = (Arrivals::new(us(300)), Arrivals::lenient(us(300)));
    for a in [&mut core, &mut log] {
        for _ in 0..50 {
            a.observe(us(400));
            a.observe(us(250));
        }
        assert!((0.5..0.6).contains(&a.hit_rate()), "{}", a.hit_rate());
    }
    assert_eq!(core.spin_budget(), Duration::ZERO);
    assert_eq!(log.spin_budget(), us(300));
    // Only long waits (a light write load, one batch per request): both park.
    assert!(!feed(&mut log, 1_000, 10));
}
