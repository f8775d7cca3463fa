//! `palisade-linearize [--budget-secs S] HISTORY.jsonl`: is the register's history
//! linearizable, key by key? Prints JSON `{"keys": [{"key", "ops", "verdict", "excerpt"?}]}`;
//! exits 0 when every key is linearizable, 1 when one is not (or is undecided within the
//! budget: "unknown"), 2 on bad input. Each key is searched on its own thread under the
//! budget (stateright's search is exhaustive; a key it cannot decide in time is reported, not
//! guessed).

mod check;
#[cfg(test)]
mod check_test;
mod register;

use check::{check, Event, Verdict};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn main() {
    std::process::exit(match run() {
        Ok(all_good) => i32::from(!all_good),
        Err(e) => {
            eprintln!("palisade-linearize: {e}");
            2
        }
    })
}

fn run() -> Result<bool, String> {
    let mut args = std::env::args().skip(1);
    let mut budget = 20.0f64;
    let mut path = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--budget-secs" => {
                budget = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--budget-secs takes seconds")?
            }
            _ => path = Some(a),
        }
    }
    let path = path.ok_or("usage: palisade-linearize [--budget-secs S] HISTORY.jsonl")?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut by_key: BTreeMap<i64, Vec<Event>> = BTreeMap::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{path}: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let e: Event = serde_json::from_str(&line).map_err(|e| format!("{path}:{}: {e}", n + 1))?;
        by_key.entry(e.key.unwrap_or(-1)).or_default().push(e);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(budget.max(0.1));
    let mut keys = Vec::new();
    let mut all_good = true;
    for (key, events) in by_key {
        let ops = events.iter().filter(|e| e.kind != "invoke").count();
        let excerpt: Vec<String> = events
            .iter()
            .map(|e| format!("{}:{}:{}:{}", e.process, e.kind, e.f, e.value))
            .collect();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(check(&events));
        });
        let left = deadline.saturating_duration_since(Instant::now());
        let verdict = match rx.recv_timeout(left.max(Duration::from_millis(50))) {
            Ok(Ok(Verdict::Linearizable)) => "linearizable",
            Ok(Ok(Verdict::NotLinearizable)) => "not-linearizable",
            Ok(Err(e)) => return Err(format!("key {key}: {e}")),
            Err(_) => "unknown",
        };
        let mut row = serde_json::json!({"key": key, "ops": ops, "verdict": verdict});
        if verdict != "linearizable" {
            all_good = false;
            row["excerpt"] = serde_json::Value::String(excerpt.join(" "));
        }
        keys.push(row);
    }
    println!("{}", serde_json::json!({ "keys": keys }));
    Ok(all_good)
}
