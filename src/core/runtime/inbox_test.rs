//! The reply ends the runtime keeps for the engine's tokens: an answer reaches its asker, a
//! token dropped unanswered closes the asker's channel (as a dropped channel end did), and a
//! watched asker's going away is told.

use super::*;
use crate::core::admin::Query;
use crate::core::outbox::Outbox;

#[test]
fn an_answer_reaches_its_asker_and_a_dropped_token_closes_the_askers_channel() {
    let mut replies = Replies::new();
    let (ready, mut answered) = oneshot::channel::<usize>();
    let (gone_end, mut gone) = oneshot::channel::<usize>();
    let (a, b) = (replies.token(ready), replies.token(gone_end));
    let mut out = Outbox::default();
    out.answer(a, 7);
    drop(b);
    assert!(
        answered.try_recv().is_err(),
        "sent at the turn's end, not before"
    );
    replies.answer(out.take_answers());
    assert_eq!(answered.try_recv().ok(), Some(7));
    assert!(matches!(
        gone.try_recv(),
        Err(oneshot::error::TryRecvError::Closed)
    ));
    assert!(
        replies.ends.is_empty(),
        "no end is kept once answered or dropped"
    );
}

#[test]
fn a_backups_asker_going_away_is_told_once() {
    let mut replies = Replies::new();
    let (reply, asker) = oneshot::channel::<Vec<u8>>();
    let Query::Backup { reply: token } = replies.split_query(Query::Backup { reply }) else {
        unreachable!("a backup stays a backup");
    };
    assert!(replies.gone().is_empty(), "its asker still waits");
    drop(asker);
    assert_eq!(replies.gone(), vec![token.id()]);
    assert!(replies.gone().is_empty(), "told once");
    drop(token);
    replies.answer(Vec::new());
    assert!(replies.ends.is_empty());
}
