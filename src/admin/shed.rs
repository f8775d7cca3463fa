//! The `shed_connections` admin command (alias `shed`), as ZooKeeper 3.10's
//! ShedConnectionsCommand (ZOOKEEPER-5015) takes and answers it: `POST` with a JSON body
//! `{"percentage": <0..100>}`, answered `{"connections_shed": n, "percentage_requested": p}`,
//! or HTTP 400 with ZooKeeper's error text. The core closes the connections (core/shed.rs).

use serde_json::Value;

/// The field ZooKeeper reads.
const FIELD: &str = "percentage";

/// The percentage a request body asks for, or the error ZooKeeper answers with 400.
pub fn percentage(body: &[u8]) -> Result<u8, String> {
    // ZooKeeper's Jackson reads an empty body as a missing node: no field.
    let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| format!("Invalid JSON or failed to read request body: {e}"))?
    };
    let Some(field) = v.as_object().and_then(|o| o.get(FIELD)) else {
        return Err(format!("Missing required field: {FIELD}"));
    };
    let p = as_int(field);
    u8::try_from(p)
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| "Percentage must be between 0 and 100".to_string())
}

/// Jackson's `JsonNode.asInt()`: a number cast as Java casts it, a string parsed (0 if it is
/// not a number), true 1, anything else 0.
fn as_int(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(|i| i64::from(i as i32))
            .or_else(|| n.as_f64().map(|f| i64::from(f as i32)))
            .unwrap_or(0),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<i32>()
                .map(i64::from)
                .or_else(|_| s.parse::<f64>().map(|f| i64::from(f as i32)))
                .unwrap_or(0)
        }
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::percentage;

    #[test]
    fn bodies_as_zookeeper_reads_them() {
        assert_eq!(percentage(br#"{"percentage": 25}"#), Ok(25));
        assert_eq!(percentage(br#"{"percentage": 0}"#), Ok(0));
        assert_eq!(percentage(br#"{"percentage": 100}"#), Ok(100));
        assert_eq!(percentage(br#"{"percentage": "40"}"#), Ok(40));
        assert_eq!(percentage(br#"{"percentage": 12.9}"#), Ok(12));
        assert_eq!(percentage(br#"{"percentage": "x"}"#), Ok(0));
        let range = Err("Percentage must be between 0 and 100".to_string());
        assert_eq!(percentage(br#"{"percentage": 101}"#), range);
        assert_eq!(percentage(br#"{"percentage": -1}"#), range);
        assert_eq!(percentage(br#"{"percentage": 1e300}"#), range);
        let missing = Err("Missing required field: percentage".to_string());
        assert_eq!(percentage(b"{}"), missing);
        assert_eq!(percentage(br#"{"other": 25}"#), missing);
        assert_eq!(percentage(b""), missing);
        assert_eq!(percentage(b"[25]"), missing);
        let bad = percentage(br#"{"percentage": }"#).unwrap_err();
        assert!(
            bad.starts_with("Invalid JSON or failed to read request body"),
            "{bad}"
        );
    }
}
