//! A link's byte stream: plain TCP (`Either::Left`), or TLS (either end) over it
//! (`Either::Right`); tokio-util's `Either` reads and writes whichever it holds.

use tokio::net::TcpStream;
use tokio_util::either::Either;

pub type Stream = Either<TcpStream, Box<tokio_rustls::TlsStream<TcpStream>>>;

/// The certificate the other end presented (TLS only; verified by the handshake).
pub fn peer_certificate(s: &Stream) -> Option<rustls_pki_types::CertificateDer<'static>> {
    match s {
        Either::Left(_) => None,
        Either::Right(t) => t
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.clone().into_owned()),
    }
}
