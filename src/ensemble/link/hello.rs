//! The frames of a link's handshake, before any RPC: the dialer's greeting, SASL tokens
//! both ways, and the answer of the member dialed. Every one is at most
//! `PEER_HANDSHAKE_FRAME` bytes.

use super::proof::Nonce;
use serde::{Deserialize, Serialize};

/// Written first by every dialer; a frame that does not start so (an older member, a stray
/// client) is refused.
pub const MAGIC: [u8; 4] = *b"PLSD";

/// The peer protocol's version. 1: the first with a handshake (every link authenticated).
pub const VERSION: u16 = 1;

/// The dialer's first frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Greeting {
    /// A link for RPCs.
    Link(Hello),
    /// Another member asks whether this one is dialing it with `nonce` (proof.rs).
    Prove {
        magic: [u8; 4],
        asker: u64,
        prover: u64,
        nonce: Nonce,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub magic: [u8; 4],
    pub version: u16,
    /// The member dialing.
    pub from: u64,
    /// The member it means to reach.
    pub to: u64,
    /// For the proof by connecting back (links with no credential).
    pub nonce: Nonce,
    /// Its peer address: where a server that no configuration names yet (one joining with
    /// reconfigEnabled) is connected back to.
    pub listen: Option<String>,
    /// It will run a SASL exchange if the member dialed asks for one.
    pub sasl: bool,
}

/// The member dialed's frames.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// The link is authenticated: RPCs follow.
    Welcome,
    /// A SASL token: the challenge, then the rspauth.
    Sasl(Vec<u8>),
    /// The answer to `Greeting::Prove`.
    Proven(bool),
    /// Why the link is refused; it is closed after.
    Refused(String),
}

/// The dialer's SASL response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response(pub Vec<u8>);
