//! Proof by connecting back, for links that carry no credential (no quorum TLS, no quorum
//! SASL): a member that dials another registers a random nonce for that dial and sends it
//! in its hello; the member dialed connects back to the address *its own* configuration
//! gives the claimed member and asks whether that member is dialing it with that nonce. Only
//! the process listening at the claimed member's address can say yes, so a link proves it
//! comes from whoever holds that address, the identity ZooKeeper's `server.N` lines already
//! give (against anyone who can reach the port but not take over a member's address; quorum
//! TLS or SASL is what holds against more).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

pub type Nonce = [u8; 16];

/// The nonces of this member's dials in progress, by the member dialed.
#[derive(Clone, Default)]
pub struct Proofs(Arc<Mutex<HashMap<Nonce, u64>>>);

/// Removes its nonce when the dial is over, whatever its outcome.
pub struct Held {
    proofs: Proofs,
    nonce: Nonce,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.proofs.0.lock().remove(&self.nonce);
    }
}

impl Proofs {
    /// A fresh nonce for a dial to `target`, registered until the returned guard drops.
    pub fn hold(&self, target: u64) -> Option<(Nonce, Held)> {
        let mut nonce = [0u8; 16];
        if !crate::auth::os_random(&mut nonce) {
            return None;
        }
        self.0.lock().insert(nonce, target);
        Some((
            nonce,
            Held {
                proofs: self.clone(),
                nonce,
            },
        ))
    }

    /// Whether this member is dialing `asker` with `nonce` right now.
    pub fn owns(&self, asker: u64, nonce: &Nonce) -> bool {
        self.0.lock().get(nonce) == Some(&asker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_proves_only_its_own_dial_and_only_while_it_lasts() {
        let p = Proofs::default();
        let (n, held) = p.hold(2).unwrap();
        assert!(p.owns(2, &n));
        assert!(!p.owns(3, &n), "another member's question");
        let mut other = n;
        other[0] ^= 1;
        assert!(!p.owns(2, &other), "a guessed nonce");
        drop(held);
        assert!(!p.owns(2, &n), "after the dial");
    }
}
