//! The queue list comes from `declarations/queues.json`: a third queue declared there is created
//! by the local pipeline with its DLQ and attributes, and written under its own variables, with
//! no Rust change; `sophia-ops` accepts exactly the declared queue names. (What a third queue
//! still needs by hand, its handler and contract, is the checklist in docs/contributing.md; the
//! generated `Queue` enum makes the build stop at each of those places.)

use sophia_declarations::{DECLARATION_JSON, Declaration};
use sophia_local::queues::create_queue_set;

/// queues.json with a third queue, `audit-export`, consumed by a third function.
fn with_a_third_queue() -> Declaration {
    let mut v: serde_json::Value = serde_json::from_str(DECLARATION_JSON).unwrap();
    v["queues"].as_array_mut().unwrap().push(serde_json::json!({
        "key": "auditExport", "component": "AuditExport", "name": "audit-export", "dlqName": "audit-export-dlq",
        "queueUrlEnv": "AUDIT_EXPORT_QUEUE_URL", "description": "audit exports", "publishedByApi": false,
        "consumer": "audit-export", "visibilityTimeoutSeconds": 360,
        "messageRetentionSeconds": 345600, "maxReceiveCount": 5, "dlqMessageRetentionSeconds": 1209600,
        "batchSize": 5, "maximumBatchingWindowSeconds": 0, "reportBatchItemFailures": true,
        "requeuesTransientFailures": false, "deadLettersPermanentFailures": false,
        "dlqMeaning": "they failed every retry."
    }));
    v["functions"].as_array_mut().unwrap().push(serde_json::json!({
        "name": "audit-export", "unfinishedWorkCommand": "dlq list audit-export", "timeoutSeconds": 60, "memoryMb": 256, "subscribedTo": "auditExport", "publishesTo": []
    }));
    Declaration::parse(&v.to_string()).expect("a valid declaration")
}

#[tokio::test]
async fn a_third_declared_queue_is_created_with_its_dlq_and_attributes() {
    let decl = with_a_third_queue();
    let client = harness::sqs_client().await;
    let set = create_queue_set(&client, &harness::unique("t3"), &decl).await.unwrap();
    let keys: Vec<&str> = set.pairs().iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["interviewCompleted", "reportGenerate", "auditExport"]);
    let audit = set.pair("auditExport").unwrap();
    assert!(audit.source.name.ends_with("-audit-export") && audit.dlq.name.ends_with("-audit-export-dlq"));
    let attrs = client
        .get_queue_attributes()
        .queue_url(&audit.source.url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    let redrive: serde_json::Value =
        serde_json::from_str(&attrs[&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy]).unwrap();
    assert_eq!(redrive["deadLetterTargetArn"], audit.dlq.arn.as_str());
    assert_eq!(
        redrive["maxReceiveCount"].as_u64().or_else(|| redrive["maxReceiveCount"].as_str()?.parse().ok()),
        Some(5)
    );
    assert_eq!(attrs[&aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout], "360");
    assert_eq!(decl.queue("auditExport").unwrap().dlq_url_env(), "AUDIT_EXPORT_DLQ_URL");
}

#[test]
fn sophia_ops_accepts_exactly_the_declared_queue_names() {
    let names: Vec<&str> = sophia_ops::queues::QueueName::all().map(|q| q.as_str()).collect();
    let declared: Vec<&str> = Declaration::embedded().queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, declared);
    let err = sophia_ops::parse(["sophia-ops", "dlq", "list", "audit-export"]).unwrap_err().to_string();
    assert!(
        err.contains("interview-completed") && err.contains("report-generate"),
        "the error lists the declared names: {err}"
    );
}
