//! The accepting side of a link's handshake: the peer port's listener, its bounds on links
//! still in their handshake, and each link's proof of which member it comes from (a verified
//! certificate, SASL, or connecting back to the member it claims to be).

use super::*;

/// Asks member `claimed`, at the address this member knows it by, whether it is dialing
/// this member with `nonce`.
async fn ask_proof(addr: &str, claimed: u64, nonce: Nonce, sec: &Security) -> io::Result<bool> {
    let mut link = BufReader::new(connect(addr, sec).await?);
    let ask = Greeting::Prove {
        magic: MAGIC,
        asker: sec.me,
        prover: claimed,
        nonce,
    };
    send(&mut link, &ask).await?;
    match read::<Answer>(&mut link, sec).await? {
        Answer::Proven(yes) => Ok(yes),
        _ => Ok(false),
    }
}

/// Takes a connection accepted on the peer port through its handshake. `Ok(None)`: it
/// asked for a proof, which was answered, and is done. An error names why it was refused
/// (and the connection is closed).
pub async fn accept(
    tcp: TcpStream,
    source: SocketAddr,
    sec: &Security,
    dir: &dyn Directory,
) -> io::Result<Option<(Link, Peer)>> {
    let Some(pending) = sec.gate.admit(source.ip()) else {
        sec.refused(source, "too many peer connections in their handshake");
        return Err(refused("too many peer connections in their handshake"));
    };
    let _ = tcp.set_nodelay(true);
    let r = tokio::select! {
        r = within("a peer link's handshake", handshake(tcp, source, sec, dir, &pending)) => r,
        _ = pending.pushed_out() => Err(refused(
            "pushed out by newer connections before it sent its greeting",
        )),
    };
    match r {
        Ok(Some((link, id, addr, proven, joiner))) => match pending.promote(id) {
            Some(admitted) => Ok(Some((
                link,
                Peer {
                    id,
                    addr,
                    proven,
                    joiner,
                    _admitted: admitted,
                },
            ))),
            None => {
                sec.refused(source, "too many links");
                Err(refused("too many links"))
            }
        },
        Ok(None) => Ok(None),
        Err(e) => {
            sec.refused(source, &e.to_string());
            Err(e)
        }
    }
}

/// Accepts links on `listener` until `cancel`, each through its handshake on a task of its
/// own, and hands each authenticated one to `serve`. A refused link is closed; others go on.
pub async fn listen<F, Fut>(
    listener: tokio::net::TcpListener,
    sec: Arc<Security>,
    dir: Arc<dyn Directory>,
    cancel: tokio_util::sync::CancellationToken,
    serve: F,
) where
    F: Fn(Link, Peer) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let serve = Arc::new(serve);
    loop {
        let (tcp, source) = tokio::select! {
            _ = cancel.cancelled() => return,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and the like: wait, rather than spin on the error.
                    if sec.refusals.ready() {
                        tracing::warn!(error = %e, "peer accept failed");
                    }
                    tokio::time::sleep(crate::limits::ACCEPT_RETRY).await;
                    continue;
                }
            },
        };
        let (sec, dir, serve, cancel) = (sec.clone(), dir.clone(), serve.clone(), cancel.clone());
        tokio::spawn(async move {
            let accepted = tokio::select! {
                _ = cancel.cancelled() => return,
                r = accept(tcp, source, &sec, &*dir) => r,
            };
            if let Ok(Some((link, peer))) = accepted {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = serve(link, peer) => {}
                }
            }
        });
    }
}

type Accepted = Option<(Link, u64, String, Proven, bool)>;

async fn handshake(
    tcp: TcpStream,
    source: SocketAddr,
    sec: &Security,
    dir: &dyn Directory,
    pending: &gate::Pending,
) -> io::Result<Accepted> {
    let mut first = [0u8; 1];
    let n = tcp.peek(&mut first).await?;
    if n == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let stream = if first[0] == TLS_HANDSHAKE_BYTE {
        let tls = sec
            .tls
            .as_ref()
            .ok_or_else(|| refused("TLS on a peer port without sslQuorum"))?;
        let s = tls.acceptor().accept(tcp).await?;
        Either::Right(Box::new(tokio_rustls::TlsStream::Server(s)))
    } else if sec.accept_plain {
        Either::Left(tcp)
    } else {
        return Err(refused(
            "a plaintext link to a member with sslQuorum=true (and no portUnification)",
        ));
    };
    let cert = stream::peer_certificate(&stream);
    let mut link = BufReader::new(stream);
    let greeting = read::<Greeting>(&mut link, sec).await?;
    pending.heard();
    let hello = match greeting {
        Greeting::Prove {
            magic,
            asker,
            prover,
            nonce,
        } => {
            let yes = magic == MAGIC && prover == sec.me && sec.proofs.owns(asker, &nonce);
            send(&mut link, &Answer::Proven(yes)).await?;
            return Ok(None);
        }
        Greeting::Link(h) => h,
    };
    match check_hello(&hello, cert.as_ref(), sec, dir) {
        Ok(ok) => finish(link, hello, ok, source, sec).await,
        Err(why) => {
            let _ = send(&mut link, &Answer::Refused(why.clone())).await;
            Err(refused(why))
        }
    }
}

/// What a hello leaves to do: the claimed member's address (known, or told by a joiner),
/// whether it joins, and whether its certificate already proved it.
struct Checked {
    addr: String,
    joiner: bool,
    by_certificate: bool,
}

fn check_hello(
    h: &Hello,
    cert: Option<&rustls_pki_types::CertificateDer<'static>>,
    sec: &Security,
    dir: &dyn Directory,
) -> Result<Checked, String> {
    if h.magic != MAGIC || h.version != VERSION {
        return Err(format!(
            "peer protocol version {} (this member speaks {VERSION})",
            h.version
        ));
    }
    if h.to != sec.me {
        return Err(format!("this is member {}, not {}", sec.me, h.to));
    }
    if h.from == sec.me {
        return Err("a link claiming this member's own id".into());
    }
    let (addr, joiner) = match dir.addr_of(h.from) {
        Some(a) => (a, false),
        None if dir.open_to_joiners() => (
            h.listen
                .clone()
                .filter(|a| a.len() <= 255)
                .ok_or("a server unknown here that gives no address")?,
            true,
        ),
        None => return Err("not a member of this ensemble".into()),
    };
    let by_certificate = match (&sec.tls, cert) {
        (Some(tls), Some(c)) => {
            if tls.hostname_verification() && !tls::names_host(c, &addr) {
                return Err(format!(
                    "the certificate does not name the host of member {} ({addr})",
                    h.from
                ));
            }
            true
        }
        _ => false,
    };
    Ok(Checked {
        addr,
        joiner,
        by_certificate,
    })
}

async fn finish(
    mut link: Link,
    hello: Hello,
    c: Checked,
    source: SocketAddr,
    sec: &Security,
) -> io::Result<Accepted> {
    let mut proven = c.by_certificate.then_some(Proven::Certificate);
    match (&sec.sasl, hello.sasl) {
        (Some(sasl), true) => {
            let mut server = Exchange::new(QUORUM);
            let step = server.evaluate(b"", &sasl.users, |b| crate::auth::os_random(b));
            let Ok(Step::Challenge(challenge)) = step else {
                return Err(io::Error::other("SASL: no challenge"));
            };
            send(&mut link, &Answer::Sasl(challenge)).await?;
            let Response(token) = read::<Response>(&mut link, sec).await?;
            match server.evaluate(&token, &sasl.users, |_| false) {
                Ok(Step::Done { token, user }) => {
                    send(&mut link, &Answer::Sasl(token)).await?;
                    proven = Some(Proven::Sasl(user));
                }
                Ok(Step::Challenge(_)) | Err(_) => {
                    let why = format!("SASL failed for member {}", hello.from);
                    let _ = send(&mut link, &Answer::Refused(why.clone())).await;
                    return Err(refused(why));
                }
            }
        }
        (Some(_), false) if sec.server_require_sasl => {
            let why = "quorum.auth.serverRequireSasl is true and the link runs no SASL";
            let _ = send(&mut link, &Answer::Refused(why.into())).await;
            return Err(refused(why));
        }
        _ => {}
    }
    let proven = match proven {
        Some(p) => p,
        // Anyone can listen at the address a joiner gives: proving it proves nothing, and a
        // learner is sent the whole tree (an outsider's one Join once read it all).
        None if c.joiner => {
            let why = format!(
                "server {} at {} is in no configuration and proved itself by neither a \
                 certificate nor quorum SASL: add it with reconfig first, or secure the peer links",
                hello.from, c.addr
            );
            let _ = send(&mut link, &Answer::Refused(why.clone())).await;
            return Err(refused(why));
        }
        None => {
            let yes = ask_proof(&c.addr, hello.from, hello.nonce, sec)
                .await
                .unwrap_or(false);
            if !yes {
                let why = format!(
                    "member {} at {} does not vouch for this link (from {source})",
                    hello.from, c.addr
                );
                let _ = send(&mut link, &Answer::Refused("not proven".into())).await;
                return Err(refused(why));
            }
            Proven::Address
        }
    };
    send(&mut link, &Answer::Welcome).await?;
    Ok(Some((link, hello.from, c.addr, proven, c.joiner)))
}
