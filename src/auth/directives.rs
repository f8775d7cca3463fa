//! RFC 2831's directive lists (`key=value` or `key="quoted"`, separated by commas and linear
//! white space), parsed as the JDK's DigestMD5Base.parseDirectives does, so a response the
//! Java server accepts is accepted here and one it refuses is refused. Work is linear in the
//! input, which the caller bounds (`MAX_TOKEN`).

/// Why a token was refused (logged; the client only sees AUTHFAILED).
pub type Refusal = &'static str;

fn lws(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | b' ' | b'\t')
}

fn skip_lws(buf: &[u8], mut i: usize) -> usize {
    while buf.get(i).is_some_and(|&b| lws(b)) {
        i += 1;
    }
    i
}

/// One `key=value` directive, as bytes.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Every `(key, value)` pair of `buf`, in order, quoted values unescaped (`\c` → `c`).
pub fn parse(buf: &[u8]) -> Result<Vec<Pair>, Refusal> {
    let mut out = Vec::new();
    let mut key = Vec::new();
    let mut value = Vec::new();
    let (mut in_key, mut quoted, mut expect_sep) = (true, false, false);
    let mut i = skip_lws(buf, 0);
    while let Some(&b) = buf.get(i) {
        if in_key {
            match b {
                b',' if !key.is_empty() => return Err("directive key contains a ','"),
                b',' => i = skip_lws(buf, i + 1),
                b'=' if key.is_empty() => return Err("empty directive key"),
                b'=' => {
                    in_key = false;
                    i = skip_lws(buf, i + 1);
                    match buf.get(i) {
                        Some(b'"') => {
                            quoted = true;
                            i += 1;
                        }
                        Some(_) => {}
                        None => return Err("directive without a value"),
                    }
                }
                _ if lws(b) => {
                    i = skip_lws(buf, i + 1);
                    if buf.get(i) != Some(&b'=') {
                        return Err("'=' expected after a directive key");
                    }
                }
                _ => {
                    key.push(b);
                    i += 1;
                }
            }
        } else if quoted {
            match b {
                b'\\' => {
                    let Some(&c) = buf.get(i + 1) else {
                        return Err("unterminated quoted value");
                    };
                    value.push(c);
                    i += 2;
                }
                b'"' => {
                    quoted = false;
                    expect_sep = true;
                    i += 1;
                }
                _ => {
                    value.push(b);
                    i += 1;
                }
            }
        } else if lws(b) || b == b',' {
            out.push((std::mem::take(&mut key), std::mem::take(&mut value)));
            in_key = true;
            expect_sep = false;
            i = skip_lws(buf, i + 1);
        } else if expect_sep {
            return Err("comma or white space expected after a quoted value");
        } else {
            value.push(b);
            i += 1;
        }
    }
    if quoted {
        return Err("unterminated quoted value");
    }
    if !key.is_empty() {
        out.push((key, value));
    }
    Ok(out)
}

/// The value of the known directive `name` (keys compare case-insensitively): `None` when
/// absent, refused when given twice (the JDK refuses a repeated directive).
pub fn one<'a>(pairs: &'a [Pair], name: &str) -> Result<Option<&'a [u8]>, Refusal> {
    let mut found = None;
    for (k, v) in pairs {
        if k.eq_ignore_ascii_case(name.as_bytes()) {
            if found.is_some() {
                return Err("a directive is given more than once");
            }
            found = Some(v.as_slice());
        }
    }
    Ok(found)
}

/// `s` as a quoted-string value: `"` and `\` and control characters other than CR, LF and HT
/// escaped, as the JDK writes them.
pub fn quote(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        if b == b'"' || b == b'\\' || b == 127 || (b < 32 && !matches!(b, b'\r' | b'\t' | b'\n')) {
            out.push(b'\\');
        }
        out.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &str) -> Vec<(String, String)> {
        parse(s.as_bytes())
            .unwrap()
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    #[test]
    fn quoted_unquoted_and_white_space() {
        assert_eq!(
            pairs(r#" a=1, b="x,y" ,,c = "q\"uo\\te"  d=4"#),
            [("a", "1"), ("b", "x,y"), ("c", "q\"uo\\te"), ("d", "4")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    #[test]
    fn malformed_lists_are_refused() {
        for bad in [
            "=x",
            "a",
            "a=",
            "a b=1",
            "a=\"open",
            "a=\"x\"y",
            "a=\"trailing\\",
            "k,ey=1",
        ] {
            let r = parse(bad.as_bytes());
            // "a" alone is a key with no '=': the JDK keeps it as a valueless pair.
            if bad == "a" {
                assert_eq!(r.unwrap(), vec![(b"a".to_vec(), vec![])]);
            } else {
                assert!(r.is_err(), "{bad:?} parsed: {r:?}");
            }
        }
    }

    #[test]
    fn repeated_known_directive_is_refused() {
        let p = parse(b"nonce=a,NONCE=b,x=1,x=2").unwrap();
        assert!(one(&p, "nonce").is_err());
        assert_eq!(one(&p, "missing").unwrap(), None);
    }
}
