//! Reply tokens: what the engine holds for an answer it owes (a handshake's `ready`, a
//! committed batch's acknowledgement, an admin query's reply, a Raft snapshot's image). The
//! runtime keeps the reply end (runtime/inbox.rs) and steps the engine with a token for it;
//! the engine answers by pushing the token and the value into its outbox
//! (`Outbox::answer`), and the runtime sends the value at the turn's end.
//!
//! A token dropped unanswered (the engine gave up on the ask: a standalone server given a
//! member's input, a capture cancelled) says so to the runtime, which drops the reply end, so
//! the asker sees the engine gone, as a dropped channel end told it before. `Ends` says which
//! of the two a message carries (msg.rs).

use std::marker::PhantomData;
use std::sync::Arc;

/// The ids of tokens dropped unanswered, for the runtime to drop their reply ends.
pub type Abandoned = Arc<parking_lot::Mutex<Vec<u64>>>;

/// An answer of type `T` the engine owes.
pub struct Token<T> {
    id: u64,
    /// Where a drop unanswered is told (None: a test's token, or one answered).
    abandoned: Option<Abandoned>,
    _answer: PhantomData<fn(T)>,
}

impl<T> Token<T> {
    /// The token for reply end `id`, whose drop unanswered is told to `abandoned`.
    pub fn new(id: u64, abandoned: Abandoned) -> Self {
        Token {
            id,
            abandoned: Some(abandoned),
            _answer: PhantomData,
        }
    }

    /// A token nobody waits on (tests that step the engine and read its answers by id).
    pub fn detached(id: u64) -> Self {
        Token {
            id,
            abandoned: None,
            _answer: PhantomData,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Spends the token on its answer: its id, for the outbox.
    pub(super) fn spend(mut self) -> u64 {
        self.abandoned = None;
        self.id
    }
}

impl<T> Drop for Token<T> {
    fn drop(&mut self) {
        if let Some(a) = self.abandoned.take() {
            a.lock().push(self.id);
        }
    }
}

impl<T> std::fmt::Debug for Token<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({})", self.id)
    }
}

/// An answer in the outbox: the token's id and its value (of the token's type).
pub struct Answered {
    pub id: u64,
    pub value: Box<dyn std::any::Any + Send>,
}

/// How a message carries the ends its answers go to: the inbox's messages carry channel ends
/// (`CoreMsg`, runtime/inbox.rs); the runtime keeps them and steps the engine with tokens for
/// them (`Input`, token.rs).
pub trait Ends {
    type End<T: Send + 'static>: Send;
}

/// The engine's inputs carry reply tokens.
pub struct Tokens;

impl Ends for Tokens {
    type End<T: Send + 'static> = Token<T>;
}
