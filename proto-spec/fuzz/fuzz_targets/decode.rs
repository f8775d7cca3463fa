//! Frame + request decoding on arbitrary bytes, as the server does it: framing (with 4lw
//! detection), then ConnectRequest for the first frame and RequestHeader + request after.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use palisade_proto::*;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let mut codec = FrameCodec::server(DEFAULT_MAX_BUFFER);
    let mut buf = BytesMut::from(data);
    let mut first = true;
    while let Ok(Some(frame)) = codec.decode(&mut buf) {
        let Frame::Packet(body) = frame else { continue };
        if first {
            first = false;
            let _ = ConnectRequest::decode(body.clone(), DEFAULT_MAX_BUFFER);
        }
        let mut r = Reader::new(body, DEFAULT_MAX_BUFFER);
        if let Ok(h) = RequestHeader::read(&mut r) {
            if let Ok(req) = Request::decode(h.type_, r.rest().clone(), DEFAULT_MAX_BUFFER) {
                // Whatever decodes must re-encode to something that decodes to the same value
                // (not always the same bytes: a boolean byte 0xff reads as true, writes as 1).
                let again = Request::decode(h.type_, req.encode(h.xid).split_off(8).freeze(), DEFAULT_MAX_BUFFER);
                assert_eq!(again.as_ref().ok(), Some(&req));
            }
        }
    }
});
