//! The network edge: one reader and one writer task per client connection, and the core
//! thread's own write to a plaintext socket (`direct`: what the engine staged in a turn, which
//! the core's runtime has it write at the turn's end). Owns sockets and framing; turns bytes
//! into decoded requests for the core and the core's encoded frames back into bytes. May not
//! touch: state, sessions or the log — everything it knows arrives from the core as an `Out`,
//! everything it learns goes to the core as a `CoreMsg`.

pub mod connection;
pub mod direct;
pub mod tls;
