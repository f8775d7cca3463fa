//! `palisade-inspect`: a thin command line over the `palisade_inspect` library. Exit codes:
//! 0 = clean / equal / recovered, 1 = something wrong was found (damage, violations,
//! differences, a refused recovery), 2 = the tool could not do its job (usage, I/O).

use clap::{ArgGroup, Parser, Subcommand};
use palisade_inspect::datadir::parse_zxid;
use palisade_inspect::logdump::{self, ZxidRange};
use palisade_inspect::snapdump::SnapshotFile;
use palisade_inspect::{damage, DataDir, InspectError};
use serde_json::Value;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "palisade-inspect",
    version,
    about = "Inspect, check and damage-test Palisade data dirs"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Every record of a log (a data dir, its log/ directory, an ensemble member's Raft log
    /// directory, or one segment file), then how each segment ends. Read-only.
    Log {
        path: PathBuf,
        /// First zxid to show (hex with 0x, or decimal); in a Raft log, the first Raft index.
        #[arg(long, value_parser = parse_zxid)]
        from: Option<i64>,
        /// Last zxid (Raft index) to show.
        #[arg(long, value_parser = parse_zxid)]
        to: Option<i64>,
        #[arg(long)]
        json: bool,
    },
    /// A snapshot's header, trailer, sessions and tree. Read-only.
    Snapshot {
        file: PathBuf,
        #[arg(long, default_value = "/")]
        subtree: String,
        #[arg(long)]
        json: bool,
    },
    /// Checks every snapshot and log segment and replays the log from every valid starting
    /// point, checking the digests. Read-only; exits 1 if anything is wrong.
    Validate {
        datadir: PathBuf,
        /// The dataLogDir, if the log is not under DATADIR.
        #[arg(long)]
        data_log_dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Rebuilds the tree as of a zxid (default: the end of the log) and prints it. Read-only.
    Replay {
        datadir: PathBuf,
        #[arg(long, value_parser = parse_zxid)]
        to: Option<i64>,
        #[arg(long, default_value = "/")]
        subtree: String,
        #[arg(long)]
        data_log_dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Replays the whole log checking counters, suffixes, zxids and digests after every txn.
    Invariants {
        datadir: PathBuf,
        #[arg(long)]
        data_log_dir: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Recovers two data dirs (read-only) and compares them node by node; exits 1 if they
    /// differ.
    Diff {
        a: PathBuf,
        b: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Damages a copy of a data dir. `--prepare SRC DST` makes the copy; every other action
    /// refuses a directory it did not make.
    #[command(group(ArgGroup::new("action").required(true).args(
        ["prepare", "tear_log_at", "tear_log_random", "flip_bit", "drop_newest_snapshot"])))]
    Damage {
        /// The copy to damage.
        #[arg(required_unless_present = "prepare", conflicts_with = "prepare")]
        dir: Option<PathBuf>,
        /// Copy the data dir SRC to DST and mark DST as damageable.
        #[arg(long, num_args = 2, value_names = ["SRC", "DST"])]
        prepare: Option<Vec<PathBuf>>,
        /// Zero the last log segment from this byte offset to the end of its data.
        #[arg(long, value_name = "OFFSET")]
        tear_log_at: Option<u64>,
        /// Tear the last segment inside one of its last records, chosen by SEED.
        #[arg(long, value_name = "SEED")]
        tear_log_random: Option<u64>,
        /// Flip one bit: FILE (relative to the copy):OFFSET:BIT.
        #[arg(long, value_name = "FILE:OFFSET:BIT", value_parser = damage::parse_flip)]
        flip_bit: Option<damage::Damage>,
        /// Delete the newest snapshot.
        #[arg(long)]
        drop_newest_snapshot: bool,
        #[arg(long)]
        json: bool,
    },
    /// Runs the server's start-up recovery on a damaged copy and reports what it did.
    RecoverReport {
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// Buffered stdout that stops writing (instead of panicking) once the reader goes away.
struct Out {
    w: BufWriter<std::io::Stdout>,
    closed: bool,
}

impl Out {
    fn line(&mut self, s: &str) {
        if !self.closed && writeln!(self.w, "{s}").is_err() {
            self.closed = true;
        }
    }

    fn json(&mut self, v: &Value) {
        self.line(&v.to_string());
    }
}

impl palisade_inspect::zk::Sink for Out {
    fn line(&mut self, s: &str) {
        Out::line(self, s)
    }
    fn json(&mut self, v: &Value) {
        Out::json(self, v)
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.w.flush();
    }
}

fn data_dir(dir: &std::path::Path, log: Option<&PathBuf>) -> DataDir {
    let d = DataDir::new(dir);
    match log {
        Some(l) => d.with_data_log_dir(l),
        None => d,
    }
}

/// 0 when `fine`, else 1.
fn code(fine: bool) -> u8 {
    u8::from(!fine)
}

fn run(cmd: Cmd, out: &mut Out) -> Result<u8, InspectError> {
    match cmd {
        Cmd::Log {
            path,
            from,
            to,
            json,
        } if palisade_inspect::zk::is_zk_file(&path)
            || palisade_inspect::zk::zk_version_dir(&path).is_some() =>
        {
            let _ = (from, to);
            let fine = palisade_inspect::zk::log(&path, json, out).map_err(InspectError::Cannot)?;
            Ok(code(fine))
        }
        Cmd::Log {
            path,
            from,
            to,
            json,
        } => {
            let scan = logdump::read_log(&path, ZxidRange { from, to }, |rec| {
                if json {
                    out.json(&rec.json());
                } else {
                    out.line(&rec.text());
                }
            })?;
            for seg in &scan.segments {
                if json {
                    out.json(&logdump::segment_json(seg));
                } else {
                    out.line(&logdump::segment_text(seg));
                }
            }
            if scan.stopped_early && !json {
                out.line("(stopped after --to)");
            }
            Ok(code(scan.damage.is_none()))
        }
        Cmd::Snapshot { file, json, .. } if palisade_inspect::zk::is_zk_file(&file) => {
            let fine =
                palisade_inspect::zk::snapshot(&file, json, out).map_err(InspectError::Cannot)?;
            Ok(code(fine))
        }
        Cmd::Snapshot {
            file,
            subtree,
            json,
        } => {
            let snap = SnapshotFile::open(&file)?;
            let summary = snap.summary();
            if json {
                out.json(&summary.json());
            } else {
                out.line(&summary.text());
                out.line("tree:");
            }
            snap.walk_nodes(&subtree, |n| {
                if json {
                    out.json(&n.json());
                } else {
                    out.line(&n.text());
                }
            })?;
            Ok(code(!summary.digest.is_problem()))
        }
        Cmd::Validate {
            datadir,
            data_log_dir,
            json,
        } if palisade_inspect::zk::zk_version_dir(&datadir).is_some() => {
            let fine = palisade_inspect::zk::validate(&datadir, data_log_dir.as_deref(), json, out)
                .map_err(InspectError::Cannot)?;
            Ok(code(fine))
        }
        Cmd::Validate {
            datadir,
            data_log_dir,
            json,
        } => {
            let r = palisade_inspect::validate(&data_dir(&datadir, data_log_dir.as_ref()))?;
            if json {
                r.json_lines().iter().for_each(|v| out.json(v));
            } else {
                out.line(&r.text());
            }
            Ok(code(r.ok()))
        }
        Cmd::Replay {
            datadir,
            to,
            subtree,
            data_log_dir,
            json,
        } => {
            let r = palisade_inspect::replay(&data_dir(&datadir, data_log_dir.as_ref()), to)?;
            if json {
                out.json(&r.summary_json());
            } else {
                out.line(&r.summary_text());
                out.line("tree:");
            }
            palisade_inspect::nodes::walk_tree(&r.tree, &subtree, |n| {
                if json {
                    out.json(&n.json());
                } else {
                    out.line(&n.text());
                }
            })?;
            Ok(0)
        }
        Cmd::Invariants {
            datadir,
            data_log_dir,
            json,
        } => {
            let r = palisade_inspect::invariants(&data_dir(&datadir, data_log_dir.as_ref()))?;
            if json {
                r.json_lines().iter().for_each(|v| out.json(v));
            } else {
                out.line(&r.text());
            }
            Ok(code(r.ok()))
        }
        Cmd::Diff { a, b, json } => {
            let r = palisade_inspect::diff(&DataDir::new(&a), &DataDir::new(&b))?;
            if json {
                r.json_lines().iter().for_each(|v| out.json(v));
            } else {
                out.line(&r.text());
            }
            Ok(code(r.equal()))
        }
        Cmd::Damage {
            dir,
            prepare,
            tear_log_at,
            tear_log_random,
            flip_bit,
            drop_newest_snapshot,
            json,
        } => {
            if let Some([src, dst]) = prepare.as_deref() {
                damage::prepare(src, dst)?;
                let msg = format!(
                    "copied {} to {} (marked for damage)",
                    src.display(),
                    dst.display()
                );
                if json {
                    out.json(&serde_json::json!({"type": "prepared",
                        "source": src.display().to_string(), "copy": dst.display().to_string()}));
                } else {
                    out.line(&msg);
                }
                return Ok(0);
            }
            let what = match (tear_log_at, tear_log_random, flip_bit) {
                (Some(o), _, _) => damage::Damage::TearLogAt(o),
                (_, Some(s), _) => damage::Damage::TearLogRandom(s),
                (_, _, Some(f)) => f,
                _ if drop_newest_snapshot => damage::Damage::DropNewestSnapshot,
                _ => return Err(InspectError::Cannot("no damage chosen".into())),
            };
            let dir = dir.ok_or_else(|| InspectError::Cannot("which copy?".into()))?;
            let done = palisade_inspect::damage(&dir, &what)?;
            if json {
                out.json(
                    &serde_json::json!({"type": "damage", "file": done.file.display().to_string(),
                    "offset": done.offset, "description": done.description}),
                );
            } else {
                out.line(&done.description);
            }
            Ok(0)
        }
        Cmd::RecoverReport { dir, json } => {
            let r = palisade_inspect::recover_report(&dir)?;
            if json {
                out.json(&r.json());
            } else {
                out.line(&r.text());
            }
            Ok(code(r.recovered()))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Out {
        w: BufWriter::new(std::io::stdout()),
        closed: false,
    };
    match run(cli.cmd, &mut out) {
        Ok(c) => ExitCode::from(c),
        Err(e) => {
            drop(out);
            eprintln!("palisade-inspect: {e}");
            // Damage found where the tool needed sound data is a finding, not a tool failure.
            let finding = matches!(
                e,
                InspectError::Snapshot(palisade_snapshot::SnapError::Corrupt { .. })
                    | InspectError::Recovery(_)
                    | InspectError::Refused(_)
            );
            ExitCode::from(if finding { 1 } else { 2 })
        }
    }
}
