//! The observer's side of quorum SASL against a leader made of Palisade's DIGEST-MD5 server
//! (right and wrong passwords, and leaders that misbehave), the DIGEST-MD5 arithmetic
//! against a real ZooKeeper 3.8 exchange (zab/testdata/sasl-follower-to-m3-1.stream), and
//! the TLS handshake against a trusted leader, one of another CA and one naming another host.

use super::*;
use crate::auth::digest_md5::{response_value, Exchange, Inputs, Step, Users};
use crate::auth::directives;
use crate::ensemble::link::tests::Pki;
use bytes::{BufMut, Bytes};
use palisade_zab::AuthStatus;
use tokio::io::DuplexStream;
use tokio::net::TcpListener;

const USER: &str = "member";
const PASSWORD: &str = "quorum-secret";

fn users() -> Users {
    Users::from([(USER.to_string(), PASSWORD.to_string())])
}

/// Reads one learner packet (the leader's side of the exchange).
async fn read_packet<S: AsyncRead + Unpin>(s: &mut S, d: &mut AuthDecoder) -> Option<AuthPacket> {
    let mut buf = [0u8; 512];
    loop {
        if let Some(p) = d.next_packet().ok()? {
            return Some(p);
        }
        let n = s.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        d.push(&buf[..n]);
    }
}

async fn write<S: AsyncWrite + Unpin>(s: &mut S, status: AuthStatus, token: Option<&[u8]>) {
    let p = AuthPacket {
        status,
        token: token.map(Bytes::copy_from_slice),
    };
    let _ = s.write_all(&p.encode()).await;
}

/// SaslQuorumAuthServer's side, with `users`: challenge, then SUCCESS (rspauth) or ERROR; on
/// success `after` follows (where the QuorumPackets would begin).
async fn leader<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, users: Users, after: &'static [u8]) {
    let mut d = AuthDecoder::new(4096, 4);
    let mut ex = Exchange::new(QUORUM);
    let Some(first) = read_packet(&mut s, &mut d).await else {
        return;
    };
    assert_eq!(
        first,
        AuthPacket::learner(b""),
        "ZooKeeper's first learner packet"
    );
    let Ok(Step::Challenge(c)) = ex.evaluate(first.token_bytes(), &users, |b| {
        b.fill(3);
        true
    }) else {
        panic!("no challenge")
    };
    write(&mut s, AuthStatus::InProgress, Some(&c)).await;
    let Some(resp) = read_packet(&mut s, &mut d).await else {
        return;
    };
    match ex.evaluate(resp.token_bytes(), &users, |_| true) {
        Ok(Step::Done { token, .. }) => {
            let mut b = BytesMut::from(
                &AuthPacket {
                    status: AuthStatus::Success,
                    token: Some(Bytes::from(token)),
                }
                .encode()[..],
            );
            b.put_slice(after);
            let _ = s.write_all(&b).await;
        }
        _ => write(&mut s, AuthStatus::Error, Some(b"")).await,
    }
    let mut sink = [0u8; 64];
    while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
}

fn pair() -> (DuplexStream, DuplexStream) {
    tokio::io::duplex(64 << 10)
}

#[tokio::test]
async fn the_right_password_authenticates_and_a_wrong_one_is_refused_by_the_leader() {
    let (mut ours, theirs) = pair();
    tokio::spawn(leader(theirs, users(), b"\x00\x00\x00\x11LEADERINFO..."));
    let rest = authenticate(&mut ours, USER, PASSWORD).await.unwrap();
    assert_eq!(
        &rest[..],
        b"\x00\x00\x00\x11LEADERINFO...",
        "handed to the Zab decoder"
    );

    let (mut ours, theirs) = pair();
    tokio::spawn(leader(theirs, users(), b""));
    let e = authenticate(&mut ours, USER, "not-the-password")
        .await
        .unwrap_err();
    assert!(e.contains("refused the exchange (ERROR)"), "{e}");

    let (mut ours, theirs) = pair();
    tokio::spawn(leader(theirs, users(), b""));
    let e = authenticate(&mut ours, "nobody", PASSWORD)
        .await
        .unwrap_err();
    assert!(e.contains("'nobody'"), "{e}");
}

/// A leader that answers with the packets given whatever the learner sends, then hangs up.
async fn scripted(script: Vec<u8>) -> Result<BytesMut, String> {
    let (mut ours, mut theirs) = pair();
    tokio::spawn(async move {
        let mut d = AuthDecoder::new(4096, 4);
        let _ = read_packet(&mut theirs, &mut d).await;
        let _ = theirs.write_all(&script).await;
        // Keep reading what the learner sends (its response), then hang up.
        let mut sink = [0u8; 512];
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            while matches!(theirs.read(&mut sink).await, Ok(n) if n > 0) {}
        })
        .await;
    });
    authenticate(&mut ours, USER, PASSWORD).await
}

fn packet(status: i32, token: Option<&[u8]>) -> Vec<u8> {
    let mut b = palisade_zab::QUORUM_AUTH_MAGIC.to_be_bytes().to_vec();
    b.extend(status.to_be_bytes());
    match token {
        None => b.extend((-1i32).to_be_bytes()),
        Some(t) => {
            b.extend((t.len() as i32).to_be_bytes());
            b.extend(t);
        }
    }
    b
}

const CHALLENGE: &[u8] =
    b"realm=\"zk-quorum-sasl-md5\",nonce=\"abc\",charset=utf-8,algorithm=md5-sess";

#[tokio::test]
async fn a_hostile_leader_ends_the_exchange_with_a_reason_and_nothing_more() {
    let huge = {
        let mut b = palisade_zab::QUORUM_AUTH_MAGIC.to_be_bytes().to_vec();
        b.extend(0i32.to_be_bytes());
        b.extend(i32::MAX.to_be_bytes());
        b
    };
    let mut twice = packet(0, Some(CHALLENGE));
    twice.extend(packet(0, Some(CHALLENGE)));
    let mut forged = packet(0, Some(CHALLENGE));
    forged.extend(packet(1, Some(b"rspauth=00000000000000000000000000000000")));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (huge, "exceeds the limit of 4096"),
        (packet(1, Some(b"")), "SUCCESS before any challenge"),
        (packet(0, None), "the leader's challenge: "),
        (twice, "a challenge more after 1"),
        (
            forged,
            "the leader's SUCCESS: the server's rspauth is wrong",
        ),
        (packet(5, Some(b"")), "unknown QuorumAuth status 5"),
        (packet(-1, None), "refused the exchange (ERROR)"),
        // A leader without quorum SASL reads our packet as a QuorumPacket and hangs up;
        // one that speaks Zab at once is not answering our exchange.
        (Vec::new(), "closed the connection during the exchange"),
        (
            vec![0, 0, 0, 17, 0, 0, 0, 1, 0, 0, 0, 0],
            "not a QuorumAuthPacket",
        ),
    ];
    for (script, want) in cases {
        let e = scripted(script).await.unwrap_err();
        assert!(e.contains(want), "{e:?} should say {want:?}");
    }
}

/// The arithmetic of our DIGEST-MD5 against a real exchange between ZooKeeper 3.8 members
/// (the JDK's client and server): from the recorded challenge and response, and the JAAS
/// password of the capture, our code computes the JDK client's response and the JDK
/// server's rspauth; and our client accepts the JDK server's challenge.
#[test]
fn our_digest_md5_matches_a_real_zookeeper_quorum_exchange() {
    let text = include_str!("../../../zab/testdata/sasl-follower-to-m3-1.stream");
    let mut tokens = Vec::new(); // (direction, token), in order
    for line in text.lines() {
        let (dir, hex) = match line.split_once(' ') {
            Some((d @ (">" | "<"), h)) => (d, h),
            _ => continue,
        };
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let mut d = AuthDecoder::new(4096, 8);
        d.push(&bytes);
        if let Ok(Some(p)) = d.next_packet() {
            tokens.push((dir, p.token_bytes().to_vec()));
        }
    }
    let dirs: Vec<&str> = tokens.iter().map(|(d, _)| *d).collect();
    assert_eq!(
        dirs,
        [">", "<", ">", "<"],
        "empty, challenge, response, rspauth"
    );
    let (challenge, response, rspauth) = (&tokens[1].1, &tokens[2].1, &tokens[3].1);

    let c = directives::parse(challenge).unwrap();
    let r = directives::parse(response).unwrap();
    let get = |d: &[directives::Pair], k: &str| directives::one(d, k).unwrap().unwrap().to_vec();
    assert_eq!(get(&r, "nonce"), get(&c, "nonce"));
    let cnonce = get(&r, "cnonce");
    let uri = get(&r, "digest-uri");
    assert_eq!(uri, b"zookeeper-quorum/zk-quorum-sasl-md5");
    let nonce = get(&c, "nonce");
    let authzid = get(&r, "authzid");
    let inputs = Inputs {
        user: USER,
        realm: QUORUM.server,
        password: PASSWORD,
        nonce: &nonce,
        cnonce: &cnonce,
        authzid: Some(&authzid),
        digest_uri: &uri,
        qop: "auth",
    };
    assert_eq!(response_value(&inputs, "AUTHENTICATE"), get(&r, "response"));
    let d = directives::parse(rspauth).unwrap();
    assert_eq!(response_value(&inputs, ""), get(&d, "rspauth"));
    // A wrong password would not have matched.
    let wrong = Inputs {
        password: "not-the-password",
        ..inputs
    };
    assert_ne!(response_value(&wrong, "AUTHENTICATE"), get(&r, "response"));

    let mut client = ClientExchange::new(QUORUM, USER, PASSWORD);
    let ours = client
        .respond(challenge, |b| {
            b.fill(1);
            true
        })
        .unwrap();
    assert!(ours.ends_with(b",qop=auth"));
}

/// A rustls leader with `key` on a loopback port, answering the TLS handshake only.
async fn tls_leader(key: &Path, trust: &Path) -> (String, tokio::task::JoinHandle<()>) {
    let acceptor = QuorumTls::new(tls_settings(key, trust).tls, true, false)
        .unwrap()
        .acceptor();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    let _ = s.write_all(b"hello").await;
                    let mut sink = [0u8; 64];
                    while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
                }
            });
        }
    });
    (addr, task)
}

fn tls_settings(key: &Path, trust: &Path) -> QuorumSettings {
    let mut q = QuorumSettings::default();
    for (k, v) in [
        ("sslQuorum", "true".to_string()),
        ("ssl.quorum.keyStore.location", key.display().to_string()),
        (
            "ssl.quorum.trustStore.location",
            trust.display().to_string(),
        ),
    ] {
        assert_eq!(q.apply(k, &v), Ok(true), "{k}");
    }
    q
}

async fn dial(sec: &LinkSecurity, addr: &str, host: &str) -> Result<Vec<u8>, Refused> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut s, _) = sec.secure(tcp, host, Duration::from_secs(5)).await?;
    let mut got = vec![0u8; 5];
    s.read_exact(&mut got).await.unwrap();
    Ok(got)
}

#[tokio::test]
async fn tls_to_the_leader_checks_its_certificate_and_presents_ours() {
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1", "localhost"]);
    let observer = pki.leaf("observer.pem", &["127.0.0.1"]);
    let (addr, _leader) = tls_leader(&member, &pki.trust()).await;
    let sec = LinkSecurity::open(&tls_settings(&observer, &pki.trust()), None).unwrap();
    assert_eq!(sec.describe(), "TLS (sslQuorum)");
    assert_eq!(dial(&sec, &addr, "127.0.0.1").await.unwrap(), b"hello");
    assert_eq!(dial(&sec, &addr, "localhost").await.unwrap(), b"hello");
    // Hostname verification: the leader's certificate must name the server.N line's host or,
    // as ZooKeeper's learner takes it too, the address dialed (127.0.0.1 here).
    assert_eq!(dial(&sec, &addr, "member.example").await.unwrap(), b"hello");
    let named = pki.leaf("named.pem", &["member.example"]);
    let (addr3, _l3) = tls_leader(&named, &pki.trust()).await;
    assert_eq!(
        dial(&sec, &addr3, "member.example").await.unwrap(),
        b"hello"
    );
    let e = dial(&sec, &addr3, "other.example").await.unwrap_err();
    assert!(
        matches!(&e, Refused::Tls(w) if w.contains("not valid for name")),
        "{e:?}"
    );

    // A leader whose certificate another CA signed.
    let other = Pki::new();
    let foreign = other.leaf("foreign.pem", &["127.0.0.1"]);
    let (addr2, _l2) = tls_leader(&foreign, &other.trust()).await;
    let e = dial(&sec, &addr2, "127.0.0.1").await.unwrap_err();
    assert!(
        matches!(&e, Refused::Tls(w) if w.contains("invalid peer certificate")),
        "{e:?}"
    );

    // Our certificate of another CA: the leader refuses it. Under TLS 1.2 the handshake
    // fails; under TLS 1.3 (here) ours completes first and the leader's alert is the first
    // read, which the link takes as the refusal it is (`tls_alert`).
    let outsider = LinkSecurity::open(&tls_settings(&foreign, &pki.trust()), None).unwrap();
    let tcp = TcpStream::connect(&addr).await.unwrap();
    match outsider
        .secure(tcp, "127.0.0.1", Duration::from_secs(5))
        .await
    {
        Err(Refused::Tls(_)) => {}
        Err(e) => panic!("{e:?}"),
        Ok((mut s, _)) => {
            let mut b = [0u8; 5];
            let e = s
                .read_exact(&mut b)
                .await
                .expect_err("the leader accepted another CA");
            let alert = tls_alert(&e).unwrap_or_else(|| panic!("not an alert: {e}"));
            assert!(alert.contains("received fatal alert"), "{alert}");
        }
    }
    // Other read errors are not refusals.
    assert_eq!(tls_alert(&std::io::ErrorKind::UnexpectedEof.into()), None);
}

/// These quorum settings with SASL required of learners, and a JAAS file naming the member
/// `users()` knows (USER, PASSWORD): the link security an observer would open.
fn with_learner_sasl(mut q: QuorumSettings) -> LinkSecurity {
    let jaas = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        jaas.path(),
        format!(
            "QuorumLearner {{\n org.apache.zookeeper.server.auth.DigestLoginModule required\n \
             username=\"{USER}\" password=\"{PASSWORD}\";\n}};\n"
        ),
    )
    .unwrap();
    for k in ["quorum.auth.enableSasl", "quorum.auth.learnerRequireSasl"] {
        q.apply(k, "true").unwrap();
    }
    LinkSecurity::open(&q, Some(jaas.path())).unwrap()
}

/// Both: the SASL exchange runs inside the TLS connection, and the leader's bytes after it
/// reach the caller.
#[tokio::test]
async fn sasl_runs_inside_tls() {
    let pki = Pki::new();
    let member = pki.leaf("member.pem", &["127.0.0.1"]);
    let acceptor = QuorumTls::new(tls_settings(&member, &pki.trust()).tls, true, false)
        .unwrap()
        .acceptor();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        if let Ok(s) = acceptor.accept(tcp).await {
            leader(s, users(), b"zab").await;
        }
    });
    let sec = with_learner_sasl(tls_settings(&member, &pki.trust()));
    assert_eq!(
        sec.describe(),
        "TLS (sslQuorum) and quorum SASL (DIGEST-MD5)"
    );
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut s, rest) = sec
        .secure(tcp, "127.0.0.1", Duration::from_secs(5))
        .await
        .unwrap();
    assert!(matches!(s, Either::Right(_)), "not TLS");
    // The rest arrived with the SUCCESS, or comes on the next read.
    let mut got = rest.to_vec();
    while got.len() < 3 {
        let mut b = [0u8; 8];
        let n = s.read(&mut b).await.unwrap();
        assert!(n > 0, "closed");
        got.extend_from_slice(&b[..n]);
    }
    assert_eq!(got, b"zab");
}

#[tokio::test]
async fn a_silent_leader_is_given_up_at_the_deadline() {
    let sec = with_learner_sasl(QuorumSettings::default());
    assert_eq!(sec.describe(), "quorum SASL (DIGEST-MD5)");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(s);
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let t0 = std::time::Instant::now();
    let e = sec
        .secure(tcp, "127.0.0.1", Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Refused::Sasl(w) if w.contains("did not finish within 300ms")),
        "{e:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3));

    // enableSasl alone: ZooKeeper's learner skips the exchange, and so does this one.
    let mut q = QuorumSettings::default();
    q.apply("quorum.auth.enableSasl", "true").unwrap();
    let sec = LinkSecurity::open(&q, None).unwrap();
    assert_eq!(sec.describe(), "plaintext, no authentication");
}

#[test]
fn a_jks_store_or_a_missing_jaas_file_stops_the_observer_at_its_start() {
    let mut q = QuorumSettings::default();
    q.apply("sslQuorum", "true").unwrap();
    q.apply("ssl.quorum.keyStore.location", "/etc/zk/keystore.jks")
        .unwrap();
    q.apply("ssl.quorum.trustStore.location", "/etc/zk/truststore.jks")
        .unwrap();
    let e = LinkSecurity::open(&q, None).err().unwrap();
    assert!(e.contains("JKS") && e.contains("use PEM or PKCS12"), "{e}");

    let mut q = QuorumSettings::default();
    q.apply("quorum.auth.enableSasl", "true").unwrap();
    q.apply("quorum.auth.learnerRequireSasl", "true").unwrap();
    let e = LinkSecurity::open(&q, None).err().unwrap();
    assert!(e.contains("needs a JAAS file"), "{e}");
}
