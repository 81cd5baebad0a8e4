//! The SQS client, built once per process.
//!
//! On AWS it uses the default credential and region chain. For local use the endpoint comes from
//! `AWS_ENDPOINT_URL_SQS` (read by the SDK itself) or an explicit URL; a local endpoint without
//! credentials or region gets harmless placeholders so no AWS account is needed.

use aws_config::{BehaviorVersion, Region};
use aws_sdk_sqs::config::Credentials;

pub async fn client(explicit_endpoint: Option<&str>) -> aws_sdk_sqs::Client {
    let env_endpoint =
        crate::config::optional("AWS_ENDPOINT_URL_SQS").or_else(|| crate::config::optional("AWS_ENDPOINT_URL"));
    let local = explicit_endpoint.is_some() || env_endpoint.as_deref().is_some_and(is_loopback);
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(url) = explicit_endpoint {
        loader = loader.endpoint_url(url);
    }
    if local {
        if crate::config::optional("AWS_REGION").is_none() && crate::config::optional("AWS_DEFAULT_REGION").is_none() {
            loader = loader.region(Region::new("us-east-1"));
        }
        if crate::config::optional("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(Credentials::new("local", "local", None, None, "sophia-local"));
        }
    }
    aws_sdk_sqs::Client::new(&loader.load().await)
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}
