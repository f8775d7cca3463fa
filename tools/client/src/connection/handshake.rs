//! Opening a connection: TCP connect, then ConnectRequest → ConnectResponse, for a new session
//! (id 0) or to resume one (id + password + the last zxid seen).

use super::MAX_FRAME;
use bytes::{Bytes, BytesMut};
use palisade_proto::{ConnectRequest, ConnectResponse, Frame, FrameCodec, Record};
use std::io;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_util::codec::{Decoder, Encoder};

/// A connection the server accepted the session on.
pub(crate) struct Established {
    pub read: OwnedReadHalf,
    pub write: OwnedWriteHalf,
    /// Bytes read past the ConnectResponse (the server may send right after it).
    pub rbuf: BytesMut,
    pub codec: FrameCodec,
    pub session_id: i64,
    pub password: Bytes,
    pub timeout_ms: i32,
    /// When the ConnectRequest was sent: the server refreshed the session no earlier.
    pub sent_at: Instant,
}

#[derive(Debug)]
pub(crate) enum HandshakeError {
    /// The server answered "session expired or wrong password" (timeOut 0).
    Expired,
    Io(io::Error),
    Protocol(String),
}

impl From<io::Error> for HandshakeError {
    fn from(e: io::Error) -> Self {
        HandshakeError::Io(e)
    }
}

/// A 16-byte zero password: what a client sends when asking for a new session.
pub(crate) fn no_password() -> Bytes {
    Bytes::from_static(&[0; 16])
}

pub(crate) async fn handshake(
    addr: &str,
    session_id: i64,
    password: &Bytes,
    last_zxid: i64,
    timeout_ms: i32,
) -> Result<Established, HandshakeError> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut read, mut write) = stream.into_split();
    let mut codec = FrameCodec::client(MAX_FRAME);
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: last_zxid,
        time_out: timeout_ms,
        session_id,
        passwd: Some(password.clone()),
        read_only: Some(false),
    };
    let mut out = BytesMut::new();
    codec
        .encode(req.encode().freeze(), &mut out)
        .map_err(|e| HandshakeError::Protocol(e.to_string()))?;
    let sent_at = Instant::now();
    write.write_all(&out).await?;

    let mut rbuf = BytesMut::with_capacity(4096);
    let body = loop {
        match codec.decode(&mut rbuf) {
            Ok(Some(Frame::Packet(b))) => break b,
            Ok(Some(Frame::FourLetter(_))) => {
                return Err(HandshakeError::Protocol(
                    "four-letter word from server".into(),
                ))
            }
            Ok(None) => {}
            Err(e) => return Err(HandshakeError::Protocol(e.to_string())),
        }
        if read.read_buf(&mut rbuf).await? == 0 {
            // A server closes without answering when our lastZxidSeen is ahead of it, or when
            // it is shutting down: either way, try again later.
            return Err(HandshakeError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
    };
    let resp = ConnectResponse::decode(body, MAX_FRAME)
        .map_err(|e| HandshakeError::Protocol(format!("ConnectResponse: {e}")))?;
    if resp.time_out <= 0 {
        return Err(HandshakeError::Expired);
    }
    Ok(Established {
        read,
        write,
        rbuf,
        codec,
        session_id: resp.session_id,
        password: resp.passwd.unwrap_or_default(),
        timeout_ms: resp.time_out,
        sent_at,
    })
}
