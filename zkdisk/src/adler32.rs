//! Adler-32 (RFC 1950), the checksum ZooKeeper's snapshots and txn logs use
//! (java.util.zip.Adler32).

const MOD: u32 = 65_521;
/// The most bytes that can be summed before `b` must be reduced (zlib's NMAX).
const NMAX: usize = 5552;

#[derive(Clone, Copy, Debug)]
pub struct Adler32 {
    a: u32,
    b: u32,
}

impl Default for Adler32 {
    fn default() -> Self {
        Self::new()
    }
}

impl Adler32 {
    pub fn new() -> Self {
        Adler32 { a: 1, b: 0 }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let (mut a, mut b) = (self.a, self.b);
        for chunk in bytes.chunks(NMAX) {
            for &x in chunk {
                // Both stay below 2^32 within NMAX bytes (zlib's bound).
                a = a.wrapping_add(u32::from(x));
                b = b.wrapping_add(a);
            }
            a %= MOD;
            b %= MOD;
        }
        self.a = a;
        self.b = b;
    }

    /// The checksum as Java's `getValue()` returns it (a non-negative long).
    pub fn value(&self) -> i64 {
        i64::from((self.b << 16) | self.a)
    }
}

/// The Adler-32 of `bytes`.
pub fn adler32(bytes: &[u8]) -> i64 {
    let mut a = Adler32::new();
    a.update(bytes);
    a.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(adler32(b""), 1);
        // RFC 1950's example and zlib's test vector.
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let big = vec![0xffu8; 100_000];
        let mut inc = Adler32::new();
        for c in big.chunks(777) {
            inc.update(c);
        }
        assert_eq!(inc.value(), adler32(&big));
        // zlib: adler32 of 100000 bytes of 0xff.
        let (mut a, mut b) = (1u64, 0u64);
        for _ in 0..100_000 {
            a = (a + 255) % 65_521;
            b = (b + a) % 65_521;
        }
        assert_eq!(adler32(&big), ((b << 16) | a) as i64);
    }
}
