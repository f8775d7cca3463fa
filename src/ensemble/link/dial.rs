//! The dialing side of a link's handshake: greet, answer the SASL challenge if asked, be
//! welcomed (or refused) as the member this one claims to be.

use super::*;

/// Opens an authenticated link to member `target` at `addr`.
pub async fn dial(addr: &str, target: u64, sec: &Security) -> io::Result<Link> {
    within("the peer link's handshake", async {
        let mut link = BufReader::new(connect(addr, sec).await?);
        let (nonce, _held) = sec
            .proofs
            .hold(target)
            .ok_or_else(|| io::Error::other("the operating system's random source failed"))?;
        let hello = Hello {
            magic: MAGIC,
            version: VERSION,
            from: sec.me,
            to: target,
            nonce,
            listen: sec.listen.clone(),
            sasl: sec.sasl.is_some(),
        };
        send(&mut link, &Greeting::Link(hello)).await?;
        let mut client: Option<ClientExchange> = None;
        let mut sasl_done = false;
        loop {
            match read::<Answer>(&mut link, sec).await? {
                Answer::Welcome => {
                    if sec.learner_require_sasl && !sasl_done {
                        return Err(refused(format!(
                            "member {target} ran no SASL exchange and \
                             quorum.auth.learnerRequireSasl is true"
                        )));
                    }
                    return Ok(link);
                }
                Answer::Sasl(token) => {
                    let Some(sasl) = &sec.sasl else {
                        return Err(invalid("a SASL challenge this member did not offer"));
                    };
                    match &client {
                        None => {
                            let (user, pw) = &sasl.learner;
                            let mut c = ClientExchange::new(QUORUM, user, pw);
                            let resp = c
                                .respond(&token, |b| crate::auth::os_random(b))
                                .map_err(|e| refused(format!("SASL with member {target}: {e}")))?;
                            send(&mut link, &Response(resp)).await?;
                            client = Some(c);
                        }
                        Some(c) if !sasl_done => {
                            c.verify(&token)
                                .map_err(|e| refused(format!("SASL with member {target}: {e}")))?;
                            sasl_done = true;
                        }
                        Some(_) => return Err(invalid("a third SASL token")),
                    }
                }
                Answer::Refused(why) => {
                    return Err(refused(format!("member {target} refused the link: {why}")))
                }
                Answer::Proven(_) => return Err(invalid("a proof's answer to a hello")),
            }
        }
    })
    .await
}
