//! The HTTP/1.1 client `palisade backup` uses: one request a connection (`Connection:
//! close`), the reply's body by Content-Length, chunked, or up to the close (Jetty streams
//! ZooKeeper's snapshot chunked). HTTPS with a trust store and, for the `x509` admin auth
//! scheme, a client certificate (both read as the server's stores: PEM or PKCS12).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Reply {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The stores an HTTPS request uses.
#[derive(Default)]
pub struct TlsOpts {
    /// The CA that signs the server's certificate (`--cacert`).
    pub trust: Option<crate::net::tls::Store>,
    /// A client certificate and key (`--cert`, `--cert-password`).
    pub identity: Option<crate::net::tls::Store>,
}

/// `http[s]://host:port/path` → (https, host:port, /path).
fn split_url(url: &str) -> Result<(bool, String, String), String> {
    let (https, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(r), _) => (false, r),
        (_, Some(r)) => (true, r),
        _ => return Err(format!("{url}: not an http:// or https:// URL")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let authority = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:{}", if https { 443 } else { 80 })
    };
    Ok((https, authority, path.to_string()))
}

fn tls_stream(
    s: TcpStream,
    authority: &str,
    tls: &TlsOpts,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, String> {
    use crate::net::tls::{load_key_store, load_trust_store};
    let trust = tls
        .trust
        .as_ref()
        .ok_or("an https:// URL needs --cacert (the CA of the server's certificate)")?;
    let mut roots = rustls::RootCertStore::empty();
    for c in load_trust_store(trust)? {
        roots.add(c).map_err(|e| format!("--cacert: {e}"))?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let cfg = match &tls.identity {
        Some(id) => {
            let (certs, key) = load_key_store(id)?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("--cert: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let name = rustls_pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| format!("{host}: {e}"))?;
    let conn =
        rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).map_err(|e| e.to_string())?;
    Ok(rustls::StreamOwned::new(conn, s))
}

/// Sends one request and reads the whole reply.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
    tls: &TlsOpts,
) -> Result<Reply, String> {
    let (https, authority, path) = split_url(url)?;
    let s = TcpStream::connect(&authority).map_err(|e| format!("{authority}: {e}"))?;
    s.set_read_timeout(Some(timeout)).ok();
    s.set_write_timeout(Some(timeout)).ok();
    if https {
        let s = tls_stream(s, &authority, tls)?;
        exchange(s, method, &authority, &path, headers, body)
    } else {
        exchange(s, method, &authority, &path, headers, body)
    }
}

fn exchange<S: Read + Write>(
    mut s: S,
    method: &str,
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, String> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())
        .and_then(|_| s.write_all(body))
        .map_err(|e| format!("{authority}: {e}"))?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| format!("{authority}: not an HTTP reply: {:?}", line.trim_end()))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).map_err(|e| e.to_string())?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    if reply
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        loop {
            line.clear();
            r.read_line(&mut line).map_err(|e| e.to_string())?;
            let size = line.trim().split(';').next().unwrap_or("");
            let n =
                usize::from_str_radix(size, 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            if n == 0 {
                break;
            }
            let at = reply.body.len();
            reply.body.resize(at + n, 0);
            let chunk = reply.body.get_mut(at..).unwrap_or_default();
            r.read_exact(chunk).map_err(|e| format!("chunk: {e}"))?;
            line.clear();
            r.read_line(&mut line).map_err(|e| e.to_string())?;
        }
    } else if let Some(n) = reply.header("content-length") {
        let n: usize = n.parse().map_err(|_| format!("bad Content-Length {n:?}"))?;
        reply.body.resize(n, 0);
        r.read_exact(&mut reply.body)
            .map_err(|e| format!("body: {e}"))?;
    } else {
        r.read_to_end(&mut reply.body)
            .map_err(|e| format!("body: {e}"))?;
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/commands/snapshot").unwrap(),
            (false, "127.0.0.1:8080".into(), "/commands/snapshot".into())
        );
        assert_eq!(
            split_url("http://h").unwrap(),
            (false, "h:80".into(), "/".into())
        );
        assert_eq!(
            split_url("https://h/c").unwrap(),
            (true, "h:443".into(), "/c".into())
        );
        assert!(split_url("ftp://h/").is_err());
    }
}
