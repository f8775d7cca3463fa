//! One key's history through stateright's `LinearizabilityTester`. Events arrive in real-time
//! order (the harness appends them under one lock): an `ok` completes its process's operation,
//! a `fail` removes it (it certainly did not happen, as in Jepsen), an `info` leaves it in flight
//! for ever (it may or may not have happened; the harness retires that process).

use crate::register::{CasRegister, Op, Ret};
use serde::Deserialize;
use stateright::semantics::{ConsistencyTester, LinearizabilityTester};
use std::collections::HashMap;

#[derive(Clone, Debug, Deserialize)]
pub struct Event {
    pub process: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub f: String,
    pub key: Option<i64>,
    pub value: serde_json::Value,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    NotLinearizable,
}

fn op_of(e: &Event) -> Result<Op, String> {
    let int = |v: &serde_json::Value| v.as_i64().ok_or_else(|| format!("not an integer: {e:?}"));
    match e.f.as_str() {
        "read" => Ok(Op::Read),
        "write" => Ok(Op::Write(int(&e.value)?)),
        "cas" => {
            let pair = e
                .value
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| format!("cas value is not [old, new]: {e:?}"))?;
            Ok(Op::Cas(int(&pair[0])?, int(&pair[1])?))
        }
        other => Err(format!("unknown register operation {other:?}")),
    }
}

fn ret_of(e: &Event) -> Result<Ret, String> {
    match e.f.as_str() {
        "read" => Ok(Ret::Read(if e.value.is_null() {
            None
        } else {
            Some(
                e.value
                    .as_i64()
                    .ok_or_else(|| format!("read value: {e:?}"))?,
            )
        })),
        "write" => Ok(Ret::Write),
        "cas" => Ok(Ret::Cas(true)),
        other => Err(format!("unknown register operation {other:?}")),
    }
}

/// The verdict on one key's events (in history order).
pub fn check(events: &[Event]) -> Result<Verdict, String> {
    // Which invocations end in `fail`: they are left out whole.
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut failed = vec![false; events.len()];
    for (i, e) in events.iter().enumerate() {
        match e.kind.as_str() {
            "invoke" => {
                open.insert(e.process, i);
            }
            "fail" => {
                if let Some(j) = open.remove(&e.process) {
                    failed[j] = true;
                }
                failed[i] = true;
            }
            _ => {
                open.remove(&e.process);
            }
        }
    }
    let mut t = LinearizabilityTester::new(CasRegister::default());
    for (i, e) in events.iter().enumerate() {
        if failed[i] {
            continue;
        }
        match e.kind.as_str() {
            "invoke" => {
                t.on_invoke(e.process, op_of(e)?)?;
            }
            "ok" => {
                t.on_return(e.process, ret_of(e)?)?;
            }
            // `info`: the operation stays in flight.
            _ => {}
        }
    }
    Ok(if t.is_consistent() {
        Verdict::Linearizable
    } else {
        Verdict::NotLinearizable
    })
}
