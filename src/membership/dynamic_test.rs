//! The texts and orders here are ZooKeeper 3.8.0's, measured against QuorumPeerMain with
//! reconfigEnabled=true (tests/ensemble/test_reconfig.py compares them live).

use super::*;

fn m(line: &str) -> Member {
    let (k, v) = line.split_once('=').expect("server.N=...");
    parse_member(k, v).expect("a server line")
}

fn three() -> DynConfig {
    DynConfig::from_static(&[
        m("server.1=127.0.0.1:27401:27402"),
        m("server.2=127.0.0.1:27404:27405"),
        m("server.3=127.0.0.1:27407:27408"),
    ])
}

#[test]
fn the_text_is_zookeepers() {
    let mut c = three();
    assert_eq!(
        c.text(),
        "server.1=127.0.0.1:27401:27402:participant\nserver.2=127.0.0.1:27404:27405:participant\n\
         server.3=127.0.0.1:27407:27408:participant\nversion=0"
    );
    c.version = 0x1_0000_0000;
    assert!(c.text().ends_with("\nversion=100000000"));
    assert_eq!(DynConfig::parse(&c.text()), Some(c.clone()));
    assert_eq!(DynConfig::parse("not a config"), None);
    assert_eq!(DynConfig::parse(""), None);
    assert_eq!(DynConfig::parse("server.1=h:1:2\n"), None, "no version");
}

#[test]
fn incremental_changes_keep_zookeepers_hashmap_order() {
    let c = three();
    // remove 3, then add an observer 4: ZooKeeper printed 4 first (bucket 0 of 4).
    let two = c.incremental(None, Some("3")).unwrap();
    assert_eq!(two.members.iter().map(|m| m.id).collect::<Vec<_>>(), [1, 2]);
    let with4 = two
        .incremental(
            Some("server.4=127.0.0.1:27410:27411:observer;127.0.0.1:27409"),
            None,
        )
        .unwrap();
    assert_eq!(
        with4.text(),
        "server.4=127.0.0.1:27410:27411:observer;127.0.0.1:27409\n\
         server.1=127.0.0.1:27401:27402:participant\n\
         server.2=127.0.0.1:27404:27405:participant\nversion=0"
    );
    // A whole list is a fresh map: id order for small ids.
    let lines: Vec<String> = with4
        .members
        .iter()
        .map(|m| format!("server.{}={}", m.id, spec(m)))
        .collect();
    let replaced = DynConfig::replace(&lines.join(",")).unwrap();
    assert_eq!(
        replaced.members.iter().map(|m| m.id).collect::<Vec<_>>(),
        [1, 2, 4]
    );
    // Adding 4 to 1,2,3 (a table of 8): id order.
    let four = c
        .incremental(
            Some("server.4=127.0.0.1:27418:27419:participant;127.0.0.1:27417"),
            None,
        )
        .unwrap();
    assert_eq!(
        four.members.iter().map(|m| m.id).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_eq!(four.voters().len(), 4);
    // Re-adding a member replaces it; leaving an unknown id changes nothing.
    assert_eq!(four.incremental(None, Some("9")).unwrap(), four);
}

#[test]
fn refused_as_zookeeper_refuses() {
    let c = three();
    let bad = |r: Result<DynConfig, ChangeError>| matches!(r, Err(ChangeError::BadArguments(_)));
    // No client port, no '=', a malformed spec, an address another member has.
    assert!(bad(c.incremental(Some("server.5=127.0.0.1:1:2"), None)));
    assert!(bad(c.incremental(Some("127.0.0.1:1:2;3"), None)));
    assert!(bad(c.incremental(Some("server.5=127.0.0.1:1"), None)));
    assert!(bad(c.incremental(
        Some("server.5=127.0.0.1:27401:9:participant;9999"),
        None
    )));
    assert!(matches!(
        c.incremental(None, Some("abc")),
        Err(ChangeError::Marshalling(_))
    ));
    assert!(bad(DynConfig::replace("server.1=127.0.0.1:1")));
    assert!(bad(DynConfig::replace("nonsense")));
    // Too few voters.
    let one = DynConfig::replace("server.1=127.0.0.1:1:2").unwrap();
    assert!(matches!(
        one.check_voters(true),
        Err(ChangeError::BadArguments(_))
    ));
    assert!(one.check_voters(false).is_ok());
    let none = DynConfig::replace("server.1=127.0.0.1:1:2:observer").unwrap();
    assert!(matches!(
        none.check_voters(false),
        Err(ChangeError::BadArguments(_))
    ));
    assert!(c.check_voters(true).is_ok());
}
