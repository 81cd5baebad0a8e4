//! The TLS policy of a MongoDB connection string: outside local mode a URI must not turn
//! TLS or its verification off. The driver honours `tls=false` / `ssl=false`,
//! `tlsAllowInvalidCertificates=true`, `tlsAllowInvalidHostnames=true` and `tlsInsecure=true`
//! (and the legacy `ssl...` spellings) as written; a `mongodb://` URI without `tls=true` is
//! plaintext (only `mongodb+srv://` turns TLS on by default). Any of these on a real database lets
//! whoever sits on the path read the transcripts, reports and the URI's own password.
//!
//! - **Local mode**: every host of the URI is a loopback address (`localhost`, `127.0.0.0/8`,
//!   `::1`) or a Unix socket. The local pipeline, nx-27017 and the tests' replica set run there;
//!   nothing is refused.
//! - **Anywhere else** the URI is refused with [`UriPolicyError`], which names the parameter and
//!   never the URI (it may hold a password).
//! - **Escape hatch** for a test database reached over the network:
//!   `MONGODB_ALLOW_INSECURE_TLS=true`. The URI is then accepted and a WARN is logged once per
//!   process naming the parameter and the hosts, never the URI.
//!
//! The check reads the URI's text, before the driver parses it: a `mongodb+srv://` URI is judged
//! without a DNS lookup, and the parameters are named as the operator wrote them (keys are
//! case-insensitive, as the connection string spec says).
//!
//! It reads the text exactly as the driver will (mongodb 3.9.1, the version in Cargo.lock:
//! its `client::options` module: `ConnectionString::parse`, `parse_options` and `ServerAddress::parse`),
//! so that no spelling the driver accepts can slip past it:
//! - the options are what follows the first `?`, split on `&` only;
//! - a key is lower-cased (`str::to_lowercase`) and never percent-decoded (an encoded key such as
//!   `%74lsInsecure` is an unknown option, which the driver refuses);
//! - a value is percent-decoded (`percent_encoding::percent_decode(..).decode_utf8_lossy()`, the
//!   same crate at the same version) before it is compared: `tlsInsecure=%74rue` is `true`;
//! - the hosts are what precedes the first `/` after the last `@` before the options; a host
//!   ending in `.sock` is a Unix domain socket.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{self, ConfigError};

/// Accept a URI that disables TLS or its verification on a non-local host (a test database only).
pub const MONGODB_ALLOW_INSECURE_TLS: &str = crate::env::declared("MONGODB_ALLOW_INSECURE_TLS");

/// Why a URI was refused. Never holds the URI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriPolicyError {
    #[error(
        "MONGODB_URI sets {parameter}, which turns TLS verification off, for a non-local host: refused (set {MONGODB_ALLOW_INSECURE_TLS}=true only for a test database)"
    )]
    InsecureTls { parameter: &'static str },
    #[error(
        "MONGODB_URI connects to a non-local host without TLS (a mongodb:// URI is plaintext unless it says tls=true): refused (add tls=true, or set {MONGODB_ALLOW_INSECURE_TLS}=true only for a test database)"
    )]
    NoTls,
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// What the policy decided about an accepted URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every host is local: TLS settings are the operator's business.
    Local,
    /// TLS on, with certificate and host name verification.
    Verified,
    /// Insecure, accepted by [`MONGODB_ALLOW_INSECURE_TLS`]: the refusal it overrode.
    AllowedInsecure(UriPolicyError),
}

/// The parameters that turn verification off when `true`, as the driver spells them (lower case).
const INSECURE_WHEN_TRUE: &[(&str, &str)] = &[
    ("tlsallowinvalidcertificates", "tlsAllowInvalidCertificates=true"),
    ("tlsallowinvalidhostnames", "tlsAllowInvalidHostnames=true"),
    ("tlsinsecure", "tlsInsecure=true"),
    ("sslallowinvalidcertificates", "sslAllowInvalidCertificates=true"),
    ("sslallowinvalidhostnames", "sslAllowInvalidHostnames=true"),
];

/// The parameters that turn TLS off when `false`.
const DISABLED_WHEN_FALSE: &[(&str, &str)] = &[("tls", "tls=false"), ("ssl", "ssl=false")];

/// The pure decision. `allow_insecure`: the escape hatch is set.
pub fn check(uri: &str, allow_insecure: bool) -> Result<Verdict, UriPolicyError> {
    if is_local(uri) {
        return Ok(Verdict::Local);
    }
    let params = options(uri);
    // The driver refuses a repeated option; should one get through, the last one is the one read.
    // Values are compared without case: the driver refuses `TRUE`, so this refuses more, never less.
    let value_is = |key: &str, wanted: &str| {
        params.iter().rev().find(|(k, _)| k == key).is_some_and(|(_, v)| v.eq_ignore_ascii_case(wanted))
    };
    let mut refusal = None;
    for (key, named) in INSECURE_WHEN_TRUE {
        if value_is(key, "true") {
            refusal = Some(UriPolicyError::InsecureTls { parameter: named });
            break;
        }
    }
    if refusal.is_none() {
        for (key, named) in DISABLED_WHEN_FALSE {
            if value_is(key, "false") {
                refusal = Some(UriPolicyError::InsecureTls { parameter: named });
                break;
            }
        }
    }
    let srv = scheme(uri).eq_ignore_ascii_case("mongodb+srv");
    let tls_on = srv || value_is("tls", "true") || value_is("ssl", "true");
    if refusal.is_none() && !tls_on {
        refusal = Some(UriPolicyError::NoTls);
    }
    match refusal {
        None => Ok(Verdict::Verified),
        Some(r) if allow_insecure => Ok(Verdict::AllowedInsecure(r)),
        Some(r) => Err(r),
    }
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// [`check`] with the escape hatch read from [`MONGODB_ALLOW_INSECURE_TLS`]; an accepted insecure
/// URI logs one WARN per process (the parameter and the hosts, never the URI).
pub fn enforce(uri: &str) -> Result<Verdict, UriPolicyError> {
    enforce_with(uri, config::flag(MONGODB_ALLOW_INSECURE_TLS, false)?)
}

/// [`enforce`] with the escape hatch given (tests, callers holding their own environment).
pub fn enforce_with(uri: &str, allow_insecure: bool) -> Result<Verdict, UriPolicyError> {
    let verdict = check(uri, allow_insecure)?;
    if let Verdict::AllowedInsecure(overridden) = &verdict
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        tracing::warn!(
            hosts = hosts(uri).join(","),
            allowedBy = MONGODB_ALLOW_INSECURE_TLS,
            reason = %overridden,
            "MongoDB connection without TLS verification accepted for a test database"
        );
    }
    Ok(verdict)
}

fn scheme(uri: &str) -> &str {
    uri.split_once("://").map_or("", |(s, _)| s)
}

/// The host list, split as the driver splits it: after the scheme, before the options (the first
/// `?`), after the credentials (the last `@`), before the database (the first `/`).
fn hosts(uri: &str) -> Vec<&str> {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let before_options = rest.split_once('?').map_or(rest, |(p, _)| p);
    let hosts_and_db = before_options.rsplit_once('@').map_or(before_options, |(_, h)| h);
    let hosts = hosts_and_db.split_once('/').map_or(hosts_and_db, |(h, _)| h);
    hosts.split(',').filter(|h| !h.is_empty()).collect()
}

/// A host (with or without its port) on this machine.
fn is_local_host(host: &str) -> bool {
    // A Unix domain socket: the driver takes any address ending in `.sock` as one (its path
    // percent-encoded); nothing else is, whatever it starts with.
    if host.ends_with(".sock") {
        return true;
    }
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None if host.matches(':').count() > 1 => host,
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Local mode: the URI names hosts and every one is local.
pub fn is_local(uri: &str) -> bool {
    let hosts = hosts(uri);
    !hosts.is_empty() && hosts.iter().all(|h| is_local_host(h))
}

/// The options as the driver reads them, in order: `(key lower-cased, value percent-decoded)`.
/// A pair without `=` is skipped (the driver refuses the whole URI for it).
fn options(uri: &str) -> Vec<(String, String)> {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let Some((_, options)) = rest.split_once('?') else { return Vec::new() };
    options
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| {
            (k.to_lowercase(), percent_encoding::percent_decode(v.as_bytes()).decode_utf8_lossy().into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REMOTE: &str = "mongodb+srv://sophia:hunter2@cluster0.example.mongodb.net/sophia";
    const REMOTE_PLAIN: &str = "mongodb://sophia:hunter2@db-0.example.net:27017,db-1.example.net:27017/sophia";

    fn refused(uri: &str) -> UriPolicyError {
        let e = check(uri, false).expect_err(uri);
        let text = e.to_string();
        assert!(!text.contains("hunter2") && !text.contains("example"), "the message never holds the URI: {text}");
        e
    }

    #[test]
    fn srv_and_tls_true_uris_are_verified() {
        assert_eq!(check(REMOTE, false), Ok(Verdict::Verified));
        assert_eq!(check(&format!("{REMOTE}?retryWrites=true&w=majority"), false), Ok(Verdict::Verified));
        assert_eq!(check(&format!("{REMOTE_PLAIN}?tls=true&replicaSet=rs0"), false), Ok(Verdict::Verified));
        assert_eq!(check(&format!("{REMOTE_PLAIN}?ssl=true"), false), Ok(Verdict::Verified));
        assert_eq!(
            check(&format!("{REMOTE_PLAIN}?TLS=TRUE"), false),
            Ok(Verdict::Verified),
            "keys and values in any case"
        );
        assert_eq!(check(&format!("{REMOTE}?tlsAllowInvalidCertificates=false"), false), Ok(Verdict::Verified));
    }

    #[test]
    fn tls_false_is_refused() {
        assert_eq!(refused(&format!("{REMOTE}?tls=false")), UriPolicyError::InsecureTls { parameter: "tls=false" });
    }

    #[test]
    fn ssl_false_is_refused() {
        assert_eq!(refused(&format!("{REMOTE}?ssl=false")), UriPolicyError::InsecureTls { parameter: "ssl=false" });
    }

    #[test]
    fn tls_allow_invalid_certificates_is_refused() {
        let uri = format!("{REMOTE}?retryWrites=true&tlsAllowInvalidCertificates=true");
        assert_eq!(refused(&uri), UriPolicyError::InsecureTls { parameter: "tlsAllowInvalidCertificates=true" });
        let lower = format!("{REMOTE_PLAIN}?tls=true&tlsallowinvalidcertificates=TRUE");
        assert_eq!(refused(&lower), UriPolicyError::InsecureTls { parameter: "tlsAllowInvalidCertificates=true" });
    }

    #[test]
    fn tls_allow_invalid_hostnames_is_refused() {
        let uri = format!("{REMOTE}?tlsAllowInvalidHostnames=true");
        assert_eq!(refused(&uri), UriPolicyError::InsecureTls { parameter: "tlsAllowInvalidHostnames=true" });
    }

    #[test]
    fn tls_insecure_is_refused() {
        assert_eq!(
            refused(&format!("{REMOTE}?tlsInsecure=true")),
            UriPolicyError::InsecureTls { parameter: "tlsInsecure=true" }
        );
    }

    #[test]
    fn legacy_ssl_spellings_are_refused() {
        assert_eq!(
            refused(&format!("{REMOTE}?sslAllowInvalidCertificates=true")),
            UriPolicyError::InsecureTls { parameter: "sslAllowInvalidCertificates=true" }
        );
        assert_eq!(
            refused(&format!("{REMOTE}?sslAllowInvalidHostnames=true")),
            UriPolicyError::InsecureTls { parameter: "sslAllowInvalidHostnames=true" }
        );
    }

    #[test]
    fn a_plain_mongodb_uri_to_a_remote_host_is_refused_as_plaintext() {
        assert_eq!(refused(REMOTE_PLAIN), UriPolicyError::NoTls);
        assert_eq!(refused(&format!("{REMOTE_PLAIN}?replicaSet=rs0")), UriPolicyError::NoTls);
        // The last occurrence of a key wins, as in the driver.
        assert_eq!(
            refused(&format!("{REMOTE_PLAIN}?tls=true&tls=false")),
            UriPolicyError::InsecureTls { parameter: "tls=false" }
        );
    }

    #[test]
    fn loopback_hosts_are_local_mode_whatever_the_tls_settings() {
        for uri in [
            "mongodb://127.0.0.1:27017/",
            "mongodb://localhost:27017/?replicaSet=rs0&directConnection=true",
            "mongodb://LOCALHOST/?tls=false",
            "mongodb://127.0.0.2:40001/?tls=true&tlsAllowInvalidCertificates=true",
            "mongodb://[::1]:27017/?tlsInsecure=true",
            "mongodb://u:p@127.0.0.1:1,localhost:2/db",
            "mongodb://%2Ftmp%2Fmongodb-27017.sock/?tls=false",
        ] {
            assert_eq!(check(uri, false), Ok(Verdict::Local), "{uri}");
        }
    }

    #[test]
    fn one_remote_host_among_local_ones_is_not_local_mode() {
        assert_eq!(
            refused("mongodb://127.0.0.1:27017,db.example.net:27017/?tls=false"),
            UriPolicyError::InsecureTls { parameter: "tls=false" }
        );
        assert!(!is_local("mongodb://localhost.example.net/"));
        assert!(!is_local("mongodb://10.0.0.5:27017/"));
        assert!(!is_local("mongodb:///"));
    }

    /// What the driver itself makes of `uri` (mongodb's own parser, no connection): `None` when it
    /// refuses the URI, else whether it would connect without TLS or without certificate checks.
    fn driver_is_insecure(uri: &str) -> Option<bool> {
        use mongodb::options::{ConnectionString, HostInfo, Tls};
        let parsed = ConnectionString::parse(uri).ok()?;
        let srv = matches!(parsed.host_info, HostInfo::DnsRecord(_));
        Some(match parsed.tls {
            None => !srv,
            Some(Tls::Disabled) => true,
            Some(Tls::Enabled(options)) => options.allow_invalid_certificates == Some(true),
        })
    }

    #[test]
    fn percent_encoded_values_are_decoded_as_the_driver_decodes_them() {
        for (uri, parameter) in [
            (format!("{REMOTE_PLAIN}?tls=true&tlsInsecure=%74rue"), "tlsInsecure=true"),
            (format!("{REMOTE_PLAIN}?tls=true&tlsInsecure=%74%72%75%65"), "tlsInsecure=true"),
            (format!("{REMOTE}?tlsInsecure=tru%65"), "tlsInsecure=true"),
            (format!("{REMOTE}?tlsAllowInvalidCertificates=%74rue"), "tlsAllowInvalidCertificates=true"),
            (format!("{REMOTE}?TLSINSECURE=true"), "tlsInsecure=true"),
            (format!("{REMOTE}?tls=%66alse"), "tls=false"),
            (format!("{REMOTE}?ssl=f%61lse"), "ssl=false"),
        ] {
            assert_eq!(driver_is_insecure(&uri), Some(true), "the driver reads {uri} as insecure");
            assert_eq!(refused(&uri), UriPolicyError::InsecureTls { parameter }, "{uri}");
        }
        // An encoded `true` turns TLS on for the driver, and for the policy.
        let on = format!("{REMOTE_PLAIN}?tls=%74rue");
        assert_eq!(driver_is_insecure(&on), Some(false));
        assert_eq!(check(&on, false), Ok(Verdict::Verified));
        // `+` is not a space to the driver (not form encoding): `tls=true+` is no boolean.
        assert_eq!(driver_is_insecure(&format!("{REMOTE_PLAIN}?tls=true+")), None);
    }

    #[test]
    fn percent_encoded_keys_are_not_decoded_and_the_driver_refuses_them() {
        // The driver lower-cases a key but never decodes it: `%74lsInsecure` is an unknown option
        // and the whole URI is refused, so no encoded key can turn verification off.
        for uri in [
            format!("{REMOTE}?%74lsInsecure=true"),
            format!("{REMOTE}?tls%49nsecure=true"),
            format!("{REMOTE_PLAIN}?tls=true&%74lsAllowInvalidCertificates=true"),
            format!("{REMOTE_PLAIN}?%74ls=false"),
        ] {
            assert_eq!(driver_is_insecure(&uri), None, "the driver refuses {uri}");
        }
    }

    #[test]
    fn hosts_are_split_as_the_driver_splits_them() {
        // A percent-encoded host is not a Unix socket unless it ends in `.sock` (the driver's rule).
        assert!(!is_local("mongodb://%6cocalhost:27017/"));
        assert_eq!(
            refused("mongodb://%6cocalhost:27017/?tls=false"),
            UriPolicyError::InsecureTls { parameter: "tls=false" }
        );
        // The credentials end at the LAST `@` before the options, as the driver reads them.
        assert!(!is_local("mongodb://localhost:1@db.example.net:27017/?tls=true"));
        assert_eq!(hosts("mongodb://u:p%40ss@db.example.net,localhost/db?x=@y"), vec!["db.example.net", "localhost"]);
    }

    #[test]
    fn the_policy_refuses_every_uri_the_driver_reads_as_insecure() {
        // Against the driver's own parser, over spellings of every parameter.
        let mut cases = 0;
        for base in [REMOTE, REMOTE_PLAIN] {
            for query in [
                "",
                "?tls=true",
                "?tls=false",
                "?ssl=true",
                "?ssl=false",
                "?tls=%74rue",
                "?tls=%66alse",
                "?tlsInsecure=true",
                "?tlsInsecure=%74rue",
                "?tlsInsecure=false",
                "?tls=true&tlsInsecure=%74rue",
                "?tlsAllowInvalidCertificates=true",
                "?tlsAllowInvalidCertificates=tru%65",
                "?tls=true&tlsAllowInvalidCertificates=false",
                "?TLS=true&TLSINSECURE=%74rue",
                "?tls=true&%74lsInsecure=true",
                "?retryWrites=true&tls=true",
            ] {
                let uri = format!("{base}{query}");
                // The policy may refuse more (a `mongodb://` URI that turns TLS on only through
                // `tlsInsecure=false`), never less.
                if driver_is_insecure(&uri) == Some(true) {
                    cases += 1;
                    assert!(
                        check(&uri, false).is_err(),
                        "{uri}: the driver connects insecurely, the policy accepted it"
                    );
                }
            }
        }
        assert!(cases >= 15, "the driver read {cases} of the URIs as insecure");
    }

    #[test]
    fn the_escape_hatch_accepts_and_names_what_it_overrode() {
        let uri = format!("{REMOTE}?tlsInsecure=true");
        assert_eq!(
            enforce_with(&uri, true),
            Ok(Verdict::AllowedInsecure(UriPolicyError::InsecureTls { parameter: "tlsInsecure=true" }))
        );
        assert_eq!(enforce_with(REMOTE_PLAIN, true), Ok(Verdict::AllowedInsecure(UriPolicyError::NoTls)));
        assert_eq!(enforce_with(REMOTE, true), Ok(Verdict::Verified), "a secure URI stays verified");
        assert!(enforce_with(&uri, false).is_err());
    }

    /// Where the URI is parsed for every client (`mongo::client_options`, used by
    /// `Mongo::connect`): the policy runs first, and the error names the parameter only.
    #[tokio::test]
    async fn the_client_refuses_an_insecure_remote_uri_without_echoing_it() {
        let uri = "mongodb://sophia:hunter2@db-0.example.net:27017/sophia?tls=true&tlsInsecure=true";
        let e = crate::mongo::client_options(uri).await.expect_err("refused before the driver parses it");
        assert!(matches!(
            e,
            crate::mongo::MongoError::InsecureUri(UriPolicyError::InsecureTls { parameter: "tlsInsecure=true" })
        ));
        let text = e.to_string();
        assert!(text.contains("tlsInsecure=true") && text.contains(MONGODB_ALLOW_INSECURE_TLS), "{text}");
        assert!(!text.contains("hunter2") && !text.contains("db-0.example.net"), "{text}");
        assert!(crate::mongo::client_options("mongodb://127.0.0.1:27017/?tls=false").await.is_ok(), "local mode");
    }
}
