//! Small formatting helpers shared by the text outputs: zxids in hex, server times as UTC,
//! ACL permissions as zkCli letters, data previews that are safe to print.

/// A zxid as ZooKeeper's tools print it: `0x` and lowercase hex of its bits.
pub fn zxid(z: i64) -> String {
    format!("{:#x}", z as u64)
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (proleptic Gregorian, UTC).
pub fn utc_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Howard Hinnant's days-to-civil algorithm; exact for every i64 day count we can be given
/// (wrapping arithmetic keeps absurd values from panicking; they print as absurd dates).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days.wrapping_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe.wrapping_add(era.wrapping_mul(400));
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y.wrapping_add(1) } else { y }, m, d)
}

/// ZooKeeper's permission letters in zkCli's order: c(reate) d(elete) r(ead) w(rite) a(dmin).
pub fn perms(p: i32) -> String {
    let letters = [(4, 'c'), (8, 'd'), (1, 'r'), (2, 'w'), (16, 'a')];
    letters
        .iter()
        .filter(|(bit, _)| p & bit != 0)
        .map(|(_, c)| *c)
        .collect()
}

/// At most `max` bytes of `data`, escaped so that any bytes print on one line.
pub fn preview(data: &[u8], max: usize) -> String {
    let shown = data.get(..max.min(data.len())).unwrap_or_default();
    let mut s: String = shown.escape_ascii().to_string();
    if data.len() > shown.len() {
        s.push('…');
    }
    s
}

/// The 10-digit sequential suffix a name ends with, if it has one.
pub fn sequential_suffix(name: &str) -> Option<i64> {
    let tail = name.len().checked_sub(10).and_then(|at| name.get(at..))?;
    if !tail.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    tail.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_stable() {
        assert_eq!(zxid(0x2a), "0x2a");
        assert_eq!(zxid(-1), "0xffffffffffffffff");
        assert_eq!(utc_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_ms(1_798_804_800_123), "2027-01-01T12:00:00.123Z");
        assert_eq!(utc_ms(-1), "1969-12-31T23:59:59.999Z");
        let _ = utc_ms(i64::MIN);
        let _ = utc_ms(i64::MAX);
        assert_eq!(perms(31), "cdrwa");
        assert_eq!(perms(1), "r");
        assert_eq!(preview(b"a\nb", 10), "a\\nb");
        assert_eq!(preview(b"abcdef", 3), "abc…");
        assert_eq!(sequential_suffix("s-0000000012"), Some(12));
        assert_eq!(sequential_suffix("s-000000001x"), None);
        assert_eq!(sequential_suffix("12"), None);
    }
}
