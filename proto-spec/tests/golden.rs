//! Golden vectors: frames exchanged between real clients (kazoo, zkCli.sh, Curator, the C
//! client, and a raw client for the 44-byte handshake) and Apache ZooKeeper 3.8, captured by
//! testdata/capture/. Every frame must decode and re-encode byte-identically.

use bytes::Bytes;
use palisade_proto::*;
use std::collections::HashMap;
use std::path::Path;

const MAX: usize = DEFAULT_MAX_BUFFER;

fn hex(s: &str) -> Bytes {
    Bytes::from(hex::decode(s.trim()).unwrap_or_else(|e| panic!("bad hex: {e}")))
}

#[derive(Default)]
struct Tally {
    requests: HashMap<i32, usize>,
    replies: usize,
    notifications: usize,
    frames: usize,
}

fn check_file(path: &Path, tally: &mut Tally) {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (mut seen_req, mut seen_resp) = (false, false);
    // The opcode of each request xid, in order (xids can repeat across pings/auth).
    let mut pending: HashMap<i32, Vec<i32>> = HashMap::new();
    for (lineno, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", lineno + 1);
        let (dir, payload) = match line.split_once(' ') {
            Some((d @ (">" | "<"), h)) => (d, hex(h)),
            _ => continue,
        };
        tally.frames += 1;
        if dir == ">" {
            if !seen_req {
                seen_req = true;
                assert!(
                    payload.len() == 44 || payload.len() == 45,
                    "{at}: ConnectRequest is {} bytes",
                    payload.len()
                );
                let req = ConnectRequest::decode(payload.clone(), MAX)
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(req.read_only.is_some(), payload.len() == 45, "{at}");
                assert_eq!(
                    req.encode().freeze(),
                    payload,
                    "{at}: ConnectRequest re-encoding differs"
                );
                continue;
            }
            let mut r = Reader::new(payload.clone(), MAX);
            let h = RequestHeader::read(&mut r).unwrap_or_else(|e| panic!("{at}: {e}"));
            pending.entry(h.xid).or_default().push(h.type_);
            match Request::decode(h.type_, r.rest().clone(), MAX) {
                Ok(req) => {
                    *tally.requests.entry(h.type_).or_default() += 1;
                    assert_eq!(req.op_code().code(), h.type_, "{at}");
                    assert_eq!(
                        req.encode(h.xid).freeze(),
                        payload,
                        "{at}: request re-encoding differs: {req:?}"
                    );
                    // The whole message at once, as a follower's forward is decoded.
                    let (whole_h, whole) = Request::decode_message(payload.clone(), MAX)
                        .unwrap_or_else(|e| panic!("{at}: decode_message: {e}"));
                    assert_eq!(
                        (whole_h.xid, whole_h.type_, &whole),
                        (h.xid, h.type_, &req),
                        "{at}"
                    );
                    let mut longer = payload.to_vec();
                    longer.push(0);
                    let (_, trailing) = Request::decode_message(Bytes::from(longer), MAX)
                        .unwrap_or_else(|e| panic!("{at}: a trailing byte: {e}"));
                    assert_eq!(
                        trailing, req,
                        "{at}: a trailing byte is ignored, as ZooKeeper does"
                    );
                    assert!(
                        Request::decode_message(payload.slice(..payload.len() - 1), MAX).is_err()
                            || payload.len() <= 8,
                        "{at}: a message cut short must not decode"
                    );
                }
                // The raw client sends one unknown opcode on purpose; ZooKeeper answers -6.
                Err(DecodeError::UnknownOpCode(op)) if name.contains("raw-badrequest") => {
                    assert_eq!(op, h.type_)
                }
                Err(e) => panic!("{at}: opcode {}: {e}", h.type_),
            }
        } else {
            if !seen_resp {
                seen_resp = true;
                assert!(
                    payload.len() == 36 || payload.len() == 37,
                    "{at}: ConnectResponse is {} bytes",
                    payload.len()
                );
                let resp = ConnectResponse::decode(payload.clone(), MAX)
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(
                    resp.passwd.as_ref().map(|p| p.len()),
                    Some(16),
                    "{at}: password must be 16 bytes"
                );
                assert_eq!(
                    resp.encode().freeze(),
                    payload,
                    "{at}: ConnectResponse re-encoding differs"
                );
                continue;
            }
            let mut r = Reader::new(payload.clone(), MAX);
            let h = ReplyHeader::read(&mut r).unwrap_or_else(|e| panic!("{at}: {e}"));
            let body = r.rest().clone();
            let mut out = h.encode();
            if h.xid == -1 {
                tally.notifications += 1;
                let ev = WatcherEvent::decode(body, MAX).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(
                    EventType::from_i32(ev.type_).is_some()
                        && ev.state == KeeperState::SyncConnected.code(),
                    "{at}: {ev:?}"
                );
                ev.write(&mut out);
            } else {
                tally.replies += 1;
                let op = pending
                    .get_mut(&h.xid)
                    .filter(|v| !v.is_empty())
                    .map(|v| v.remove(0))
                    .unwrap_or_else(|| panic!("{at}: reply xid {} matches no request", h.xid));
                let op = OpCode::from_i32(op).unwrap_or(OpCode::Error);
                let resp = Response::decode(op, body, MAX)
                    .unwrap_or_else(|e| panic!("{at}: {op:?} reply: {e}"));
                if h.err != 0 && op != OpCode::Multi && op != OpCode::MultiRead {
                    assert_eq!(resp, Response::Empty, "{at}: error replies carry no body");
                }
                resp.write(&mut out);
            }
            assert_eq!(out.freeze(), payload, "{at}: reply re-encoding differs");
        }
    }
    assert!(seen_req && seen_resp, "{name}: no handshake");
}

#[test]
fn real_client_frames_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "frames"))
        .collect();
    files.sort();
    let mut tally = Tally::default();
    for f in &files {
        check_file(f, &mut tally);
    }
    // Every client is represented, and the captures cover the opcodes the issue lists.
    for client in ["kazoo-", "zkcli-", "curator-", "cmt-", "raw-"] {
        assert!(
            files
                .iter()
                .any(|f| f.display().to_string().contains(client)),
            "no {client} capture"
        );
    }
    for op in [
        1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 15, 16, 17, 18, 19, 21, 22, 100, 101, 103, 104, 105,
        106, 107, -11,
    ] {
        assert!(
            tally.requests.contains_key(&op),
            "no capture of opcode {op}"
        );
    }
    assert!(
        tally.notifications > 0 && tally.replies > 100,
        "{} replies, {} notifications",
        tally.replies,
        tally.notifications
    );
    println!(
        "{} files, {} frames, {} replies, {} notifications",
        files.len(),
        tally.frames,
        tally.replies,
        tally.notifications
    );
}
