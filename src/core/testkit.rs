//! What the engine's tests share: the core's settings, a member's links with rooms the test
//! sets, and the work the engine pushed to its outbox, sorted by where it goes. The tests
//! step the engine by hand and read its outputs here: no thread, channel or sleep.

use super::work::{Room, Work};
use super::CoreConfig;
use crate::core::member::MemberLinks;
use crate::durability::log::LogRecord;
use crate::membership::dynamic::DynConfig;
use crate::seam::{LeadershipAsk, Proposed, ToLeader};
use palisade_proto::DEFAULT_MAX_BUFFER;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The core's settings in tests.
pub(crate) fn cfg() -> CoreConfig {
    CoreConfig {
        tick_ms: 2000,
        min_session_timeout: 4000,
        max_session_timeout: 40000,
        max_buffer: DEFAULT_MAX_BUFFER,
        max_reply: usize::MAX,
        ttl_enabled: true,
        four_letter_words: vec!["*".into()],
        super_digest: None,
        secret: [1; 16],
        client_port: 2181,
        data_dir: "data".into(),
        data_log_dir: "data".into(),
        max_client_cnxns: 0,
        container_check_ms: 0,
        spin_wait: std::time::Duration::ZERO,
        zookeeper_sessions: Default::default(),
        restore_reader: crate::migrate::import::from_stream,
        auth: Default::default(),
        reconfig_enabled: false,
        standalone_enabled: true,
    }
}

/// A queue's room as the test sets it (its consumer never goes).
#[derive(Clone)]
pub(crate) struct TestRoom(Arc<AtomicUsize>);

impl TestRoom {
    pub(crate) fn new(free: usize) -> Self {
        TestRoom(Arc::new(AtomicUsize::new(free)))
    }

    /// The consumer took items (or the test fills the queue): `free` slots now.
    pub(crate) fn set(&self, free: usize) {
        self.0.store(free, Ordering::SeqCst);
    }
}

impl Room for TestRoom {
    fn free(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
    fn closed(&self) -> bool {
        false
    }
}

/// A member's links with the real queues' bounds, as the runtime's channels would show them
/// empty at every turn's start (the test takes the work each turn).
pub(crate) fn links(
    myid: u64,
    snap_count: u64,
    members: Vec<crate::membership::members::Member>,
) -> MemberLinks {
    MemberLinks {
        myid,
        conf: String::new(),
        info: Default::default(),
        to_leader: Box::new(TestRoom::new(crate::limits::FORWARD_QUEUE)),
        snapshot: Box::new(TestRoom::new(crate::limits::RAFT_SNAPSHOT_ASKS)),
        snap_count,
        read_only: None,
        members,
        leadership: Box::new(TestRoom::new(usize::MAX)),
        alone: false,
    }
}

/// The work an engine pushed, sorted by where the runtime would route it.
#[derive(Default)]
pub(crate) struct Taken {
    pub(crate) log: Vec<LogRecord>,
    pub(crate) proposals: Vec<Vec<Proposed>>,
    pub(crate) to_leader: Vec<ToLeader>,
    pub(crate) snapshot_asks: usize,
    pub(crate) desired: Vec<Arc<DynConfig>>,
    pub(crate) leadership: Vec<LeadershipAsk>,
}

impl Taken {
    /// Adds `work` (in the order it was pushed).
    pub(crate) fn add(&mut self, work: Vec<Work>) {
        for w in work {
            match w {
                Work::Log(b) => self.log.extend(b.records),
                Work::Propose(p) => self.proposals.push(p),
                Work::ToLeader(t) => self.to_leader.push(t),
                Work::AskSnapshot => self.snapshot_asks += 1,
                Work::Desired(c) => self.desired.push(c),
                Work::Leadership(a) => self.leadership.push(a),
            }
        }
    }
}

impl super::Core {
    /// The end of a turn, as the runtime ends it: the turn's log batch and forwards pushed;
    /// what the engine pushed since the last take, sorted.
    pub(crate) fn take_turn(&mut self) -> Taken {
        self.flush_turn();
        self.take_work()
    }

    /// What the engine pushed since the last take, sorted (no turn ended).
    pub(crate) fn take_work(&mut self) -> Taken {
        let mut t = Taken::default();
        t.add(self.outbox.take_work());
        t
    }
}

impl super::Core {
    /// The answer the engine pushed for token `id`, if it did (other answers stay).
    pub(crate) fn answer_to<T: 'static>(&mut self, id: u64) -> Option<T> {
        let answers = &mut self.outbox.answers;
        let i = answers.iter().position(|a| a.id == id)?;
        let a = answers.remove(i);
        Some(*a.value.downcast::<T>().expect("the token's type"))
    }
}

/// A connection's tasks in tests: what the engine handed its writer, in order, and whether
/// it cancelled them.
#[derive(Debug, Default)]
pub(crate) struct TestWriter {
    handed: parking_lot::Mutex<std::collections::VecDeque<super::Out>>,
    cancelled: std::sync::atomic::AtomicBool,
}

impl TestWriter {
    /// A connection's end for the engine, charged to `budget`, and the writer behind it.
    pub(crate) fn conn(budget: Arc<super::OutBudget>) -> (super::OutTx, Arc<TestWriter>) {
        let w = Arc::new(TestWriter::default());
        (super::OutTx::new(w.clone(), budget), w)
    }

    /// The next item the engine handed this connection's writer.
    pub(crate) fn next(&self) -> Option<super::Out> {
        self.handed.lock().pop_front()
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

impl super::ConnWriter for TestWriter {
    fn hand(&self, o: super::Out) -> Result<(), super::Out> {
        self.handed.lock().push_back(o);
        Ok(())
    }
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
    fn freed(&self) {}
}

/// A client's handshake on `conn` asking for `session` (0: a new one) with `passwd`, as the
/// engine's input, and the writer its connection's output goes to.
pub(crate) fn handshake(
    conn: crate::core::conn_id::ConnId,
    session: i64,
    passwd: [u8; 16],
    read_only: Option<bool>,
    budget: Arc<super::OutBudget>,
) -> (super::Input, Arc<TestWriter>) {
    let (out, writer) = TestWriter::conn(budget);
    let req = palisade_proto::ConnectRequest {
        time_out: 30000,
        session_id: session,
        passwd: Some(bytes::Bytes::copy_from_slice(&passwd)),
        read_only,
        ..Default::default()
    };
    let input = super::Input::Connect(super::Handshake {
        conn,
        req,
        out,
        peer: std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
        ready: super::token::Token::detached(0),
        x509: None,
    });
    (input, writer)
}

/// A client's request on `conn` as the engine's input, its frame encoded as the client sent it.
pub(crate) fn request(
    conn: crate::core::conn_id::ConnId,
    xid: i32,
    req: palisade_proto::Request,
) -> super::Input {
    let frame = req.encode(xid).freeze();
    super::Input::Request {
        conn,
        xid,
        req,
        frame,
    }
}

/// A create of `path` with data "d", open to anyone.
pub(crate) fn create(path: &str, flags: i32) -> palisade_proto::Request {
    palisade_proto::Request::Create(palisade_proto::CreateRequest {
        data: Some(bytes::Bytes::from_static(b"d")),
        ..crate::testkit::open_create(path, flags)
    })
}

impl super::Core {
    /// Steps the Raft snapshot capture until it answers token `id`, `steps` times at most:
    /// the image and where it stands, if it came.
    pub(crate) fn raft_snapshot_within(
        &mut self,
        id: u64,
        steps: usize,
    ) -> Option<crate::seam::Image> {
        (0..steps).find_map(|_| {
            self.raft_snapshot_step();
            self.answer_to(id)
        })
    }
}
