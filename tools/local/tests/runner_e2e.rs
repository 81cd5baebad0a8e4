//! The README's first command, end to end: `sophia-local up` is started as a user starts it, the
//! demo runs, and every outcome it prints is checked again, independently, against MongoDB and
//! the queues it names in its env file. Then Ctrl-C (SIGINT) stops everything it started.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bson::{Document, doc};
use futures::TryStreamExt;
use serde_json::Value;

fn tail(path: &std::path::Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rev()
        .take(40)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_runner_brings_the_pipeline_up_and_the_demo_outcomes_hold_in_the_stores() {
    let dir = std::env::temp_dir().join(format!("sophia-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env_file = dir.join("sophia.env");
    let stderr_log = dir.join("runner.stderr");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sophia-local"))
        .args(["up", "--json", "--env-file"])
        .arg(&env_file)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_log).unwrap())
        .spawn()
        .expect("sophia-local starts");
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).find(|l| l.starts_with('{'))
    })
    .await
    .unwrap()
    .unwrap_or_else(|| panic!("no demo summary on stdout; stderr:\n{}", tail(&stderr_log)));
    let report: Value = serde_json::from_str(&line).unwrap();
    eprintln!("demo summary after {:.1} s", started.elapsed().as_secs_f64());

    // What the demo says.
    let interviews = report["interviews"].as_array().unwrap();
    assert_eq!(interviews.len(), 6);
    assert!(interviews.iter().all(|i| i["ok"] == true), "{report:#}");
    assert_eq!(report["malformed_dropped"], true);
    assert!(report["organization"]["invariant_violations"].as_array().unwrap().is_empty());

    // What the stores say, read without the demo's code.
    let env = sophia_local::envfile::read(&env_file).unwrap();
    // What it prints for the API's developers: the same values as the env file.
    let printed = std::fs::read_to_string(&stderr_log).unwrap();
    for key in
        ["INTERVIEW_COMPLETED_QUEUE_URL", "AWS_ENDPOINT_URL_SQS", "AWS_REGION", "MONGODB_URI", "MONGODB_DATABASE"]
    {
        assert!(printed.contains(&format!("\n  {key}={}\n", env[key])), "{key} printed for the API:\n{printed}");
    }
    let client = mongodb::Client::with_uri_str(&env["MONGODB_URI"]).await.unwrap();
    let db = client.database(&env["MONGODB_DATABASE"]);
    for i in interviews {
        let id = bson::oid::ObjectId::parse_str(i["interview_id"].as_str().unwrap()).unwrap();
        let scenario = i["scenario"].as_str().unwrap();
        let interview = db.collection::<Document>("interviews").find_one(doc! {"_id": id}).await.unwrap().unwrap();
        assert!(matches!(interview.get("settledAt"), Some(bson::Bson::DateTime(_))), "{scenario}: settledAt is a date");
        let ledger: Vec<Document> = db
            .collection::<Document>("creditLedger")
            .find(doc! {"reference.id": id})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let sum = |t: &str| {
            ledger
                .iter()
                .filter(|e| e.get_str("type") == Ok(t))
                .map(|e| sophia_documents::int::at(e, "amount").unwrap().unwrap())
                .sum::<i64>()
        };
        assert_eq!(sum("SETTLE"), i["consumed"].as_i64().unwrap(), "{scenario}");
        assert_eq!(sum("RELEASE"), i["released"].as_i64().unwrap(), "{scenario}");
        assert_eq!(sum("FORFEIT"), i["forfeited"].as_i64().unwrap(), "{scenario}");
        let reports: Vec<Document> = db
            .collection::<Document>("interviewReports")
            .find(doc! {"interviewId": id})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let expected_reports = match scenario {
            "failed" | "soft-deleted" => 0,
            _ => 1,
        };
        assert_eq!(reports.len(), expected_reports, "{scenario}: exactly one report for a settled completed interview");
        if let Some(r) = reports.first() {
            assert_eq!(r.get_str("status"), Ok("COMPLETED"), "{scenario}");
        }
    }
    let expected = [
        ("long", 12, 8, 0),
        ("short", 0, 5, 0),
        ("failed", 0, 10, 0),
        ("expired-lot", 2, 0, 3),
        ("soft-deleted", 5, 0, 0),
        ("duplicate", 10, 0, 0),
    ];
    for (scenario, consumed, released, forfeited) in expected {
        let i = interviews.iter().find(|i| i["scenario"] == scenario).unwrap();
        assert_eq!(
            (i["consumed"].as_i64(), i["released"].as_i64(), i["forfeited"].as_i64()),
            (Some(consumed), Some(released), Some(forfeited)),
            "{scenario}"
        );
    }
    let store = sophia_credits::CreditsStore::new(db.clone());
    assert!(sophia_credits::invariants::check_all(&store).await.unwrap().is_empty());
    let pending: Vec<Document> = db
        .collection::<Document>("outbox")
        .find(doc! {"status": "PENDING"})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(pending.is_empty(), "every report.generate was published: {pending:?}");

    let sqs = sophia_platform::sqs::local_client(&env["AWS_ENDPOINT_URL_SQS"]);
    for key in [
        "INTERVIEW_COMPLETED_DLQ_URL",
        "REPORT_GENERATE_DLQ_URL",
        "INTERVIEW_COMPLETED_QUEUE_URL",
        "REPORT_GENERATE_QUEUE_URL",
    ] {
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(&env[key])
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap();
        for (name, value) in attrs {
            assert_eq!(value, "0", "{key} {name}");
        }
    }

    // Ctrl-C stops everything: the process exits 0, the env file is removed, the ports close.
    let sqs_port: u16 = env["AWS_ENDPOINT_URL_SQS"].rsplit(':').next().unwrap().parse().unwrap();
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let until = Instant::now() + Duration::from_secs(40);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "the runner did not stop on SIGINT");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status}; stderr:\n{}", tail(&stderr_log));
    assert!(!env_file.exists(), "the env file is removed on stop");
    assert!(std::net::TcpStream::connect(("127.0.0.1", sqs_port)).is_err(), "fauxqs stopped");
    let _ = std::fs::remove_dir_all(dir);
}
