//! One TLS crypto provider for every client of a binary: rustls with ring.
//!
//! Three clients speak TLS: the SQS SDK's HTTP client, the MongoDB driver and reqwest (OpenAI).
//! Each would pick its own default, and the SDK's and reqwest's default is aws-lc-rs: linking it
//! made every zip 0.16-0.25 MB larger (docs/performance.md, "Zip size"). Each is pointed at ring:
//!
//! - SQS: [`sqs_http_client`], aws-smithy-http-client's rustls connector in ring mode, set on the
//!   SDK config by [`crate::sqs`] (the SDK's own default client is not compiled in);
//! - MongoDB: the driver's `rustls-tls` feature, which builds its TLS config with ring explicitly;
//! - reqwest: built with `rustls-no-provider`, it uses the process-default provider, which
//!   [`install_default_provider`] sets (idempotent; the reports crate calls it before building its
//!   client, so no binary can forget it).
//!
//! What ring does not offer: the post-quantum hybrid key exchange (X25519MLKEM768) that rustls
//! offers first with aws-lc, and that endpoints such as OpenAI's accept. TLS 1.3 with X25519
//! remains, which protects the traffic today; what is given up is protection against a future
//! quantum computer decrypting recorded traffic, and report-generate sends candidate transcripts
//! to OpenAI. That is a decision for the team (docs/performance.md, "Zip size"): the way back for the OpenAI
//! call alone is reqwest's `rustls` feature in sophia-reports without
//! [`install_default_provider`] (report-generate's zip grows by about 0.2 MB).

use aws_sdk_sqs::config::SharedHttpClient;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};

/// Makes ring the process-default rustls provider, for clients that take the default (reqwest).
/// Safe to call any number of times; a provider installed earlier (by a test, say) stays.
pub fn install_default_provider() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
}

/// The HTTPS client of the AWS SDK clients: rustls with ring, certificates from the system's
/// store (on Lambda, the runtime image's CA bundle).
pub fn sqs_http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().tls_provider(tls::Provider::Rustls(CryptoMode::Ring)).build_https()
}
