//! The escape hatch for a test database (`MONGODB_ALLOW_INSECURE_TLS=true`) is logged:
//! one WARN per process, naming the parameter it overrode and the hosts, never the URI (which
//! may hold a password). Captured by the harness's process-wide JSON subscriber.

use harness::logs::LogCapture;
use sophia_platform::uri_policy::{UriPolicyError, Verdict, enforce_with};

#[test]
fn an_accepted_insecure_uri_logs_one_warn_without_the_uri() {
    let logs = LogCapture::global();
    let uri =
        "mongodb://sophia:hunter2@test-db.internal.example:27017/sophia?tls=true&tlsAllowInvalidCertificates=true";
    for _ in 0..3 {
        assert_eq!(
            enforce_with(uri, true),
            Ok(Verdict::AllowedInsecure(UriPolicyError::InsecureTls { parameter: "tlsAllowInvalidCertificates=true" }))
        );
    }
    let warns: Vec<_> = logs
        .lines()
        .into_iter()
        .filter(|l| l["level"] == "WARN" && l["allowedBy"] == "MONGODB_ALLOW_INSECURE_TLS")
        .collect();
    assert_eq!(warns.len(), 1, "once per process: {warns:#?}");
    assert_eq!(warns[0]["hosts"], "test-db.internal.example:27017");
    assert!(
        warns[0]["reason"].as_str().is_some_and(|r| r.contains("tlsAllowInvalidCertificates=true")),
        "{}",
        warns[0]
    );
    assert!(!logs.text().contains("hunter2"), "the URI's password is never logged");
    assert!(enforce_with(uri, false).is_err(), "without the escape hatch the same URI is refused");
}
