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

// The peer port (src/ensemble/link/): what anyone who can reach it may hold before and after
// a link has proven which member it is.

/// The largest frame of a link's handshake (a hello, a SASL token of at most 4 KiB, an
/// answer): before a link is authenticated it can make the member hold no more than this.
pub const PEER_HANDSHAKE_FRAME: u32 = 8 << 10;

/// The largest frame of an authenticated link: an append of at most `PEER_APPEND_BYTES` of
/// entries, or a snapshot chunk (openraft's default chunk is 3 MiB), with room to spare.
pub const PEER_FRAME: u32 = 64 << 20;

/// The payload bytes one append-entries call carries at most (one entry more than that is
/// sent alone): openraft 0.9 gives the call one heartbeat interval to be answered, and the
/// follower writes and syncs it all before it answers.
pub const PEER_APPEND_BYTES: usize = 2 << 20;

/// The most txn bytes one Raft entry (a batch of a core turn's txns) carries, and the most a
/// follower's forward call gathers: each goes whole in one frame.
pub const PEER_BATCH_BYTES: usize = 1 << 20;

/// Bytes of frames being read on all peer links at once (each frame reserves its announced
/// length before its body is read): 24 links each announcing a 48 MiB frame and sending part
/// of it once took a member to 1.3 GB.
pub const PEER_FRAMES_IN_FLIGHT: usize = 256 << 20;

/// A frame's body must arrive within this once its length has: a link that announces a frame
/// and trickles it holds its reservation no longer.
pub const PEER_FRAME_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// A link has this long from its accept to its last handshake frame (TLS, hello, SASL, the
/// proof by connecting back).
pub const PEER_HANDSHAKE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3);

/// Links still in their handshake, at once and from one source address: 20,000 idle
/// connections once used up the leader's file descriptors, and its log could not roll a
/// segment. Past these a connection is closed as soon as it is accepted.
pub const PEER_PENDING: usize = 32;
pub const PEER_PENDING_PER_SOURCE: usize = 8;

/// Authenticated links at once, and per member: a member opens one replication link to each
/// other member, one for votes, one for forwards and touches, and a few more while old ones
/// time out. With the pending ones this bounds the descriptors the peer port can ever take.
pub const PEER_LINKS: usize = 128;
pub const PEER_LINKS_PER_MEMBER: usize = 16;

const _: () = assert!(PEER_APPEND_BYTES + PEER_BATCH_BYTES < PEER_FRAME as usize);
const _: () = assert!((PEER_FRAME as usize) < PEER_FRAMES_IN_FLIGHT);
const _: () = assert!(PEER_PENDING_PER_SOURCE <= PEER_PENDING);

/// Learners (observers and joined servers) a leader takes: 200 joins once made 195 learners,
/// each a replication stream, and every member stopped serving.
pub const PEER_LEARNERS: usize = 16;

/// A learner that no configuration names (it joined, and no reconfig made it a voter or an
/// observer) and that stays further behind than this many entries for `initLimit` ticks is
/// removed again: one that never catches up holds a replication stream for nothing.
pub const LEARNER_LAG_ENTRIES: u64 = 1024;

/// The body of an AdminServer POST command other than `restore` (shed_connections' JSON):
/// read only after the caller is authenticated, and never more than this.
pub const ADMIN_POST_BODY: usize = 64 << 10;

/// The largest snapshot the AdminServer's `restore` takes: it is held in memory with the
/// state decoded from it (an authenticated admin's request, one per rate-limit interval).
/// 2 GiB is a snapshot of some 10M znodes.
pub const RESTORE_MAX_BYTES: usize = 2 << 30;

// The channels from the core to the consensus glue (src/ensemble/raft/wiring.rs `Channels`):
// the core thread never waits on them (`try_send`); the proposer's stays unbounded (why: at
// `Channels::propose`).

/// The core's snapshot asks waiting for the Raft side: one. Raft builds one snapshot at a time
/// and ignores an ask while it builds, so a second waiting ask would ask for nothing more: a
/// full channel means one is already on its way.
pub const RAFT_SNAPSHOT_ASKS: usize = 1;

/// A follower core's messages waiting for the forwarder (a turn's forwards, a tick's touch).
/// The forwarder takes every queued forward (up to `PEER_BATCH_BYTES`) at each call, so a
/// working link leaves a few; this many means calls to a leader that does not answer, each
/// waiting out its ttl while a touch queued every tick. Then the core keeps its forwards and
/// sends them at its next turn (a tick at the latest), and skips the touch (the next tick's
/// says the same, newer): it never waits, and no write is dropped.
pub const FORWARD_QUEUE: usize = 1024;

/// The highest last processed zxid a restored snapshot may carry: the server's zxids go on
/// past it (a no-op, then an epoch's writes), so a stream claiming more is refused.
pub const RESTORE_MAX_ZXID: i64 = i64::MAX - (1 << 32);

// An online restore into an ensemble (core/ensemble_restore.rs): the backup goes through the
// Raft log as chunk entries, and every member holds what it has applied of them in memory
// until the commit entry.

/// The largest backup stream an ensemble restores online. Each member holds the stream in
/// memory (its spool) and then the state decoded from it beside the live one, and the log
/// keeps the chunks on every member until the next Raft snapshot: 256 MiB is a stream of
/// about a million small znodes, and three copies of it fit beside a tree that size. Larger
/// backups restore offline (`palisade restore --config`, docs/ADMIN.md).
pub const RESTORE_ENSEMBLE_MAX_BYTES: usize = 256 << 20;

/// The bytes of one restore chunk entry: half a `PEER_BATCH_BYTES`, so a follower's forward
/// call and an append-entries call each carry a chunk or two, far below `PEER_FRAME`.
pub const RESTORE_CHUNK_BYTES: usize = PEER_BATCH_BYTES / 2;

/// The leader gives up a restore (an abort entry) when its next chunk has not come for
/// this long: the follower that sent the rest crashed, or lost its link.
pub const RESTORE_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// The member an operator posted a restore to answers within this, whatever happened: a
/// restore whose outcome it has not applied by then may still be aborted by the leader's
/// `RESTORE_IDLE` (the answer says so).
pub const RESTORE_ANSWER: std::time::Duration = std::time::Duration::from_secs(120);

const _: () = assert!(RESTORE_CHUNK_BYTES < PEER_APPEND_BYTES);
const _: () = assert!(RESTORE_ENSEMBLE_MAX_BYTES <= RESTORE_MAX_BYTES);
