//! One plain-HTTP exchange with a server on this machine (the local runner's control channel, the
//! offline OpenAI endpoint's fault interface), over the hyper stack the secrets extension client
//! already links: the local runner's drills and `sophia-ops` against the local pipeline use it.

use std::time::Duration;

/// `method url` with an optional bearer token and JSON body, answered within `limit`:
/// `(status, body)`, or why there was no answer.
pub async fn exchange(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<String>,
    limit: Duration,
) -> Result<(u16, String), String> {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let client: Client<_, Full<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut request = hyper::Request::builder().method(method).uri(url);
    if let Some(t) = token {
        request = request.header("authorization", format!("Bearer {t}"));
    }
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(Full::new(bytes::Bytes::from(body.unwrap_or_default()))).map_err(|e| e.to_string())?;
    let exchange = async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok::<_, String>((status, String::from_utf8_lossy(&bytes).into_owned()))
    };
    tokio::time::timeout(limit, exchange).await.map_err(|_| format!("no answer within {} s", limit.as_secs()))?
}
