//! Length-prefixed framing as a tokio-util codec, with four-letter-word detection on the
//! first 4 bytes of a server-side connection.

use crate::error::FrameError;
use crate::records::FourLetterWord;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// One message off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A four-letter word in place of the first frame's length.
    FourLetter(FourLetterWord),
    /// A complete payload (without its length prefix).
    Packet(Bytes),
}

/// Reads and writes `int length + payload` frames; lengths outside `0..=max_frame` are errors.
#[derive(Debug, Clone)]
pub struct FrameCodec {
    max_frame: usize,
    /// Still at the first frame of a server-side connection (where a 4lw may appear).
    first: bool,
}

impl FrameCodec {
    /// Server side: the first 4 bytes may be a four-letter word.
    pub fn server(max_frame: usize) -> Self {
        FrameCodec {
            max_frame,
            first: true,
        }
    }
    /// The largest frame accepted from now on (e.g. small until the handshake is done).
    pub fn set_max_frame(&mut self, max_frame: usize) {
        self.max_frame = max_frame;
    }
    /// Client side: every frame is length-prefixed.
    pub fn client(max_frame: usize) -> Self {
        FrameCodec {
            max_frame,
            first: false,
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let Some(prefix) = src.get(..4) else {
            return Ok(None);
        };
        let mut len_bytes = [0u8; 4];
        len_bytes.copy_from_slice(prefix);
        let n = i32::from_be_bytes(len_bytes);
        if self.first {
            self.first = false;
            if let Some(w) = FourLetterWord::from_i32(n) {
                src.advance(4);
                return Ok(Some(Frame::FourLetter(w)));
            }
        }
        let len = match usize::try_from(n) {
            Ok(len) if len <= self.max_frame => len,
            _ => return Err(FrameError::BadLength(i64::from(n))),
        };
        // Wait for the rest without reserving the announced length: the buffer grows as
        // bytes arrive, so a peer that announces a large frame and sends little holds little.
        if src.len().saturating_sub(4) < len {
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(Frame::Packet(src.split_to(len).freeze())))
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), FrameError> {
        let n = i32::try_from(item.len()).map_err(|_| FrameError::BadLength(item.len() as i64))?;
        dst.reserve(4 + item.len());
        dst.put_i32(n);
        dst.put_slice(&item);
        Ok(())
    }
}
