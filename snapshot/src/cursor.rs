//! A bounds-checked reader over untrusted bytes: every read returns `None` past the end
//! instead of panicking, and nothing is copied.

pub(crate) struct Cursor<'a> {
    rest: &'a [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor {
            rest: buf,
            len: buf.len(),
        }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        // `rest` is always a suffix of the original slice, so this never wraps.
        self.len.wrapping_sub(self.rest.len())
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    pub fn array<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let (head, tail) = self.rest.split_first_chunk::<N>()?;
        self.rest = tail;
        Some(head)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.rest.split_at_checked(n)?;
        self.rest = tail;
        Some(head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.array().map(|a| u8::from_le_bytes(*a))
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.array().map(|a| u32::from_le_bytes(*a))
    }

    pub fn i32(&mut self) -> Option<i32> {
        self.array().map(|a| i32::from_le_bytes(*a))
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.array().map(|a| u64::from_le_bytes(*a))
    }

    pub fn i64(&mut self) -> Option<i64> {
        self.array().map(|a| i64::from_le_bytes(*a))
    }
}
