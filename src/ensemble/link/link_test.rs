//! Links between members on loopback: each way of proving a member (address, SASL, TLS), and
//! each way an outsider or a misconfigured member is refused before it can send an RPC.

use super::*;
use std::collections::BTreeMap;
use std::io::Write;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

struct Dir {
    addrs: BTreeMap<u64, String>,
    joiners: bool,
}

impl Directory for Dir {
    fn addr_of(&self, id: u64) -> Option<String> {
        self.addrs.get(&id).cloned()
    }
    fn open_to_joiners(&self) -> bool {
        self.joiners
    }
}

/// A member's listener: every authenticated link's (id, proof) goes to `seen`, and the link
/// is held until the other end closes it.
struct Listening {
    seen: mpsc::UnboundedReceiver<(u64, Proven)>,
    _stop: tokio_util::sync::DropGuard,
}

async fn bind() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap().to_string();
    (l, a)
}

fn start(l: TcpListener, sec: Arc<Security>, addrs: &BTreeMap<u64, String>) -> Listening {
    start_open(l, sec, addrs, false)
}

/// `joiners`: servers no configuration names may link to ask to join (reconfigEnabled).
fn start_open(
    l: TcpListener,
    sec: Arc<Security>,
    addrs: &BTreeMap<u64, String>,
    joiners: bool,
) -> Listening {
    let (tx, seen) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let dir = Arc::new(Dir {
        addrs: addrs.clone(),
        joiners,
    });
    tokio::spawn(listen(l, sec, dir, stop.clone(), move |mut link, peer| {
        let _ = tx.send((peer.id, peer.proven.clone()));
        async move {
            let mut buf = [0u8; 64];
            while let Ok(n) = tokio::io::AsyncReadExt::read(&mut link, &mut buf).await {
                if n == 0 {
                    break;
                }
            }
            drop(peer);
        }
    }));
    Listening {
        seen,
        _stop: stop.drop_guard(),
    }
}

/// Members 1 and 2 listening with these securities.
async fn pair(
    s1: Arc<Security>,
    s2: Arc<Security>,
) -> (BTreeMap<u64, String>, Listening, Listening) {
    let (l1, a1) = bind().await;
    let (l2, a2) = bind().await;
    let addrs = BTreeMap::from([(1, a1), (2, a2)]);
    let m1 = start(l1, s1, &addrs);
    let m2 = start(l2, s2, &addrs);
    (addrs, m1, m2)
}

fn nothing_seen(l: &mut Listening) -> bool {
    l.seen.try_recv().is_err()
}

#[tokio::test]
async fn a_plain_link_proves_its_member_by_connecting_back() {
    let (s1, s2) = (Security::plain(1), Security::plain(2));
    let (addrs, _m1, mut m2) = pair(s1.clone(), s2).await;
    let link = dial(&addrs[&2], 2, &s1).await.expect("member 1 links to 2");
    let (id, proven) = m2.seen.recv().await.unwrap();
    assert_eq!((id, proven), (1, Proven::Address));
    drop(link);
}

/// The forged-append attack's first step: an outsider that claims to be member 1. Member 2
/// asks member 1, at member 1's address, whether it is dialing: it is not, and the link is
/// refused before any frame but the hello is read.
#[tokio::test]
async fn an_outsider_claiming_a_member_is_refused() {
    let (addrs, _m1, mut m2) = pair(Security::plain(1), Security::plain(2)).await;
    let outsider = Security::plain(1);
    let e = dial(&addrs[&2], 2, &outsider).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    assert!(e.to_string().contains("not proven"), "{e}");
    // Claiming an id nobody has, or the member's own, or another member as the target.
    for (me, to) in [(9, 2), (2, 2), (1, 3)] {
        let e = dial(&addrs[&2], to, &Security::plain(me))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{me}->{to}: {e}");
    }
    assert!(nothing_seen(&mut m2));
}

/// A connection that never finishes its handshake is closed at the deadline.
#[tokio::test]
async fn a_silent_connection_is_closed_at_the_handshake_deadline() {
    let (addrs, _m1, _m2) = pair(Security::plain(1), Security::plain(2)).await;
    let mut s = TcpStream::connect(&addrs[&2]).await.unwrap();
    let t0 = std::time::Instant::now();
    let mut buf = Vec::new();
    let r = tokio::time::timeout(
        PEER_HANDSHAKE_DEADLINE * 2,
        tokio::io::AsyncReadExt::read_to_end(&mut s, &mut buf),
    )
    .await;
    assert!(r.is_ok(), "still open after twice the deadline");
    assert!(
        t0.elapsed() >= PEER_HANDSHAKE_DEADLINE,
        "{:?}",
        t0.elapsed()
    );
}

/// A stray client or an older member: anything but a greeting gets no answer but a close,
/// and an announced frame past the handshake's cap is not read at all.
#[tokio::test]
async fn garbage_and_oversized_greetings_are_closed() {
    let (addrs, _m1, mut m2) = pair(Security::plain(1), Security::plain(2)).await;
    for bytes in [
        vec![0, 0, 0, 3, 1, 2, 3],
        (PEER_HANDSHAKE_FRAME + 1).to_be_bytes().to_vec(),
        vec![0xff; 16],
    ] {
        let mut s = TcpStream::connect(&addrs[&2]).await.unwrap();
        s.write_all(&bytes).await.unwrap();
        let mut buf = Vec::new();
        let r = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            tokio::io::AsyncReadExt::read_to_end(&mut s, &mut buf),
        )
        .await;
        assert!(r.is_ok(), "the connection was closed");
    }
    assert!(nothing_seen(&mut m2));
}

fn jaas(dir: &tempfile::TempDir, server_pw: &str, learner_pw: &str) -> std::path::PathBuf {
    let p = dir
        .path()
        .join(format!("jaas-{server_pw}-{learner_pw}.conf"));
    let mut f = std::fs::File::create(&p).unwrap();
    writeln!(
        f,
        "QuorumServer {{\n org.apache.zookeeper.server.auth.DigestLoginModule required\n \
         user_learner=\"{server_pw}\";\n}};\nQuorumLearner {{\n \
         org.apache.zookeeper.server.auth.DigestLoginModule required\n username=\"learner\"\n \
         password=\"{learner_pw}\";\n}};"
    )
    .unwrap();
    p
}

fn sasl(me: u64, path: &std::path::Path, lines: &[(&str, &str)]) -> Arc<Security> {
    let mut q = QuorumSettings::default();
    q.apply("quorum.auth.enableSasl", "true").unwrap();
    for (k, v) in lines {
        q.apply(k, v).unwrap();
    }
    Security::open(me, None, &q, Some(path)).unwrap()
}

#[tokio::test]
async fn sasl_links_prove_the_password_both_ways() {
    let d = tempfile::tempdir().unwrap();
    let good = jaas(&d, "s3cret", "s3cret");
    let (s1, s2) = (sasl(1, &good, &[]), sasl(2, &good, &[]));
    let (addrs, _m1, mut m2) = pair(s1.clone(), s2).await;
    let _link = dial(&addrs[&2], 2, &s1).await.unwrap();
    let (id, proven) = m2.seen.recv().await.unwrap();
    assert_eq!((id, proven), (1, Proven::Sasl("learner".into())));

    // A process that does not know the password, claiming member 1 from member 1's own
    // process even: refused.
    let bad = sasl(1, &jaas(&d, "wrong", "wrong"), &[]);
    let e = dial(&addrs[&2], 2, &bad).await.unwrap_err();
    assert!(e.to_string().contains("SASL failed"), "{e}");
    assert!(nothing_seen(&mut m2));
}

/// `quorum.auth.enableSasl=true` with a JAAS file no member could link with stops the start,
/// naming what is missing.
#[test]
fn a_quorum_jaas_file_no_member_could_link_with_stops_the_start() {
    let d = tempfile::tempdir().unwrap();
    let mut q = QuorumSettings::default();
    q.apply("quorum.auth.enableSasl", "true").unwrap();
    let digest = "org.apache.zookeeper.server.auth.DigestLoginModule";
    let learner = format!("QuorumLearner {{ {digest} required username=\"a\" password=\"p\"; }};");
    for (text, why) in [
        (learner.clone(), "no JAAS section 'QuorumServer'"),
        (
            format!("QuorumServer {{ {digest} required user_a=\"p\"; }};"),
            "no JAAS section 'QuorumLearner'",
        ),
        (
            format!("QuorumServer {{ {digest} required; }}; {learner}"),
            "lists no user_NAME",
        ),
        (
            format!(
                "QuorumServer {{ com.sun.security.auth.module.Krb5LoginModule required \
                 user_a=\"p\"; }}; {learner}"
            ),
            "only org.apache.zookeeper.server.auth.DigestLoginModule",
        ),
    ] {
        let path = d.path().join("quorum.jaas");
        std::fs::write(&path, text).unwrap();
        let e = Security::open(1, None, &q, Some(&path)).err().unwrap();
        assert!(e.contains(why), "{why}: {e}");
    }
    let e = Security::open(1, None, &q, None).err().unwrap();
    assert!(e.contains("needs a JAAS file"), "{e}");
}

/// What SASL proves: the password, not the member. A process that is not member 1 (it does
/// not listen at member 1's address) but knows the password links as member 1, as any
/// holder of ZooKeeper's quorum password can. With no credential the same claim is refused
/// (`an_outsider_claiming_a_member_is_refused`).
#[tokio::test]
async fn sasl_proves_the_password_not_the_member() {
    let d = tempfile::tempdir().unwrap();
    let good = jaas(&d, "s3cret", "s3cret");
    let (addrs, _m1, mut m2) = pair(sasl(1, &good, &[]), sasl(2, &good, &[])).await;
    let impostor = sasl(1, &good, &[]);
    let _link = dial(&addrs[&2], 2, &impostor).await.unwrap();
    assert_eq!(
        m2.seen.recv().await.unwrap(),
        (1, Proven::Sasl("learner".into()))
    );
}

/// reconfigEnabled: a server no configuration names may link to ask to join only with a
/// credential: under quorum SASL the password (its address is only where it is reached).
/// With none it is refused; named by a configuration, its address proves it as any member's.
#[tokio::test]
async fn a_joiner_needs_a_members_credential() {
    let d = tempfile::tempdir().unwrap();
    let good = jaas(&d, "s3cret", "s3cret");
    let required = [("quorum.auth.serverRequireSasl", "true")];
    let (l2, a2) = bind().await;
    let addrs = BTreeMap::from([(2, a2.clone())]);
    let mut m2 = start_open(l2, sasl(2, &good, &required), &addrs, true);
    let mut q = QuorumSettings::default();
    q.apply("quorum.auth.enableSasl", "true").unwrap();
    let joiner = |pw: &str| {
        Security::open(7, Some("127.0.0.1:9".into()), &q, Some(&jaas(&d, pw, pw))).unwrap()
    };
    let _link = dial(&a2, 2, &joiner("s3cret")).await.unwrap();
    assert_eq!(
        m2.seen.recv().await.unwrap(),
        (7, Proven::Sasl("learner".into()))
    );
    assert!(dial(&a2, 2, &joiner("wrong")).await.is_err());
    assert!(nothing_seen(&mut m2));

    // No credential: refused, even when the address it gives answers for it (anyone can
    // listen there); once a configuration names it, that address proves it.
    let (l2, a2) = bind().await;
    let addrs = BTreeMap::from([(2, a2.clone())]);
    let mut m2 = start_open(l2, Security::plain(2), &addrs, true);
    let (l7, a7) = bind().await;
    let s7 = Arc::new(Security::bare(7, Some(a7.clone())));
    let _m7 = start(l7, s7.clone(), &BTreeMap::from([(2, a2.clone())]));
    let e = dial(&a2, 2, &s7).await.unwrap_err();
    assert!(e.to_string().contains("in no configuration"), "{e}");
    assert!(nothing_seen(&mut m2));
    let (l2, a2) = bind().await;
    let named = BTreeMap::from([(2, a2.clone()), (7, a7.clone())]);
    let mut m2 = start_open(l2, Security::plain(2), &named, true);
    let _link = dial(&a2, 2, &s7).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (7, Proven::Address));
}

/// A member whose QuorumLearner password its own QuorumServer users refuse was refused on
/// its own dials but, knowing the QuorumServer password, accepted the others' dials: it
/// followed, unable to vote, forward or open a session (tests/ensemble
/// test_member_with_wrong_password_never_joins). It does not start now.
#[test]
fn a_quorum_learner_its_own_quorum_server_refuses_stops_the_start() {
    let d = tempfile::tempdir().unwrap();
    let mut q = QuorumSettings::default();
    q.apply("quorum.auth.enableSasl", "true").unwrap();
    let e = Security::open(1, None, &q, Some(&jaas(&d, "s3cret", "wrong")))
        .err()
        .unwrap();
    assert!(e.contains("'QuorumLearner' user 'learner'"), "{e}");
    assert!(e.contains("not among the 'QuorumServer' users"), "{e}");
}

#[tokio::test]
async fn required_sasl_refuses_a_peer_without_it_in_either_direction() {
    let d = tempfile::tempdir().unwrap();
    let good = jaas(&d, "s3cret", "s3cret");
    // Member 2 requires SASL of the links it accepts; member 1 does not run it.
    let s2 = sasl(2, &good, &[("quorum.auth.serverRequireSasl", "true")]);
    let (addrs, _m1, mut m2) = pair(Security::plain(1), s2).await;
    let e = dial(&addrs[&2], 2, &Security::plain(1)).await.unwrap_err();
    assert!(e.to_string().contains("serverRequireSasl"), "{e}");
    assert!(nothing_seen(&mut m2));

    // Member 1 requires SASL of the members it dials; member 2 does not run it.
    let s1 = sasl(1, &good, &[("quorum.auth.learnerRequireSasl", "true")]);
    let (addrs, _m1, _m2) = pair(s1.clone(), Security::plain(2)).await;
    let e = dial(&addrs[&2], 2, &s1).await.unwrap_err();
    assert!(e.to_string().contains("learnerRequireSasl"), "{e}");

    // Neither required: a SASL dialer and a member without SASL link by address.
    let s1 = sasl(1, &good, &[]);
    let (addrs, _m1, mut m2) = pair(s1.clone(), Security::plain(2)).await;
    let _link = dial(&addrs[&2], 2, &s1).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (1, Proven::Address));
}

/// A throw-away CA and certificates, written as PEM key stores (cert + key) and a trust
/// store (the observer's link tests use it too).
pub(crate) struct Pki {
    dir: tempfile::TempDir,
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    pub(crate) fn new() -> Pki {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "palisade quorum test CA");
        let ca = p.self_signed(&ca_key).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        Pki { dir, ca, ca_key }
    }

    /// A key store for a certificate naming `names`.
    pub(crate) fn leaf(&self, file: &str, names: &[&str]) -> std::path::PathBuf {
        let key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut p = rcgen::CertificateParams::new(names).unwrap();
        p.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = p.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        let path = self.dir.path().join(file);
        std::fs::write(&path, format!("{}{}", cert.pem(), key.serialize_pem())).unwrap();
        path
    }

    pub(crate) fn trust(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.pem")
    }
}

fn tls(
    me: u64,
    key: &std::path::Path,
    trust: &std::path::Path,
    lines: &[(&str, &str)],
) -> Arc<Security> {
    let mut q = QuorumSettings::default();
    q.apply("sslQuorum", "true").unwrap();
    q.apply("ssl.quorum.keyStore.location", &key.display().to_string())
        .unwrap();
    q.apply(
        "ssl.quorum.trustStore.location",
        &trust.display().to_string(),
    )
    .unwrap();
    for (k, v) in lines {
        q.apply(k, v).unwrap();
    }
    Security::open(me, None, &q, None).unwrap()
}

#[tokio::test]
async fn tls_links_are_mutual_and_bound_to_the_members_host() {
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1", "localhost"]);
    let (s1, s2) = (
        tls(1, &member, &pki.trust(), &[]),
        tls(2, &member, &pki.trust(), &[]),
    );
    let (addrs, _m1, mut m2) = pair(s1.clone(), s2).await;
    let _link = dial(&addrs[&2], 2, &s1).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (1, Proven::Certificate));

    // An outsider with a certificate of another CA: its handshake fails.
    let other = Pki::new();
    let forged = other.leaf("forged.pem", &["127.0.0.1"]);
    let outsider = tls(1, &forged, &pki.trust(), &[]);
    assert!(dial(&addrs[&2], 2, &outsider).await.is_err());
    // A certificate of the right CA for another host: refused with hostnameVerification
    // (it could not speak as member 1, whose server.N line says 127.0.0.1).
    let elsewhere = pki.leaf("elsewhere.pem", &["db.example.com"]);
    let e = dial(&addrs[&2], 2, &tls(1, &elsewhere, &pki.trust(), &[]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("does not name the host"), "{e}");
    // Plaintext to a member with sslQuorum and no portUnification: closed.
    assert!(dial(&addrs[&2], 2, &Security::plain(1)).await.is_err());
    assert!(nothing_seen(&mut m2));
}

/// `ssl.quorum.hostnameVerification=false`: any certificate the trust store signs speaks as
/// any member, as in ZooKeeper with that setting (the chain is still checked).
#[tokio::test]
async fn without_hostname_verification_any_certificate_of_the_ca_speaks_as_any_member() {
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1"]);
    let off = [("ssl.quorum.hostnameVerification", "false")];
    let (addrs, _m1, mut m2) = pair(
        tls(1, &member, &pki.trust(), &off),
        tls(2, &member, &pki.trust(), &off),
    )
    .await;
    let elsewhere = pki.leaf("elsewhere.pem", &["db.example.com"]);
    let _link = dial(&addrs[&2], 2, &tls(1, &elsewhere, &pki.trust(), &off))
        .await
        .unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (1, Proven::Certificate));
    let other = Pki::new();
    let forged = other.leaf("forged.pem", &["127.0.0.1"]);
    assert!(dial(&addrs[&2], 2, &tls(1, &forged, &pki.trust(), &off))
        .await
        .is_err());
}

/// A key store replaced by a file that does not load (a rotation caught half-written) keeps
/// the certificates in use: links are still made after the reload.
#[tokio::test]
async fn a_broken_key_store_does_not_replace_the_loaded_one() {
    use crate::net::tls::Reload;
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1"]);
    let (s1, s2) = (
        tls(1, &member, &pki.trust(), &[]),
        tls(2, &member, &pki.trust(), &[]),
    );
    let (addrs, _m1, mut m2) = pair(s1.clone(), s2.clone()).await;
    std::fs::write(&member, "-----BEGIN CERTIFICATE-----\ntruncated").unwrap();
    s1.tls().unwrap().reload("test");
    s2.tls().unwrap().reload("test");
    let _link = dial(&addrs[&2], 2, &s1).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (1, Proven::Certificate));
}

/// Without `sslQuorumReloadCertFiles` the store files are not watched (a replaced key store
/// waits for SIGHUP, as ZooKeeper without the key never rereads it); with it both are.
#[test]
fn store_files_are_watched_only_with_sslquorumreloadcertfiles() {
    use crate::net::tls::Reload;
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1"]);
    let watched =
        |lines: &[(&str, &str)]| tls(1, &member, &pki.trust(), lines).tls().unwrap().files();
    assert!(watched(&[]).is_empty());
    assert_eq!(
        watched(&[("sslQuorumReloadCertFiles", "true")]),
        [member.clone(), pki.trust()]
    );
}

#[tokio::test]
async fn port_unification_takes_tls_and_plaintext_links_both() {
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1"]);
    let unified = |me| {
        tls(
            me,
            &member,
            &pki.trust(),
            &[("sslQuorum", "false"), ("portUnification", "true")],
        )
    };
    // Step 1 of a rolling enablement: member 2 accepts both, member 1 still dials plaintext.
    let s1 = unified(1);
    let (addrs, _m1, mut m2) = pair(s1.clone(), unified(2)).await;
    let _plain = dial(&addrs[&2], 2, &s1).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (1, Proven::Address));
    // Step 2: member 1 dials TLS; member 2 still accepts it.
    let s1 = tls(1, &member, &pki.trust(), &[("portUnification", "true")]);
    let (addrs, _m1, mut m2) = pair(s1.clone(), unified(2)).await;
    let _tls = dial(&addrs[&2], 2, &s1).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap(), (1, Proven::Certificate));
}

/// 20,000 idle connections once took the leader's descriptors. Past the bound of pending
/// handshakes from one source, a connection is closed at once; an authenticated link made
/// before holds, and once the idle ones go a new link is made again.
#[tokio::test]
async fn idle_connections_cannot_pile_up() {
    let s2 = Security::plain(2).with_limits(Limits {
        pending: 4,
        pending_per_source: 4,
        links: 8,
        links_per_member: 4,
    });
    let s1 = Security::plain(1);
    let (addrs, _m1, mut m2) = pair(s1.clone(), s2.clone()).await;
    let _held = dial(&addrs[&2], 2, &s1).await.unwrap();
    m2.seen.recv().await.unwrap();
    let idle = idle_connections(&addrs[&2]).await;
    let (pending, links) = s2.gate().counts();
    assert!(pending <= 4, "{pending} pending");
    assert_eq!(links, 1);
    drop(idle);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let _again = dial(&addrs[&2], 2, &s1).await.unwrap();
    assert_eq!(m2.seen.recv().await.unwrap().0, 1);
}

/// 40 connections to `addr` (as many as it takes) that never send anything, and 100 ms for
/// the member to take them in.
async fn idle_connections(addr: &str) -> Vec<TcpStream> {
    let mut idle = Vec::new();
    for _ in 0..40 {
        if let Ok(s) = TcpStream::connect(addr).await {
            idle.push(s);
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    idle
}

/// The same flood while members link: idle connections that fill every handshake slot (of
/// the port and of the source the members share) must not keep a member out. A link into
/// the flooded member, and one out of it (whose proof is a connection back into it), are
/// made while the idle ones stay: the oldest connection that has not sent its greeting makes
/// room. (Without that, the hostile_peer suite saw a leader whose links broke under 20,000
/// idle connections isolated until they went: the term climbed 1 → 30.)
#[tokio::test]
async fn members_link_through_a_flood_of_idle_connections() {
    let limits = Limits {
        pending: 4,
        pending_per_source: 3,
        links: 8,
        links_per_member: 4,
    };
    let s1 = Security::plain(1);
    let s2 = Security::plain(2).with_limits(limits);
    let (addrs, _m1, mut m2) = pair(s1.clone(), s2.clone()).await;
    let mut idle = idle_connections(&addrs[&2]).await;
    let (pending, _) = s2.gate().counts();
    assert!(pending <= 4, "{pending} pending");
    // Into the flooded member: its pending slots hold idle connections only.
    let _in = dial(&addrs[&2], 2, &s1).await.expect("member 1 links to 2");
    assert_eq!(m2.seen.recv().await.unwrap().0, 1);
    // Out of it: member 1 asks member 2, through member 2's flooded port, for the proof.
    idle.extend(idle_connections(&addrs[&2]).await);
    let _out = dial(&addrs[&1], 1, &s2).await.expect("member 2 links to 1");
    drop(idle);
}
