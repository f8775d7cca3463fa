//! The HTTP/1.1 client `palisade backup` uses: one request a connection (`Connection:
//! close`), the reply's body by Content-Length, chunked, or up to the close (Jetty streams
//! ZooKeeper's snapshot chunked). Plain HTTP only.

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

/// `http://host:port/path` → (host:port, /path).
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        format!("{url}: only http:// URLs (the AdminServer's address and command URL)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let authority = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok((authority, path.to_string()))
}

/// Sends one request and reads the whole reply.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<Reply, String> {
    let (authority, path) = split_url(url)?;
    let mut s = TcpStream::connect(&authority).map_err(|e| format!("{authority}: {e}"))?;
    s.set_read_timeout(Some(timeout)).ok();
    s.set_write_timeout(Some(timeout)).ok();
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
            ("127.0.0.1:8080".into(), "/commands/snapshot".into())
        );
        assert_eq!(split_url("http://h").unwrap(), ("h:80".into(), "/".into()));
        assert!(split_url("https://h/").is_err());
    }
}
