//! ZooKeeper's session passwords: not stored anywhere, derived from the session id
//! (ZooKeeperServer.generatePasswd: `new java.util.Random(id ^ 0xB3415C00L).nextBytes(16)`).
//! Palisade accepts them for sessions imported from ZooKeeper, so a client can reconnect with
//! its session after the switch (docs/MIGRATION.md).

/// ZooKeeperServer.superSecret.
const SUPER_SECRET: i64 = 0xB341_5C00;
const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const MASK: u64 = (1 << 48) - 1;

/// java.util.Random, enough of it for nextBytes.
struct JavaRandom(u64);

impl JavaRandom {
    fn new(seed: i64) -> Self {
        JavaRandom((seed as u64 ^ MULTIPLIER) & MASK)
    }
    fn next_int(&mut self) -> i32 {
        self.0 = self.0.wrapping_mul(MULTIPLIER).wrapping_add(0xB) & MASK;
        (self.0 >> 16) as u32 as i32
    }
    fn next_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(4) {
            let mut rnd = self.next_int();
            for b in chunk {
                *b = rnd as u8;
                rnd >>= 8;
            }
        }
    }
}

/// The password ZooKeeper gave session `id`.
pub fn zk_password(id: i64) -> [u8; 16] {
    let mut p = [0u8; 16];
    JavaRandom::new(id ^ SUPER_SECRET).next_bytes(&mut p);
    p
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_random_matches_the_jdk() {
        // new java.util.Random(42).nextInt() == -1170105035 (JDK's documented LCG).
        assert_eq!(super::JavaRandom::new(42).next_int(), -1_170_105_035);
    }
}
