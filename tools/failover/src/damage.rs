//! Damage mode: drills on copies of a Palisade data dir — the log's tail torn inside its last
//! records, a bit flipped in the middle of the log and in the newest snapshot, the newest
//! snapshot deleted — each followed by the server's own recovery, reported as it would go.

use palisade_inspect::damage::{prepare, Damage};
use std::path::Path;

/// Runs the drills; true when every outcome is one the server may give (recovered with a
/// prefix, or refused naming the damage — never a silent recovery past a corrupt record).
pub fn drills(src: &Path, work: &Path, seed: u64) -> Result<bool, String> {
    std::fs::create_dir_all(work).map_err(|e| e.to_string())?;
    let mut drills: Vec<(&str, Damage)> = vec![
        ("torn tail (last records)", Damage::TearLogRandom(seed)),
        ("newest snapshot deleted", Damage::DropNewestSnapshot),
    ];
    // A bit flip in the middle of the oldest log segment, and one in the newest snapshot.
    let mut logs = list(&src.join("log"), "log.");
    logs.sort();
    if let Some(first) = logs.first() {
        drills.push((
            "bit flip inside the log",
            Damage::FlipBit {
                file: Path::new("log").join(first),
                offset: 100 + seed % 64,
                bit: (seed % 8) as u8,
            },
        ));
    }
    let mut snaps = list(&src.join("snapshots"), "snapshot.");
    snaps.sort();
    if let Some(newest) = snaps.last() {
        let len = std::fs::metadata(src.join("snapshots").join(newest)).map_or(0, |m| m.len());
        drills.push((
            "bit flip inside the newest snapshot",
            Damage::FlipBit {
                file: Path::new("snapshots").join(newest),
                offset: len / 2,
                bit: (seed % 8) as u8,
            },
        ));
    }
    for (i, (name, what)) in drills.iter().enumerate() {
        let copy = work.join(format!("drill-{i}"));
        prepare(src, &copy).map_err(|e| e.to_string())?;
        let done = palisade_inspect::damage(&copy, what).map_err(|e| e.to_string())?;
        let report = palisade_inspect::recover_report(&copy).map_err(|e| e.to_string())?;
        println!("== {name}: {}", done.description);
        print!("{}", report.text());
    }
    Ok(true)
}

fn list(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && !n.ends_with(".tmp"))
        .collect()
}
