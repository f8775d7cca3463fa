//! jute binary primitives: a bounds-checked reader over a frame and the matching writers.
//!
//! Every length read from the wire is checked against the bytes that remain and against
//! `max_len` (jute.maxbuffer) before anything is allocated or sliced.

use crate::error::DecodeError;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::fmt;

/// ZooKeeper's default jute.maxbuffer: the largest frame, buffer or string accepted.
pub const DEFAULT_MAX_BUFFER: usize = 0xF_FFFF;

/// A jute `ustring`: raw bytes as sent (zero-copy slice of the frame), or null.
///
/// Kept as bytes so a frame re-encodes byte-identically; [`JStr::as_str`] checks UTF-8.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct JStr(Option<Bytes>);

impl JStr {
    pub const fn null() -> Self {
        JStr(None)
    }
    pub fn is_null(&self) -> bool {
        self.0.is_none()
    }
    /// The text, or `None` when null or not valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref().and_then(|b| std::str::from_utf8(b).ok())
    }
    /// The text as ZooKeeper's Java server decodes it (invalid UTF-8 becomes U+FFFD), or `None`
    /// when null.
    pub fn to_lossy(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.0.as_deref().map(java_lossy)
    }
    /// The raw bytes (empty for null).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }
    pub fn from_bytes(b: Bytes) -> Self {
        JStr(Some(b))
    }
    pub fn wire_len(&self) -> usize {
        4 + self.0.as_ref().map_or(0, |b| b.len())
    }
    pub fn write(&self, w: &mut BytesMut) {
        write_buffer(w, self.0.as_deref());
    }
}

#[cfg(test)]
#[test]
fn lossy_decoding_matches_java() {
    let j = |b: &'static [u8]| {
        JStr::from_bytes(Bytes::from_static(b))
            .to_lossy()
            .map(|c| c.into_owned())
    };
    assert_eq!(j(b"/a"), Some("/a".into()));
    assert_eq!(j(b"/a\xff"), Some("/a\u{fffd}".into()));
    assert_eq!(j(b"/a\xed\xa0\x80/b"), Some("/a\u{fffd}/b".into()));
    assert_eq!(j(b"/\xe2\x82"), Some("/\u{fffd}".into()));
    assert_eq!(JStr::null().to_lossy(), None);
}

impl From<&str> for JStr {
    fn from(s: &str) -> Self {
        JStr(Some(Bytes::copy_from_slice(s.as_bytes())))
    }
}

impl From<String> for JStr {
    fn from(s: String) -> Self {
        JStr(Some(Bytes::from(s)))
    }
}

impl fmt::Debug for JStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("null"),
            Some(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
        }
    }
}

/// UTF-8 decoding with Java's replacement rules: like `String::from_utf8_lossy`, except that a
/// UTF-8-encoded surrogate (`ED A0..BF 80..BF`, which Java's writer produces for characters
/// outside the BMP) is one U+FFFD, as Java's decoder makes it, not three.
fn java_lossy(mut b: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return s.into();
    }
    let mut out = String::with_capacity(b.len() + 2);
    loop {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(s);
                return out.into();
            }
            Err(e) => {
                let (good, bad) = b.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push(char::REPLACEMENT_CHARACTER);
                let skip = match bad {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    _ => e.error_len().unwrap_or(bad.len()),
                };
                b = bad.get(skip..).unwrap_or_default();
            }
        }
    }
}

/// A jute record: generated from the spec for every record it lists.
pub trait Record: Sized {
    /// The record's name in the spec.
    const NAME: &'static str;
    /// Reads the record's fields in wire order.
    fn read(r: &mut Reader) -> Result<Self, DecodeError>;
    /// Appends the record's encoding.
    fn write(&self, w: &mut BytesMut);
    /// The exact number of bytes [`Record::write`] appends.
    fn wire_len(&self) -> usize;

    /// Decodes a whole buffer: the record must use every byte.
    fn decode(buf: Bytes, max_len: usize) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf, max_len);
        let v = Self::read(&mut r)?;
        r.finish()?;
        Ok(v)
    }
    /// Encodes into a new buffer.
    fn encode(&self) -> BytesMut {
        let mut w = BytesMut::with_capacity(self.wire_len());
        self.write(&mut w);
        w
    }
}

/// Reads jute values from a frame. Buffers and strings are zero-copy slices of it.
pub struct Reader {
    buf: Bytes,
    max_len: usize,
}

impl Reader {
    pub fn new(buf: Bytes, max_len: usize) -> Self {
        Reader { buf, max_len }
    }
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// The bytes not read yet.
    pub fn rest(&self) -> &Bytes {
        &self.buf
    }
    /// Succeeds only when every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }
    fn need(&self, n: usize) -> Result<(), DecodeError> {
        if self.buf.len() < n {
            Err(DecodeError::Truncated {
                need: n,
                have: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }
    pub fn int(&mut self) -> Result<i32, DecodeError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }
    pub fn long(&mut self) -> Result<i64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }
    pub fn byte(&mut self) -> Result<u8, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }
    pub fn boolean(&mut self) -> Result<bool, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_u8() != 0)
    }
    /// A length prefix: -1 is null, other negatives and values over max_len are errors.
    fn length(&mut self) -> Result<Option<usize>, DecodeError> {
        let n = self.int()?;
        if n == -1 {
            return Ok(None);
        }
        let len = usize::try_from(n).map_err(|_| DecodeError::NegativeLength(n))?;
        if len > self.max_len {
            return Err(DecodeError::TooLong {
                len,
                max: self.max_len,
            });
        }
        Ok(Some(len))
    }
    pub fn buffer(&mut self) -> Result<Option<Bytes>, DecodeError> {
        match self.length()? {
            None => Ok(None),
            Some(len) => {
                self.need(len)?;
                Ok(Some(self.buf.split_to(len)))
            }
        }
    }
    /// The next `n` bytes, unframed (for records whose length was read separately).
    pub fn take(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        self.need(n)?;
        Ok(self.buf.split_to(n))
    }
    pub fn ustring(&mut self) -> Result<JStr, DecodeError> {
        Ok(JStr(self.buffer()?))
    }
    /// A vector: the count is bounded by max_len and every element must consume at least one
    /// byte, so a hostile count cannot allocate more than the frame holds.
    pub fn vector<T>(
        &mut self,
        mut elem: impl FnMut(&mut Reader) -> Result<T, DecodeError>,
    ) -> Result<Option<Vec<T>>, DecodeError> {
        let Some(count) = self.length()? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(count.min(self.buf.len()));
        for _ in 0..count {
            let before = self.buf.len();
            out.push(elem(self)?);
            if self.buf.len() == before {
                return Err(DecodeError::EmptyElement);
            }
        }
        Ok(Some(out))
    }
}

pub fn write_buffer(w: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => w.put_i32(-1),
        Some(b) => {
            // Lengths we write come from values we decoded or built under max_len.
            w.put_i32(i32::try_from(b.len()).unwrap_or(i32::MAX));
            w.put_slice(b);
        }
    }
}

pub fn write_vector<T>(w: &mut BytesMut, v: Option<&[T]>, mut elem: impl FnMut(&mut BytesMut, &T)) {
    match v {
        None => w.put_i32(-1),
        Some(v) => {
            w.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
            for e in v {
                elem(w, e);
            }
        }
    }
}
