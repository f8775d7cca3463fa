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
    assert!(feed(&mut a, 0, 20));
    assert_eq!(a.spin_budget(), us(300));
    let mut b = Arrivals::new(us(300));
    assert!(feed(&mut b, 30, 20));
}

#[test]
fn waits_shorter_than_the_window_spin_and_longer_ones_park() {
    let window = 300;
    // A write's fsync (~120 µs) and a 10,000/s arrival rate (100 µs) are within the window;
    // 1,000/s (1 ms) and 100/s (10 ms) are not.
    for (gap, spins) in [
        (0, true),
        (120, true),
        (100, true),
        (1_000, false),
        (10_000, false),
    ] {
        let mut a = Arrivals::new(us(window));
        assert_eq!(feed(&mut a, gap, 40), spins, "gap {gap} µs");
    }
}

#[test]
fn the_average_follows_a_change_of_pace_within_a_few_dozen_messages() {
    let mut a = Arrivals::new(us(300));
    assert!(feed(&mut a, 20, 50));
    // Load drops to 100/s: parking starts after a handful of long waits, not one.
    a.observe(us(10_000));
    assert!(
        !a.spin_budget().is_zero(),
        "one long gap alone must not stop the spinning"
    );
    assert!(!feed(&mut a, 10_000, 10));
    // After an idle hour (clamped to a few windows), a burst brings the spin back soon.
    a.observe(Duration::from_secs(3600));
    let mut quick = 0;
    while a.spin_budget().is_zero() {
        a.observe(us(10));
        quick += 1;
        assert!(quick < 40, "still parking after {quick} quick messages");
    }
    assert!(
        quick >= 2,
        "one quick message must not restart the spinning"
    );
}

#[test]
fn alternating_fsync_waits_and_long_gaps_follow_the_mean() {
    // A light write load: a short wait for the fsync, then a long wait for the next request.
    let mut a = Arrivals::new(us(300));
    for _ in 0..50 {
        a.observe(us(120));
        a.observe(us(5_000));
    }
    assert_eq!(a.spin_budget(), Duration::ZERO);
    assert!(a.expected_gap_us() > 300);
}

#[test]
fn a_zero_window_always_parks_and_huge_values_saturate() {
    let mut a = Arrivals::new(Duration::ZERO);
    assert!(!feed(&mut a, 0, 10));
    let mut b = Arrivals::new(Duration::from_secs(u64::MAX));
    b.observe(Duration::MAX);
    b.observe(Duration::ZERO);
    assert!(b.expected_gap_us() > 0);
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
