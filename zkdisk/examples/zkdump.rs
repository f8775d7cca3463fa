//! Prints a ZooKeeper snapshot or log file, one line per session, node or txn (a debugging aid;
//! `palisade-inspect` has the supported commands).
fn main() {
    for a in std::env::args().skip(1) {
        let p = std::path::Path::new(&a);
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("log") {
            match palisade_zkdisk::read_log(p) {
                Ok(l) => {
                    for e in &l.entries {
                        println!(
                            "{:#x} t={} s={:#x} {:?} {:?}",
                            e.txn.header.zxid,
                            e.txn.header.time,
                            e.txn.header.client_id,
                            e.txn.body,
                            e.digest
                        );
                    }
                    println!("end: {:?}", l.end);
                }
                Err(e) => println!("error: {e}"),
            }
        } else {
            match palisade_zkdisk::read_snapshot(p) {
                Ok(s) => {
                    println!(
                        "{:?} sessions {:?} digest {:?}",
                        s.header, s.sessions, s.digest
                    );
                    for n in &s.nodes {
                        println!("{:?} {:?}", n.path, n.node);
                    }
                }
                Err(e) => println!("error: {e}"),
            }
        }
    }
}
