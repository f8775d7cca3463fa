//! The numbers that bound what the server does per turn, per buffer and per message, in one
//! place with the reason for each. Settings an operator can change live in config.rs; these are
//! the fixed ones.

use std::time::Duration;

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

/// The largest staging buffer a connection keeps between the core's turns (core/outbox.rs):
/// most turns write a few small replies, and one big reply should not pin its buffer.
pub const STAGED_KEEP_BYTES: usize = 64 << 10;

/// The capacity a reply frame starts with when its size is not known in advance: a reply
/// header (16) plus a Stat (68) plus a short path, so that most replies need one allocation.
pub const REPLY_GUESS: usize = 108;

/// The size of a Stat on the wire (11 fields: 6 longs, 5 ints).
pub const STAT_BYTES: usize = 68;

/// The log accepts any txn the core can build; a closeSession of a session with very many
/// ephemerals can exceed jute.maxbuffer, so the bound is far above it.
pub const MAX_TXN_BYTES: u32 = 1 << 30;

/// Snapshot chunks queued to the snapshot writer at most (src/durability/snapshotter.rs):
/// past this the capture pauses a turn, so a slow disk slows the capture rather than filling
/// memory.
pub const SNAPSHOT_QUEUE: usize = 8;

/// A digest record goes to the log after every this many txns (src/durability/
/// digest_record.rs): often enough that replay proves the tree every few hundred txns, rarely
/// enough that computing and logging it costs nothing measurable.
pub const DIGEST_EVERY: i64 = 256;

/// Recent (zxid, digest) pairs replay keeps to check digest records against
/// (src/durability/recovery.rs): a digest record is logged when its txn is applied, behind at
/// most the txns then in flight.
pub const RECOVERY_DIGESTS_KEPT: usize = 1 << 16;

/// How often a progress line is logged while a long log is replayed (src/metrics/progress.rs):
/// often enough that an operator sees it move, rarely enough to stay a few lines a minute.
pub const RECOVERY_PROGRESS_EVERY: Duration = Duration::from_secs(2);

const _: () = assert!(DIGEST_EVERY > 0 && DIGEST_EVERY as usize <= RECOVERY_DIGESTS_KEPT);

/// A connection's writer buffer starts this large (grows up to about `WRITE_BATCH`).
pub const WRITE_BUFFER: usize = 64 * 1024;

/// The largest first frame of a connection: a ConnectRequest is 45 bytes at most with the
/// 16-byte password every client sends (44 without readOnly), a four-letter word 4. Until
/// the handshake is done a connection can hold no more than this (plus its read buffer's
/// first 8 KiB); a longer announced length closes it.
pub const PRE_HANDSHAKE_FRAME: usize = 256;

/// A connection has this many tick times (at least a second each) to complete its handshake.
pub const HANDSHAKE_TICKS: u64 = 10;
pub const HANDSHAKE_TICK_MIN_MS: u64 = 1000;

/// The core's tick (session expiry, the reaper, liveness) comes every half tickTime, within
/// these (ms): often enough that a session expires close to its deadline with a long
/// tickTime, rarely enough that a very short one does not keep the core busy.
pub const CORE_TICK_MIN_MS: u64 = 50;
pub const CORE_TICK_MAX_MS: u64 = 1000;

/// The client connections' channel to the core holds globalOutstandingLimit requests, and
/// never fewer than this.
pub const CORE_INBOX_MIN: usize = 64;

/// A reader held back by the server-wide output budget rechecks it this often (its own
/// budget and its outstanding count wake it when its writer writes).
pub const READER_RECHECK: Duration = Duration::from_millis(20);

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
pub const PEER_FRAME_DEADLINE: Duration = Duration::from_secs(20);

/// A link has this long from its accept to its last handshake frame (TLS, hello, SASL, the
/// proof by connecting back).
pub const PEER_HANDSHAKE_DEADLINE: Duration = Duration::from_secs(3);

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

/// What a frame's announced length may reserve in its buffer before its bytes arrive (the
/// rest grows as they do, src/ensemble/link/frame.rs). From nothing, the buffer grew 32, 64,
/// 128… bytes, one read call each: five calls for a one-entry append.
pub const PEER_FRAME_RESERVE: usize = 64 << 10;

/// The highest Raft term a member takes from a peer or its own files: a term must fit in a
/// zxid's epoch, the high 32 bits of an i64 (zxid = term << 32 | counter), and openraft adds
/// one to a term it adopts.
pub const PEER_MAX_TERM: u64 = (i32::MAX as u64) - 1;

/// How far beyond its own term a member takes a peer's: a member cut off for days, asking
/// for an election every lease, stays well within it.
pub const PEER_TERM_STEP: u64 = 1 << 24;

/// The most a snapshot a member receives may hold: far above any tree a member serves (a
/// capture reserves at most `SNAPSHOT_RESERVE_MAX`, a restore takes `RESTORE_MAX_BYTES`), so
/// only a hostile or broken peer meets it.
pub const PEER_SNAPSHOT_MAX: u64 = 64 << 30;

/// A peer link that could not be made is tried again after this (src/ensemble/raft/
/// network.rs), eight times; then every `PEER_RETRY_LATER` or this, whichever is longer: a
/// member back from a restart hears from the leader well within the lease, and a dead one
/// costs few connects.
pub const PEER_RETRY: Duration = Duration::from_millis(500);
pub const PEER_RETRY_LATER: Duration = Duration::from_millis(200);

const _: () = assert!(PEER_APPEND_BYTES + PEER_BATCH_BYTES < PEER_FRAME as usize);
const _: () = assert!(PEER_FRAME_RESERVE < PEER_FRAME as usize);
const _: () = assert!(PEER_TERM_STEP < PEER_MAX_TERM);
const _: () = assert!(SNAPSHOT_RESERVE_MAX as u64 <= PEER_SNAPSHOT_MAX);
const _: () = assert!(RESTORE_MAX_BYTES as u64 <= PEER_SNAPSHOT_MAX);
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

/// A member's own digests (one every `DIGEST_EVERY` txns) kept to compare with the leader's
/// (core/role/member/digests.rs). The leader proposes its digest as it applies the txn, so the
/// entry reaches a member behind that txn by at most the log in flight between them: 64 cover
/// 16,384 txns of it. A leader digest with no own one left to compare is let pass.
pub const DIGESTS_KEPT: usize = 64;
const _: () = assert!(DIGESTS_KEPT > 0);

/// How often a follower sends again the abort of an online restore whose forward failed
/// (core/role/member/ensemble_restore/origin.rs): often enough that the operator learns the
/// outcome soon after a new leader is known, rarely enough not to flood a link that is down.
pub const RESTORE_ABORT_RETRY: Duration = Duration::from_millis(500);

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

// An online restore into an ensemble (core/role/member/ensemble_restore/): the backup goes through the
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

// The Raft side of a member (src/ensemble/raft/).

/// The Raft log's segments are at least this large (preAllocSize may say less): a segment per
/// few entries would make the log a directory of tiny files.
pub const RAFT_SEGMENT_MIN: u64 = 1 << 20;

/// The durable tail of the Raft log kept in memory (src/ensemble/raft/log_thread.rs): enough
/// for replication and the state machine to read what was just written without touching the
/// segments, bounded in bytes for large values. Four entries under test, so the tests reach
/// the segments.
pub const RAFT_TAIL_ENTRIES: usize = if cfg!(test) { 4 } else { 16 * 1024 };
pub const RAFT_TAIL_BYTES: usize = 32 << 20;

/// The Raft log's directory is looked at after a sync at most this often, to notice it was
/// removed under a running member (an unlinked directory takes writes and syncs without error).
pub const RAFT_DIR_CHECK: Duration = Duration::from_millis(100);

/// Memberships the state machine keeps to name the one a snapshot stands at (its capture may
/// end before the newest membership entry reached the applier).
pub const RAFT_MEMBERSHIPS_KEPT: usize = 4;

/// The election lease's ceiling in ms (src/ensemble/raft/election.rs). A ZooKeeper follower
/// notices a *killed* leader at once (its connection closes) and elects in a few hundred ms
/// whatever tickTime says; Raft notices only by silence, so the silence it waits for is kept
/// as short: a Palisade leader has no garbage-collection pauses to ride out, and its
/// heartbeats are sent by tasks that the core's work does not hold up.
pub const LEASE_CEILING_MS: u64 = 300;

/// The shortest lease: six heartbeats of 10 ms or more.
pub const LEASE_FLOOR_MS: u64 = 60;

/// The role task looks at the view again every lease / 4 when nothing changed, but no more
/// often than this (src/ensemble/raft/roles.rs).
pub const ROLE_VIEW_RECHECK_MIN_MS: u64 = 10;

// The shortest lease's quarter is above the floor: the floor only guards a misconfiguration.
const _: () = assert!(LEASE_FLOOR_MS / 4 >= ROLE_VIEW_RECHECK_MIN_MS);

/// The role task builds the core's view again at most once a millisecond when only Raft's
/// metrics changed (they change at every commit; a view costs sets, maps and strings: a few %
/// of a busy ensemble's CPU).
pub const ROLE_VIEW_EVERY: Duration = Duration::from_millis(1);

/// The leader looks for learners to drop this often (or every catch-up time, if shorter).
pub const LEARNER_CHECK: Duration = Duration::from_secs(1);

/// A joined learner has initLimit ticks to catch up, and never less than this (ms), so that a
/// short tickTime does not remove a joining server before it could catch up.
pub const LEARNER_CATCH_UP_MIN_MS: u64 = 10_000;

/// A member in read-only mode (`readonlymode.enabled`) calls itself partitioned after tickTime
/// without a quorum, and never sooner than this (ms): ZooKeeper waits max(2 s, tickTime).
pub const READ_ONLY_AFTER_MIN_MS: u64 = 2000;

/// A follower's forward call waits syncLimit ticks for the leader's answer, and never less
/// than this (ms), so that a short tickTime does not time out forwards a leader is committing.
pub const FORWARD_TTL_MIN_MS: u64 = 1000;

/// A join call waits at least this for its answer (src/ensemble/raft/join.rs), and a server
/// that cannot join yet says so at most this often.
pub const JOIN_CALL_MIN: Duration = Duration::from_millis(200);
pub const JOIN_WARN_EVERY: Duration = Duration::from_secs(30);

const _: () = assert!(PEER_APPEND_BYTES <= RAFT_TAIL_BYTES);
const _: () = assert!(LEASE_FLOOR_MS < LEASE_CEILING_MS);

// Listeners (the client port in src/server.rs, the peer port, the AdminServer's).

/// A listener whose accept fails (out of descriptors and the like) waits this long before the
/// next, rather than spin on the error; as axum's own listener does.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// The client port logs a failing accept at most this often (with a count of those not logged).
pub const ACCEPT_ERROR_LOG_EVERY: Duration = Duration::from_secs(10);

/// How often the client port's and the peer port's TLS store files are checked for changes
/// (SIGHUP reloads at once).
pub const TLS_RELOAD_CHECK: Duration = Duration::from_secs(1);

/// How often the AdminServer's HTTPS store files are checked for changes.
pub const ADMIN_TLS_RELOAD_CHECK: Duration = Duration::from_secs(60);

/// A TLS store file seen changing is reloaded once it has stayed the same this long: a
/// writer (an operator's copy, a certificate renewal) gets time to finish the file.
pub const TLS_RELOAD_SETTLE: Duration = Duration::from_millis(200);

// A settle shorter than a check: a file changing all the time is still looked at every check.
const _: () = assert!(TLS_RELOAD_SETTLE.as_millis() < TLS_RELOAD_CHECK.as_millis());

/// Connections each HTTP listener (AdminServer, /metrics) serves at once (each a task, a socket
/// and hyper's buffers, a few KiB while its request is small). Was 64: a hundred slow-drip
/// connections took them all, and `ruok` and `/metrics` went unanswered for seconds (issue 37).
pub const ADMIN_CONNECTIONS: usize = 1024;

/// How long a request may take to send its headers, from its connection's accept or the
/// previous response on it (hyper's header_read_timeout). A health check or a scrape sends
/// its few hundred bytes at once; keep-alive connections idle past it are closed, and their
/// clients reopen them.
pub const ADMIN_HEADER_DEADLINE: Duration = Duration::from_secs(5);

/// An HTTP connection that sends nothing for this long is closed (a scraper or a health check
/// sends its request at once; keep-alive connections are reopened by the client).
pub const ADMIN_IDLE: Duration = Duration::from_secs(30);

/// How long an HTTP request waits for the core's answer before it reports the server as not
/// serving: far above a core turn, short enough for a health check's own timeout.
pub const ADMIN_CORE_ANSWER: Duration = Duration::from_secs(5);

/// `palisade backup` waits this long for the whole stream: a snapshot of millions of nodes
/// takes minutes on a slow link, and a stalled server must not hold the command forever.
pub const BACKUP_DEADLINE: Duration = Duration::from_secs(600);

// Migration (src/migrate/).

/// Node visits `import-zookeeper` spends on checking ZooKeeper's per-txn digests (about a
/// second of work); the snapshot's digest and the last txn's are checked regardless.
pub const IMPORT_DIGEST_CHECK_NODE_VISITS: u64 = 50_000_000;

/// Snapshots ZooKeeper tries at start, newest first (FileTxnSnapLog): the import tries as many.
pub const IMPORT_SNAPSHOTS_TRIED: usize = 100;

/// The import writes Palisade's snapshot as the server's capture does: this many nodes a step,
/// a block to the writer once this many bytes are captured.
pub const IMPORT_CAPTURE_STEP: usize = 4096;
pub const IMPORT_BLOCK: usize = 4 << 20;

/// A snapshot's ACL indexes are dense from 0 (src/state/tree/load.rs); a larger one is damage,
/// not a reason to allocate.
pub const SNAPSHOT_MAX_ACL_INDEX: u32 = 1 << 24;

// Metrics (src/metrics/).

/// Observations a summary's percentiles are taken over: the newest ones, so a summary's memory
/// is bounded however long the server runs (ZooKeeper samples a reservoir of similar size).
pub const SUMMARY_WINDOW: usize = 1024;

/// Namespaces the per-namespace metrics track, and the longest key kept: past them a read or
/// write counts under the overflow key, so a client making up paths cannot grow the sets.
pub const METRICS_NAMESPACES: usize = 1000;
pub const METRICS_NAMESPACE_KEY_BYTES: usize = 128;

/// Observations each namespace key's 0.5 quantile is taken over (the sets' only percentile).
pub const METRICS_NAMESPACE_WINDOW: usize = 64;

// `palisade observe-zookeeper` (src/migrate/observe/): an observer of a ZooKeeper ensemble.

/// A connection attempt to one participant's quorum port gives up after this: a listening
/// leader on a LAN answers in milliseconds, and the hunt tries the next one.
pub const OBSERVER_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Between two rounds over every participant: an election takes ZooKeeper a few hundred
/// milliseconds at least, so a tighter loop would only burn connection attempts.
pub const OBSERVER_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// A leader that refuses the observer's TLS handshake or quorum SASL (a certificate it does
/// not trust, a wrong QuorumLearner password) is tried again after a pause that doubles from
/// `OBSERVER_RETRY_PAUSE` up to this: a refusal is a configuration error an operator fixes,
/// so the observer keeps trying, at a rate that neither fills its log nor loads the leader
/// (whose acceptor thread runs each learner's exchange in turn).
pub const OBSERVER_REFUSED_MAX_PAUSE: std::time::Duration = std::time::Duration::from_secs(10);

/// The largest quorum SASL token the observer takes from a leader: a DIGEST-MD5 challenge is
/// about 110 bytes and an rspauth 40 (zab/testdata/sasl-*.stream); RFC 2831 caps a challenge
/// at 2048. ZooKeeper's learner allows jute.maxbuffer (1 MiB), which a hostile leader could
/// make it buffer for nothing. The JDK's own bound (DigestMD5Base.MAX_RESPONSE_LENGTH), as
/// auth::digest_md5::MAX_TOKEN is (migrate/observe/secure.rs asserts the two equal).
pub const OBSERVER_AUTH_MAX_TOKEN: usize = 4096;

/// QuorumAuthPackets taken from a leader in one exchange: DIGEST-MD5's challenge and the
/// SUCCESS (or ERROR) that ends it. A leader that goes on is refused, never looped with.
pub const OBSERVER_AUTH_MAX_PACKETS: usize = 2;
const _: () = assert!(OBSERVER_AUTH_MAX_TOKEN >= 2048 && OBSERVER_AUTH_MAX_PACKETS >= 2);

/// The largest snapshot the observer takes from a leader after SNAP (its
/// `--max-snapshot-bytes` default). ZooKeeper's learner has no bound; a hostile leader could
/// otherwise stream nodes forever. The tree built from it is the state itself, so the bound
/// is on the tree's size: 4 GiB of snapshot is about 10-20M typical znodes.
pub const OBSERVER_MAX_SNAPSHOT_BYTES: u64 = 4 << 30;

/// The snapshot after SNAP is handed from the decoder to the tree in batches of items of
/// about this size: with one read and one item (at most jute.maxbuffer and its extrasize),
/// what the link holds of the snapshot's bytes at once, whatever the snapshot's size.
pub const OBSERVER_SNAPSHOT_BATCH: usize = 1 << 20;

/// Bytes read from the leader per read call (the decoder bounds what it buffers).
pub const OBSERVER_READ_CHUNK: usize = 64 << 10;

/// Up to this many znodes the mirror checks ZooKeeper's digest after every txn (a check walks
/// the whole tree, so the cost per txn grows with the tree); past it, one txn in
/// `OBSERVER_DIGEST_EVERY_LARGE`.
pub const OBSERVER_DIGEST_ALL_UP_TO_NODES: usize = 20_000;

/// The observer writes a snapshot of its tree after this many logged txns (ZooKeeper's own
/// snapCount default): a restart replays at most this many, and the log before the older of
/// the kept snapshots is purged, so the data dir stays near two trees and this many txns.
pub const OBSERVER_SNAPSHOT_EVERY: u64 = 100_000;

/// Snapshots the observer keeps: the newest, and one before it in case the newest is damaged
/// (the log back to the older one is kept with it).
pub const OBSERVER_SNAPSHOTS_KEPT: usize = 2;
const _: () = assert!(OBSERVER_SNAPSHOT_EVERY > 0 && OBSERVER_SNAPSHOTS_KEPT >= 1);
const _: () = assert!(
    OBSERVER_SNAPSHOT_BATCH > 0 && (OBSERVER_SNAPSHOT_BATCH as u64) < OBSERVER_MAX_SNAPSHOT_BYTES
);
pub const OBSERVER_DIGEST_EVERY_LARGE: u64 = 1_000;
