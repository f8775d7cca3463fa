use super::*;

fn kv(lines: &[(&str, &str)]) -> BTreeMap<String, String> {
    lines
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn reads_the_forms_zookeeper_accepts() {
    let m = parse_member("server.1", "zoo1:2888:3888").unwrap();
    assert_eq!(m.id, 1);
    assert_eq!(
        m.addrs,
        vec![PeerAddr {
            host: "zoo1".into(),
            peer_port: 2888,
            election_port: 3888
        }]
    );
    assert_eq!((m.role, m.client.clone()), (Role::Participant, None));

    let m = parse_member("server.7", "10.0.0.7:2888:3888:OBSERVER;2181").unwrap();
    assert_eq!((m.id, m.role), (7, Role::Observer));
    assert_eq!(m.client, Some((None, 2181)));

    let m = parse_member("server.2", "[::1]:2889:3889:participant;[::1]:2182").unwrap();
    assert_eq!(m.addrs[0].host, "::1");
    assert_eq!(m.client, Some((Some("::1".into()), 2182)));

    let m = parse_member("server.3", "a:1:2|b:3:4;0.0.0.0:2183").unwrap();
    assert_eq!(m.addrs.len(), 2);
    assert_eq!(m.client, Some((Some("0.0.0.0".into()), 2183)));

    // An empty client part, and 3.9's secure client part, still parse.
    let m = parse_member("server.4", "h:1:2;;2281").unwrap();
    assert_eq!((m.client, m.secure_client), (None, Some((None, 2281))));
}

#[test]
fn refuses_what_zookeeper_refuses_naming_the_line() {
    for (k, v) in [
        ("server.x", "h:1:2"),
        ("server.1", "h:1"),
        ("server.1", "h:1:2:3:4"),
        ("server.1", "h:1:2:leader"),
        ("server.1", "h:0:2"),
        ("server.1", "h:1:70000"),
        ("server.1", "h:2888:2888"),
        ("server.1", ":1:2"),
        ("server.1", "[::1:1:2"),
        ("server.1", "h:1:2;x:y"),
        ("server.1", "a:1:2:observer|b:3:4:participant"),
        ("server.1", "h:1:2;1;2;3"),
    ] {
        let e = parse_member(k, v).expect_err(v);
        assert!(e.to_string().contains(k), "{e}");
    }
}

#[test]
fn an_ensemble_is_ordered_unique_and_has_voters() {
    let ms = members(&kv(&[
        ("server.3", "c:1:2"),
        ("server.1", "a:1:2"),
        ("server.2", "b:1:2:observer"),
        ("tickTime", "2000"),
    ]))
    .unwrap();
    assert_eq!(ms.iter().map(|m| m.id).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(members(&kv(&[("server.1", "a:1:2:observer")])).is_err());
    assert!(members(&kv(&[("server.01", "a:1:2"), ("server.1", "b:1:2")])).is_err());
    assert!(members(&kv(&[("tickTime", "2000")])).unwrap().is_empty());
}

#[test]
fn myid_allows_the_newline_echo_writes() {
    assert_eq!(parse_myid("3\n"), Ok(3));
    assert!(parse_myid("three").is_err());
    assert!(parse_myid("").is_err());
}

#[test]
fn conf_lists_the_members_as_zookeeper_does() {
    let kv: std::collections::BTreeMap<String, String> = [
        ("server.1", "127.0.0.1:2888:3888"),
        ("server.2", "127.0.0.1:2889:3889:observer;2182"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let m = members(&kv).expect("members");
    let text =
        conf_header(&m, 2, 10, 5) + &crate::ensemble::dynamic::DynConfig::from_static(&m).text();
    assert_eq!(
        text,
        "serverId=2\ninitLimit=10\nsyncLimit=5\nelectionAlg=3\nelectionPort=3889\n\
         quorumPort=2889\npeerType=1\nmembership: \n\
         server.1=127.0.0.1:2888:3888:participant\n\
         server.2=127.0.0.1:2889:3889:observer;0.0.0.0:2182\nversion=0",
        "ZooKeeper ends conf without a newline after the version"
    );
}
