use super::*;
use crate::core::outbox::Outbox;
use crate::core::testkit::TestWriter;
use crate::core::{GlobalBudget, OutBudget};
use crate::limits::WRITE_BATCH;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// A connected loopback pair: (the server's socket, non-blocking as tokio's are; the client).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (server, _) = l.accept().unwrap();
    server.set_nonblocking(true).unwrap();
    (server, client)
}

/// Connection 7 on `server`, with a direct writer, a budget of `limit` bytes and its writer
/// task's queue.
fn direct(server: TcpStream, limit: usize) -> (Arc<TestWriter>, Arc<OutBudget>, OutTx) {
    let budget = OutBudget::new(limit, GlobalBudget::new(1 << 30));
    let (out, writer) = TestWriter::conn(budget.clone());
    let out = out.with_direct(7, Box::new(Socket(server)));
    (writer, budget, out)
}

/// An outbox that stages a turn's output, as the core's does.
fn staging() -> Outbox {
    let mut outbox = Outbox::default();
    outbox.stage_turns();
    outbox
}

/// Connection 7 on a loopback pair, as `direct` makes it, and a staging outbox: (the client's
/// socket, the writer task's queue, the budget, the connection's output, the outbox).
fn connected(limit: usize) -> (TcpStream, Arc<TestWriter>, Arc<OutBudget>, OutTx, Outbox) {
    let (server, client) = pair();
    let (rx, budget, out) = direct(server, limit);
    (client, rx, budget, out, staging())
}

fn frame(n: u8, len: usize) -> Bytes {
    Bytes::from(vec![n; len])
}

fn read_exactly(c: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    c.read_exact(&mut v).unwrap();
    v
}

/// How: replies and an event staged in a turn reach the client in one write of the core's,
/// with the budget released and the reader's slots freed; nothing goes to the writer task.
#[test]
fn a_turns_output_is_written_by_the_core_when_the_writer_holds_nothing() {
    let (mut client, rx, budget, out, mut outbox) = connected(1 << 20);
    budget.read_one();
    budget.read_one();
    outbox.send(&out, Out::Reply(frame(1, 10)));
    outbox.send(&out, Out::Event(frame(2, 5)));
    outbox.send(&out, Out::Reply(frame(3, 10)));
    assert_eq!(budget.queued(), 25, "charged when staged");
    let lifted = outbox.write();
    assert!(lifted.is_empty());
    assert_eq!(budget.queued(), 0);
    assert_eq!(budget.queued_events(), 0);
    assert_eq!(budget.outstanding(), 0);
    assert_eq!(budget.written(), 25);
    assert!(rx.next().is_none(), "the writer task was not involved");
    let got = read_exactly(&mut client, 25);
    assert_eq!(got[..10], [1; 10]);
    assert_eq!(got[10..15], [2; 5]);
    assert_eq!(got[15..], [3; 10]);
}

/// How: while the writer task holds something, a turn's output goes to it, behind that;
/// once it has written everything, the core writes itself again.
#[test]
fn output_goes_behind_what_the_writer_holds() {
    let (mut client, rx, budget, out, mut outbox) = connected(1 << 20);
    out.hand(Out::Bytes(frame(9, 4))).unwrap();
    budget.read_one();
    outbox.send(&out, Out::Reply(frame(1, 10)));
    outbox.write();
    assert!(matches!(rx.next(), Some(Out::Bytes(b)) if b.len() == 4));
    // as it was sent: nothing is copied while the writer is busy
    assert!(matches!(rx.next(), Some(Out::Reply(b)) if b.len() == 10));
    assert_eq!(budget.handed(), 2);
    // the writer wrote both
    budget.wrote((10, 0));
    budget.answered(1);
    budget.done_with(2);
    outbox.send(&out, Out::Reply(frame(5, 3)));
    outbox.write();
    assert!(rx.next().is_none());
    assert_eq!(read_exactly(&mut client, 3), [5; 3]);
}

/// How: a client that does not read: its socket's buffers are full, so the core's write
/// takes nothing (or stops short); the rest goes to the writer task as one batch with the
/// whole weight and every reply.
#[test]
fn what_the_socket_does_not_take_goes_to_the_writer() {
    let (server, _client) = pair();
    let fill = server.try_clone().unwrap();
    while (&fill).write(&[0; 64 << 10]).is_ok() {}
    let (rx, budget, out) = direct(server, 1 << 30);
    let mut outbox = staging();
    let big = 512 << 10;
    outbox.send(&out, Out::Reply(frame(1, big)));
    outbox.send(&out, Out::Reply(frame(2, 10)));
    outbox.write();
    let written = budget.written() as usize;
    assert!(written < big, "the socket took all {written} bytes");
    match rx.next() {
        Some(Out::Batch {
            bytes,
            replies,
            weight,
        }) => {
            assert_eq!(bytes.len(), big + 10 - written);
            assert_eq!((replies, weight), (2, (big + 10, 0)));
        }
        other => panic!("expected the rest, got {other:?}"),
    }
    assert_eq!(
        budget.queued(),
        big + 10,
        "still charged until the writer writes it"
    );
}

/// How: a large reply comes in parts of a write batch each (`Core::send_reply`); they are not
/// copied into the staging buffer: what was staged before them goes to the writer first, as
/// one batch, and they follow as they are, in order.
#[test]
fn a_large_replys_parts_go_to_the_writer_as_they_are_behind_what_was_staged() {
    let (_client, rx, budget, out, mut outbox) = connected(1 << 30);
    outbox.send(&out, Out::Reply(frame(1, 10)));
    outbox.send(&out, Out::Bytes(frame(2, WRITE_BATCH)));
    outbox.send(&out, Out::Reply(frame(3, 100)));
    outbox.write();
    assert_eq!(budget.written(), 0, "the core wrote nothing itself");
    assert!(
        matches!(rx.next(), Some(Out::Batch { bytes, replies: 1, weight: (10, 0) }) if bytes.len() == 10)
    );
    assert!(matches!(rx.next(), Some(Out::Bytes(b)) if b.len() == WRITE_BATCH));
    assert!(matches!(rx.next(), Some(Out::Reply(b)) if b.len() == 100));
    assert!(rx.next().is_none());
    assert_eq!(budget.handed(), 3);
    assert_eq!(budget.queued(), WRITE_BATCH + 110);
}

/// How: a Close staged with a reply goes to the writer task (which writes, then closes);
/// what is sent outside the engine's outbox is not staged.
#[test]
fn a_close_and_output_outside_a_turn_go_to_the_writer() {
    let (_client, rx, _, out, mut outbox) = connected(1 << 20);
    outbox.send(&out, Out::Reply(frame(1, 10)));
    outbox.send(&out, Out::Close);
    outbox.write();
    assert!(matches!(rx.next(), Some(Out::Batch { replies: 1, .. })));
    assert!(matches!(rx.next(), Some(Out::Close)));
    // another thread, not the core's loop: straight to the writer
    let out2 = out.clone();
    std::thread::spawn(move || out2.send(Out::Reply(frame(4, 2))).unwrap())
        .join()
        .unwrap();
    assert!(matches!(rx.next(), Some(Out::Reply(b)) if b.len() == 2));
}

/// How: a connection over its budget, whose reads the core held, is brought back under by the
/// core's own write: the flush says so, as the writer's Drained would.
#[test]
fn a_direct_write_lifts_a_hold() {
    let (server, mut client) = pair();
    let (_writer, budget, out) = direct(server, 16);
    let mut outbox = staging();
    outbox.send(&out, Out::Reply(frame(1, 20)));
    assert!(budget.over());
    assert!(budget.hold());
    let lifted = outbox.write();
    assert_eq!(lifted.conns, [7]);
    assert_eq!(read_exactly(&mut client, 20), [1; 20]);
}
