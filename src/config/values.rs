//! How the area parsers read a value, each error naming the key as written and the value.

/// What an area parser says of a key: taken (true) or not its area's (false), or why its
/// value is refused.
pub(super) type Taken = Result<bool, String>;

pub(super) fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("invalid value for {key}: {v:?}"))
}

pub(super) fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => Err(format!(
            "invalid value for {key}: {v:?} (expected yes/no or true/false)"
        )),
    }
}

/// A number of bytes, at least 1.
pub(super) fn positive(key: &str, v: &str) -> Result<usize, String> {
    parse::<usize>(key, v).and_then(|n| {
        if n > 0 {
            Ok(n)
        } else {
            Err(format!(
                "invalid value for {key}: {v:?} (bytes, at least 1)"
            ))
        }
    })
}

/// A number of ticks, 1 to 1000 (initLimit, syncLimit).
pub(super) fn ticks(key: &str, v: &str) -> Result<u64, String> {
    match parse::<u64>(key, v)? {
        n @ 1..=1000 => Ok(n),
        _ => Err(format!("invalid value for {key}: {v:?} (ticks, 1 to 1000)")),
    }
}
