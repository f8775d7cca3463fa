//! The numbers that bound what the server does per turn, per buffer and per message, in one
//! place with the reason for each. Settings an operator can change live in config.rs; these are
//! the fixed ones.

/// Inbox messages the core handles before it hands the prepped writes to the log as one
/// batch: enough to fill a group commit, few enough that a turn stays short.
pub const CORE_TURN_MESSAGES: usize = 4096;

/// Capture steps (listed children looked at) per turn of the core loop while a snapshot is
/// taken: small enough that a turn stays well under a millisecond, so writes keep flowing.
pub const SNAPSHOT_STEP: usize = 2048;

/// Captured bytes per snapshot block handed to the snapshot thread.
pub const SNAPSHOT_BLOCK: usize = 1 << 20;

/// A connection's writer stops gathering queued frames into one write past this many bytes.
pub const WRITE_BATCH: usize = 1 << 20;

/// The capacity a reply frame starts with when its size is not known in advance: a reply
/// header (16) plus a Stat (68) plus a short path, so that most replies need one allocation.
pub const REPLY_GUESS: usize = 108;

/// The size of a Stat on the wire (11 fields: 6 longs, 5 ints).
pub const STAT_BYTES: usize = 68;

/// The log accepts any txn the core can build; a closeSession of a session with very many
/// ephemerals can exceed jute.maxbuffer, so the bound is far above it.
pub const MAX_TXN_BYTES: u32 = 1 << 30;

/// Snapshot chunks queued to the snapshot writer at most: the core blocks past this, so a
/// slow disk slows the capture rather than filling memory.
pub const SNAPSHOT_QUEUE: usize = 8;
