//! Fixed-rate load (`run get --rate N`): `sessions` sessions send requests on a schedule that
//! totals `rate` per second, whether or not earlier replies have come back (open loop, as a
//! real light load arrives), so the server sees the arrival rate asked for rather than one set
//! by its own latency.
//!
//! Plain threads and blocking sockets, one writer and one reader per session: tokio's timer
//! has a 1 ms resolution, which at 10,000 requests/s would send bursts of ten instead of one
//! request every 100 µs. `thread::sleep` wakes within tens of µs; the schedule is absolute
//! (start + i × period), so a late wake-up shifts one request, not the rate.

use crate::kv::Rng;
use crate::session::err;
use crate::stats::Latencies;
use bytes::{Bytes, BytesMut};
use palisade_proto::*;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Unanswered requests a session may have before it stops sending (a stalled server would
/// otherwise queue the whole schedule).
const OUTSTANDING_MAX: usize = 4096;

fn write_frame(s: &mut TcpStream, body: &[u8]) -> io::Result<()> {
    let len = i32::try_from(body.len()).map_err(err)?;
    let mut msg = BytesMut::with_capacity(body.len() + 4);
    msg.extend_from_slice(&len.to_be_bytes());
    msg.extend_from_slice(body);
    s.write_all(&msg)
}

fn read_frame(s: &mut TcpStream) -> io::Result<Bytes> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = i32::from_be_bytes(len);
    if !(0..=64 << 20).contains(&n) {
        return Err(err(format!("bad frame length {n}")));
    }
    let mut buf = vec![0u8; n as usize];
    s.read_exact(&mut buf)?;
    Ok(Bytes::from(buf))
}

/// A session on `server` (one host, or the next member of a list, synced first as
/// `Session::connect` does); returns the last xid it used.
fn connect(server: &str) -> io::Result<(TcpStream, i32)> {
    let (addr, sync) = crate::session::next_host(server);
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out: 30_000,
        session_id: 0,
        passwd: Some(Bytes::from_static(&[0; 16])),
        read_only: Some(false),
    };
    write_frame(&mut s, &req.encode())?;
    let resp = ConnectResponse::decode(read_frame(&mut s)?, usize::MAX).map_err(err)?;
    if resp.time_out <= 0 {
        return Err(err("session refused"));
    }
    if !sync {
        return Ok((s, 0));
    }
    write_frame(&mut s, &crate::session::sync_root().encode(1))?;
    loop {
        let frame = read_frame(&mut s)?;
        let field = |i: usize| frame.get(i..i + 4).map(|b| [b[0], b[1], b[2], b[3]]);
        match (
            field(0).map(i32::from_be_bytes),
            field(12).map(i32::from_be_bytes),
        ) {
            (Some(1), Some(0)) => return Ok((s, 1)),
            (Some(1), e) => return Err(err(format!("sync on {addr}: error {e:?}"))),
            _ => {} // a notification
        }
    }
}

/// Reads the reply of every request the writer reports, in order (notifications are
/// skipped), counting them in `done`.
fn read_replies(
    mut s: TcpStream,
    sent: mpsc::Receiver<(i32, Instant)>,
    done: &AtomicUsize,
) -> io::Result<Latencies> {
    let mut lat = Latencies::default();
    for (xid, at) in sent {
        loop {
            let frame = read_frame(&mut s)?;
            let field = |i: usize| {
                frame
                    .get(i..i + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(i32::from_be_bytes)
                    .ok_or_else(|| err("short reply"))
            };
            let (x, e) = (field(0)?, field(12)?);
            if x < 0 {
                continue; // a notification
            }
            if x != xid {
                return Err(err(format!("reply xid {x} for request {xid}")));
            }
            lat.record(at.elapsed());
            lat.errors += u64::from(e != 0);
            done.fetch_add(1, Ordering::Relaxed);
            break;
        }
    }
    Ok(lat)
}

/// One session's share of the schedule: every `period` from `first` until `stop`.
fn session(
    addr: &str,
    first: Instant,
    period: Duration,
    stop: Instant,
    seed: u64,
    make: &(impl Fn(&mut Rng) -> Request + Sync),
) -> io::Result<Latencies> {
    let (mut w, last_xid) = connect(addr)?;
    let r = w.try_clone()?;
    let (tx, rx) = mpsc::channel();
    let done = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        let reader = sc.spawn(|| read_replies(r, rx, &done));
        let mut rng = Rng::with_seed(seed);
        let (mut xid, mut sent, mut at) = (last_xid, 0usize, first);
        let wrote = (|| {
            while at < stop {
                if let Some(wait) = at.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                at += period;
                // Skipped, not queued, while the server is this far behind.
                if sent.saturating_sub(done.load(Ordering::Relaxed)) >= OUTSTANDING_MAX {
                    continue;
                }
                xid = xid.wrapping_add(1).max(1);
                tx.send((xid, Instant::now())).map_err(err)?;
                write_frame(&mut w, &make(&mut rng).encode(xid))?;
                sent += 1;
            }
            Ok::<(), io::Error>(())
        })();
        drop(tx);
        let lat = reader.join().map_err(|_| err("reader panicked"))?;
        wrote?;
        lat
    })
}

/// Runs `sessions` sessions sending `rate` requests per second in total for `duration`;
/// their phases are spread evenly over one period. Returns every reply's latency and the
/// seconds the schedule took.
pub fn run(
    addr: &str,
    sessions: u64,
    rate: f64,
    duration: Duration,
    make: impl Fn(&mut Rng) -> Request + Sync,
) -> io::Result<(Latencies, f64)> {
    let sessions = sessions.max(1);
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(err("--rate must be a positive number"));
    }
    let period = Duration::from_secs_f64(sessions as f64 / rate);
    let start = Instant::now() + Duration::from_millis(200); // after every session connected
    let stop = start + duration;
    let all = std::thread::scope(|sc| {
        let make = &make;
        let handles: Vec<_> = (0..sessions)
            .map(|k| {
                let first = start + period.mul_f64(k as f64 / sessions as f64);
                sc.spawn(move || session(addr, first, period, stop, k + 1, make))
            })
            .collect();
        let mut all = Latencies::default();
        for h in handles {
            all.merge(h.join().map_err(|_| err("session panicked"))??);
        }
        Ok::<Latencies, io::Error>(all)
    })?;
    Ok((all, duration.as_secs_f64()))
}
