//! How many messages a queue holds (visible and in flight): the audit's DLQ check.

/// Visible + in-flight messages of a queue (0 when the attributes cannot be read is not
/// assumed: that is reported as `u64::MAX`).
pub(super) async fn queue_depth(sqs: &aws_sdk_sqs::Client, url: &str) -> u64 {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    match sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
    {
        Ok(out) => {
            let attrs = out.attributes.unwrap_or_default();
            let get = |k: A| attrs.get(&k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            get(A::ApproximateNumberOfMessages) + get(A::ApproximateNumberOfMessagesNotVisible)
        }
        Err(_) => u64::MAX,
    }
}
