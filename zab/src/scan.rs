//! Finds where a record ends in buffered bytes, without decoding or allocating: the quorum
//! link has no length prefix, so the only way to know a packet (or a snapshot item) has
//! fully arrived is to walk its lengths. Every length is checked against its limit as soon
//! as it is read, so a hostile length is refused before we wait for (or buffer) its bytes.

use crate::error::CodecError;

/// Why a scan stopped early.
pub(crate) enum Stop {
    /// The record goes on past the bytes buffered so far.
    Incomplete,
    Bad(CodecError),
}

impl From<CodecError> for Stop {
    fn from(e: CodecError) -> Self {
        Stop::Bad(e)
    }
}

pub(crate) type Step<T> = Result<T, Stop>;

pub(crate) struct Scan<'a> {
    b: &'a [u8],
    pub at: usize,
    /// Largest buffer or string (jute.maxbuffer + extrasize).
    max_buffer: usize,
    /// Largest `at` allowed (the whole packet, or the whole snapshot).
    max_total: u64,
    total_what: &'static str,
}

impl<'a> Scan<'a> {
    pub fn new(
        b: &'a [u8],
        at: usize,
        max_buffer: usize,
        max_total: u64,
        total_what: &'static str,
    ) -> Self {
        Scan {
            b,
            at,
            max_buffer,
            max_total,
            total_what,
        }
    }

    /// Claims `n` more bytes: over the total limit is an error, beyond the buffer incomplete.
    fn claim(&mut self, n: usize) -> Step<&'a [u8]> {
        let end = self.at.saturating_add(n);
        if end as u64 > self.max_total {
            return Err(Stop::Bad(CodecError::TooLarge {
                what: self.total_what,
                len: end as u64,
                max: self.max_total,
            }));
        }
        let s = self.b.get(self.at..end).ok_or(Stop::Incomplete)?;
        self.at = end;
        Ok(s)
    }

    /// A reader over the bytes walked from `from` to here (whole, so decoding them cannot
    /// run short; any length inside was already checked).
    pub fn reader(&self, from: usize) -> palisade_proto::Reader {
        let b = self.b.get(from..self.at).unwrap_or_default();
        palisade_proto::Reader::new(bytes::Bytes::copy_from_slice(b), self.max_buffer)
    }

    pub fn skip(&mut self, n: usize) -> Step<()> {
        self.claim(n).map(|_| ())
    }

    pub fn int(&mut self) -> Step<i32> {
        let s = self.claim(4)?;
        let a: [u8; 4] = s.try_into().map_err(|_| Stop::Incomplete)?;
        Ok(i32::from_be_bytes(a))
    }

    pub fn long(&mut self) -> Step<i64> {
        let s = self.claim(8)?;
        let a: [u8; 8] = s.try_into().map_err(|_| Stop::Incomplete)?;
        Ok(i64::from_be_bytes(a))
    }

    /// A buffer or ustring: `None` for null (-1), the bytes otherwise.
    pub fn buffer(&mut self, what: &'static str) -> Step<Option<&'a [u8]>> {
        let n = self.int()?;
        if n == -1 {
            return Ok(None);
        }
        let len = usize::try_from(n).map_err(|_| CodecError::NegativeLength { what, len: n })?;
        if len > self.max_buffer {
            return Err(Stop::Bad(CodecError::TooLarge {
                what,
                len: len as u64,
                max: self.max_buffer as u64,
            }));
        }
        self.claim(len).map(Some)
    }

    /// A count of items of at least `min_item` bytes each: `None` for null (-1). A count the
    /// total limit cannot hold is refused at once.
    pub fn count(&mut self, what: &'static str, min_item: u64) -> Step<Option<u64>> {
        let n = self.int()?;
        if n == -1 {
            return Ok(None);
        }
        let n = u64::try_from(n).map_err(|_| CodecError::NegativeLength { what, len: n })?;
        let room = self.max_total.saturating_sub(self.at as u64);
        if n.saturating_mul(min_item) > room {
            return Err(Stop::Bad(CodecError::TooLarge {
                what,
                len: n.saturating_mul(min_item),
                max: room,
            }));
        }
        Ok(Some(n))
    }
}
