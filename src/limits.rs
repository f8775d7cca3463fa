//! The numbers that bound what the server does per turn, per buffer and per message, in one
//! place with the reason for each. Settings an operator can change live in config.rs; these are
//! the fixed ones.

/// Inbox messages the core handles before it hands the prepped writes to the log as one
/// batch: enough to fill a group commit, few enough that a turn stays short.
pub const CORE_TURN_MESSAGES: usize = 4096;

/// Capture steps (listed children looked at) per turn of the core loop while a snapshot is
/// taken: small enough that a turn stays well under a millisecond, so writes keep flowing.
pub const SNAPSHOT_STEP: usize = 2048;

/// The most a Raft snapshot capture reserves up front (from the last image's size): the
/// reservation is address space until written, but a bound keeps one odd image from asking
/// for more than a tree could hold.
pub const SNAPSHOT_RESERVE_MAX: usize = 4 << 30;

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

/// A connection's writer buffer starts this large (grows up to about `WRITE_BATCH`).
pub const WRITE_BUFFER: usize = 64 * 1024;

/// The largest first frame of a connection: a ConnectRequest is 45 bytes at most with the
/// 16-byte password every client sends (44 without readOnly), a four-letter word 4. Until
/// the handshake is done a connection can hold no more than this (plus its read buffer's
/// first 8 KiB); a longer announced length closes it.
pub const PRE_HANDSHAKE_FRAME: usize = 256;

/// A connection has this many tick times (at least a second each) to complete its handshake.
pub const HANDSHAKE_TICKS: u64 = 10;

/// A reader held back by the server-wide output budget rechecks it this often (its own
/// budget and its outstanding count wake it when its writer writes).
pub const READER_RECHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// Default `connectionOutputBudget`, in multiples of jute.maxbuffer: a few of the largest
/// replies can be in flight to one client, enough that pipelined big reads keep its socket
/// busy, while 1,000 pipelined 1 MB reads no longer take 1 GB.
pub const CONNECTION_BUDGET_MAXBUFFERS: usize = 4;

/// Default `globalOutputBudget`: 1 GiB, or a quarter of the machine's memory if that is
/// less — the server's own tree must still fit beside what its clients have not read.
pub const GLOBAL_BUDGET_DEFAULT: usize = 1 << 30;
