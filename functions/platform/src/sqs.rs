//! The SQS client, built once per process.
//!
//! [`client`] configures the SDK straight from the process environment, which is all a Lambda
//! function needs: Lambda sets `AWS_REGION` and the execution role's temporary credentials
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, valid for the life of the
//! execution environment). It deliberately does not use `aws-config`: its credential chain
//! (profiles, SSO, STS web identity, IMDS) adds three SDK clients to every binary (a large share of
//! the zip, whose size docs/performance.md tracks) and nothing a function uses. Operators' tools that need that chain
//! enable the `credential-chain` feature and call [`client_from_default_chain`].
//!
//! The endpoint is an explicit URL, else `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL` (what the
//! SDK's own environment loader reads). A loopback endpoint (fauxqs) gets harmless placeholder
//! region and credentials when none are set, so no AWS account is needed locally.

use std::time::Duration;

use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::config::timeout::TimeoutConfig;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};

use crate::config::optional;

pub const AWS_REGION: &str = crate::env::declared("AWS_REGION");
pub const AWS_DEFAULT_REGION: &str = crate::env::declared("AWS_DEFAULT_REGION");
pub const AWS_ACCESS_KEY_ID: &str = crate::env::declared("AWS_ACCESS_KEY_ID");
pub const AWS_SECRET_ACCESS_KEY: &str = crate::env::declared("AWS_SECRET_ACCESS_KEY");
pub const AWS_SESSION_TOKEN: &str = crate::env::declared("AWS_SESSION_TOKEN");
pub const AWS_ENDPOINT_URL_SQS: &str = crate::env::declared("AWS_ENDPOINT_URL_SQS");
pub const AWS_ENDPOINT_URL: &str = crate::env::declared("AWS_ENDPOINT_URL");

/// Why no SQS client could be configured from the environment.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SqsConfigError {
    #[error("no AWS region: set AWS_REGION (Lambda sets it) or AWS_DEFAULT_REGION")]
    MissingRegion,
    #[error(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (Lambda sets them from the \
         execution role), or use a local endpoint"
    )]
    MissingCredentials,
}

/// The SQS client from the environment (see the module docs). Fails fast, before any request,
/// when a non-local endpoint has no region or credentials.
pub fn client(explicit_endpoint: Option<&str>) -> Result<aws_sdk_sqs::Client, SqsConfigError> {
    Settings::from_lookup(explicit_endpoint, optional).map(Settings::client)
}

/// The client for a local SQS endpoint (fauxqs) used by the local pipeline, its tools and the
/// tests: placeholder region and credentials whatever the environment holds, so a developer's AWS
/// settings can never leak into a local run.
pub fn local_client(endpoint: &str) -> aws_sdk_sqs::Client {
    Settings { endpoint: Some(endpoint.to_owned()), region: LOCAL_REGION.to_owned(), credentials: local_credentials() }
        .client()
}

/// Time limits of every SQS call (the SDK has none by default): a `SendMessage` that hangs must
/// not run a record into the function's timeout. An attempt gets 3 s (a healthy send takes tens
/// of milliseconds), the whole operation with its retries 8 s, well inside the 30 s function;
/// callers with a record deadline bound the call by it as well.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
pub const OPERATION_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(8);

fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(OPERATION_ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

/// Region and credentials for a local endpoint that has none: nothing local checks them.
const LOCAL_REGION: &str = "us-east-1";

fn local_credentials() -> Credentials {
    Credentials::new("local", "local", None, None, "sophia-local")
}

/// What [`client`] reads, resolved from a variable lookup (the environment, or a test's table).
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    endpoint: Option<String>,
    region: String,
    credentials: Credentials,
}

impl Settings {
    fn from_lookup(
        explicit_endpoint: Option<&str>,
        var: impl Fn(&'static str) -> Option<String>,
    ) -> Result<Self, SqsConfigError> {
        let endpoint = explicit_endpoint
            .map(str::to_owned)
            .or_else(|| var(AWS_ENDPOINT_URL_SQS))
            .or_else(|| var(AWS_ENDPOINT_URL));
        let local = endpoint.as_deref().is_some_and(is_loopback);
        let region = match var(AWS_REGION).or_else(|| var(AWS_DEFAULT_REGION)) {
            Some(region) => region,
            None if local => LOCAL_REGION.to_owned(),
            None => return Err(SqsConfigError::MissingRegion),
        };
        let credentials = match (var(AWS_ACCESS_KEY_ID), var(AWS_SECRET_ACCESS_KEY)) {
            (Some(key), Some(secret)) => Credentials::new(key, secret, var(AWS_SESSION_TOKEN), None, "environment"),
            _ if local => local_credentials(),
            _ => return Err(SqsConfigError::MissingCredentials),
        };
        Ok(Self { endpoint, region, credentials })
    }

    fn client(self) -> aws_sdk_sqs::Client {
        let mut builder = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(self.region))
            .credentials_provider(self.credentials)
            .retry_config(RetryConfig::standard())
            .timeout_config(timeouts())
            .http_client(crate::tls::sqs_http_client());
        if let Some(url) = self.endpoint {
            builder = builder.endpoint_url(url);
        }
        aws_sdk_sqs::Client::from_conf(builder.build())
    }
}

/// The SQS client through `aws-config`'s default chain (profiles, SSO, web identity, IMDS), for
/// operators' tools run outside Lambda. A local endpoint without credentials or region gets the
/// same placeholders as [`client`].
#[cfg(feature = "credential-chain")]
pub async fn client_from_default_chain(explicit_endpoint: Option<&str>) -> aws_sdk_sqs::Client {
    let env_endpoint = optional(AWS_ENDPOINT_URL_SQS).or_else(|| optional(AWS_ENDPOINT_URL));
    let local = explicit_endpoint.or(env_endpoint.as_deref()).is_some_and(is_loopback);
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(url) = explicit_endpoint {
        loader = loader.endpoint_url(url);
    }
    if local {
        if optional(AWS_REGION).is_none() && optional(AWS_DEFAULT_REGION).is_none() {
            loader = loader.region(Region::new(LOCAL_REGION));
        }
        if optional(AWS_ACCESS_KEY_ID).is_none() {
            loader = loader.credentials_provider(local_credentials());
        }
    }
    aws_sdk_sqs::Client::new(&loader.load().await)
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_sqs::config::ProvideCredentials;

    use super::*;

    fn settings(explicit: Option<&str>, vars: &[(&'static str, &str)]) -> Result<Settings, SqsConfigError> {
        let vars: HashMap<&'static str, String> = vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        Settings::from_lookup(explicit, |name| vars.get(name).cloned())
    }

    #[tokio::test]
    async fn lambda_environment_gives_region_and_session_credentials() {
        let s = settings(
            None,
            &[
                (AWS_REGION, "eu-west-1"),
                (AWS_ACCESS_KEY_ID, "AKIAEXAMPLE"),
                (AWS_SECRET_ACCESS_KEY, "secret"),
                (AWS_SESSION_TOKEN, "token"),
            ],
        )
        .unwrap();
        assert_eq!(s.endpoint, None);
        assert_eq!(s.region, "eu-west-1");
        let creds = s.credentials.provide_credentials().await.unwrap();
        assert_eq!(creds.access_key_id(), "AKIAEXAMPLE");
        assert_eq!(creds.secret_access_key(), "secret");
        assert_eq!(creds.session_token(), Some("token"));
    }

    #[test]
    fn aws_without_region_or_credentials_is_refused() {
        assert_eq!(
            settings(None, &[(AWS_ACCESS_KEY_ID, "a"), (AWS_SECRET_ACCESS_KEY, "b")]),
            Err(SqsConfigError::MissingRegion)
        );
        assert_eq!(
            settings(None, &[(AWS_REGION, "eu-west-1"), (AWS_ACCESS_KEY_ID, "a")]),
            Err(SqsConfigError::MissingCredentials)
        );
        // A non-loopback endpoint is AWS (or a VPC endpoint): same rules.
        assert_eq!(
            settings(Some("https://sqs.eu-west-1.amazonaws.com"), &[(AWS_REGION, "eu-west-1")]),
            Err(SqsConfigError::MissingCredentials)
        );
    }

    #[tokio::test]
    async fn a_loopback_endpoint_needs_no_aws_account() {
        for (explicit, vars) in [
            (Some("http://127.0.0.1:4566"), vec![]),
            (None, vec![(AWS_ENDPOINT_URL_SQS, "http://localhost:4566")]),
            (None, vec![(AWS_ENDPOINT_URL, "http://[::1]:4566")]),
        ] {
            let s = settings(explicit, &vars).unwrap();
            assert!(s.endpoint.as_deref().is_some_and(is_loopback), "{s:?}");
            assert_eq!(s.region, "us-east-1");
            assert_eq!(s.credentials.provide_credentials().await.unwrap().access_key_id(), "local");
        }
    }

    #[test]
    fn every_call_has_a_time_limit() {
        let client = local_client("http://127.0.0.1:1");
        let t = client.config().timeout_config().expect("a timeout config");
        assert_eq!(t.operation_timeout(), Some(OPERATION_TIMEOUT));
        assert_eq!(t.operation_attempt_timeout(), Some(OPERATION_ATTEMPT_TIMEOUT));
        assert_eq!(t.connect_timeout(), Some(CONNECT_TIMEOUT));
    }

    #[test]
    fn the_sqs_specific_endpoint_wins_and_an_explicit_one_wins_over_both() {
        let vars = [(AWS_ENDPOINT_URL_SQS, "http://127.0.0.1:1"), (AWS_ENDPOINT_URL, "http://127.0.0.1:2")];
        assert_eq!(settings(None, &vars).unwrap().endpoint.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(
            settings(Some("http://127.0.0.1:3"), &vars).unwrap().endpoint.as_deref(),
            Some("http://127.0.0.1:3")
        );
    }
}
