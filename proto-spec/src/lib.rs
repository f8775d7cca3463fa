//! The ZooKeeper 3.8 wire protocol as Palisade speaks it.
//!
//! `spec/zookeeper.jute` lists every record and table; `build.rs` generates [`records`] from
//! it, so the spec and the codec cannot drift apart. On top of the records: [`Request`] and
//! [`Response`] (what follows each header, by opcode, including multi) and [`FrameCodec`]
//! (length-prefixed framing with four-letter-word detection).
//!
//! Decoding never panics: every length is checked against the remaining bytes and against
//! jute.maxbuffer, and each failure is a typed [`DecodeError`].
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub mod error;
pub mod frame;
pub mod jute;
pub mod request;
pub mod response;
pub mod txn;

/// Records and enums generated from `spec/zookeeper.jute`.
#[allow(clippy::all, unused_parens)]
pub mod records {
    use crate::error::DecodeError;
    use crate::jute::{write_buffer, write_vector, JStr, Reader, Record};
    use bytes::{BufMut, Bytes, BytesMut};
    include!(concat!(env!("OUT_DIR"), "/records.rs"));
}

pub use error::{DecodeError, FrameError};
pub use frame::{Frame, FrameCodec};
pub use jute::{JStr, Reader, Record, DEFAULT_MAX_BUFFER};
pub use records::*;
pub use request::{is_write_op, MultiOp, MultiRequest, Request};
pub use response::{MultiResponse, OpResult, Response};
pub use txn::{Txn, TxnBody};

#[cfg(test)]
mod strategies {
    use crate::records::*;
    use crate::JStr;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn arb_buffer() -> BoxedStrategy<Option<Bytes>> {
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from))
            .boxed()
    }
    fn arb_jstr() -> BoxedStrategy<JStr> {
        prop_oneof![1 => Just(JStr::null()), 8 => ".{0,24}".prop_map(JStr::from)].boxed()
    }

    include!(concat!(env!("OUT_DIR"), "/strategies.rs"));

    /// Encoding has the predicted length, decodes back to the same value, and re-encodes to
    /// the same bytes.
    fn check_roundtrip<T: crate::Record + PartialEq + std::fmt::Debug>(
        v: &T,
    ) -> Result<(), TestCaseError> {
        let enc = v.encode().freeze();
        prop_assert_eq!(enc.len(), v.wire_len());
        let back = T::decode(enc.clone(), usize::MAX)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", T::NAME)))?;
        prop_assert_eq!(&back, v);
        prop_assert_eq!(back.encode().freeze(), enc);
        Ok(())
    }
}
