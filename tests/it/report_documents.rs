//! Documents written by other services (docs/design.md): interviews and interviewReports shaped as
//! Mongoose (Int32, `__v`, timestamps), the mongo shell (every number a Double, explicit
//! `null`s) and older code (no `attemptCount`, no lease) write them, through the real handler
//! against nx-27017 (or `SOPHIA_TEST_MONGODB_URI`). Table-driven: each row is one document and
//! the outcome the read model must give it.

use crate::support::report as report_support;

use report_support::*;
use sophia_documents::int;

/// How a delivery for one corpus document must end.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// A COMPLETED report written from a model reply, at this attempt.
    Model { attempt: i64 },
    /// A COMPLETED `insufficient_evidence` report, no model call.
    Insufficient,
    /// Acknowledged, nothing written, no model call (a live holder, or out of attempts).
    Untouched { outcome: Outcome },
    /// The report FAILED with `invalid_document` naming this field; the record is retried.
    InvalidDocument { field: &'static str },
}

fn hours_ago(h: i64) -> DateTime {
    in_ms(-h * 3_600_000)
}

/// The fixture interview with `edit` applied to its raw document.
fn interview(edit: impl FnOnce(&mut Document)) -> Document {
    let mut d = InterviewFixture::new(org()).document().clone();
    edit(&mut d);
    d
}

fn turns(turns: &[(Bson, Bson)]) -> Bson {
    Bson::Array(turns.iter().map(|(s, t)| Bson::Document(doc! {"speaker": s.clone(), "text": t.clone()})).collect())
}

fn answer(n: usize) -> Bson {
    Bson::String(format!("{SECRET_ANSWER} and then I measured the result for week {n} of the rollout."))
}

async fn run_case(env: &Env, name: &str, raw: Document, report: Option<Document>, expect: Expect) {
    let ids = (
        InterviewId::new(raw.get_object_id("_id").unwrap()),
        OrganizationId::new(raw.get_object_id("organizationId").unwrap()),
    );
    env.mongo.db.collection::<Document>("interviews").insert_one(&raw).await.unwrap();
    if let Some(mut r) = report {
        r.insert("interviewId", ids.0.oid());
        env.mongo.db.collection::<Document>(INTERVIEW_REPORTS).insert_one(r).await.unwrap();
    }
    let before_calls = env.fake.request_count();
    if matches!(expect, Expect::Model { .. }) {
        env.fake.push(Behaviour::Report);
    }
    let before = stored(env, ids.0).await;
    let outcome = deliver(env, ids).await;
    let after = stored(env, ids.0).await;
    let calls = env.fake.request_count() - before_calls;
    let count = |d: &Document| d.get("attemptCount").map(|v| int::from_bson(v).unwrap_or(-1));
    match expect {
        Expect::Model { attempt } => {
            let d = after.unwrap_or_else(|| panic!("{name}: no report"));
            assert_eq!((outcome, calls), (Outcome::Processed, 1), "{name}: {d}");
            assert_eq!(d.get_str("status").unwrap(), "COMPLETED", "{name}: {d}");
            assert_eq!(count(&d), Some(attempt), "{name}: {d}");
            let generation = d.get_document("generation").unwrap_or_else(|_| panic!("{name}: {d}"));
            assert_eq!(generation.get_str("source").unwrap(), "model", "{name}");
        }
        Expect::Insufficient => {
            let d = after.unwrap_or_else(|| panic!("{name}: no report"));
            assert_eq!((outcome, calls), (Outcome::Processed, 0), "{name}: {d}");
            assert_eq!(d.get_str("status").unwrap(), "COMPLETED", "{name}");
            let report = d.get_document("report").unwrap();
            assert_eq!(report.get_str("recommendation").unwrap(), "insufficient_evidence", "{name}");
        }
        Expect::Untouched { outcome: expected } => {
            assert_eq!((outcome, calls), (expected, 0), "{name}");
            if let (Some(b), Some(a)) = (&before, &after) {
                assert_eq!(b.get("attemptCount"), a.get("attemptCount"), "{name}: no attempt taken");
            }
        }
        Expect::InvalidDocument { field } => {
            let d = after.unwrap_or_else(|| panic!("{name}: no report"));
            assert_eq!((outcome, calls), (Outcome::Failed, 0), "{name}: retried, then the DLQ: {d}");
            assert_eq!(d.get_str("status").unwrap(), "FAILED", "{name}: {d}");
            assert_eq!(d.get_str("errorKind").ok(), Some("invalid_document"), "{name}: {d}");
            let last_error = d.get_str("lastError").unwrap();
            assert!(last_error.contains(&format!("`{field}`")), "{name}: {field} not named in {last_error}");
            assert!(!last_error.contains("MARKER"), "{name}: a value leaked into lastError: {last_error}");
        }
    }
}

/// Interviews as the API (Mongoose), the mongo shell and older code write them.
#[tokio::test]
async fn interviews_written_by_other_services_are_read_as_they_are_written() {
    let env = env().await;
    let good_turns = || turns(&[("candidate".into(), answer(1)), ("candidate".into(), answer(2))]);
    let cases: Vec<(&str, Document, Expect)> = vec![
        (
            "mongoose: Int32 duration, __v, timestamps",
            interview(|d| {
                d.insert("__v", 0_i32);
                d.insert("createdAt", hours_ago(2));
                d.insert("updatedAt", hours_ago(1));
            }),
            Expect::Model { attempt: 1 },
        ),
        (
            "mongo shell: Double duration, explicit nulls",
            interview(|d| {
                d.insert("durationSeconds", 754.0_f64);
                d.insert("deletedAt", Bson::Null);
                d.insert("credibility", Bson::Null);
            }),
            Expect::Model { attempt: 1 },
        ),
        ("Int64 duration", interview(|d| drop(d.insert("durationSeconds", 754_i64))), Expect::Model { attempt: 1 }),
        (
            "a Chinese transcript (no spaces between words)",
            interview(|d| {
                let zh = Bson::String("我们把账单表从MySQL迁移到Postgres，并且每晚核对每个租户的校验和。".into());
                d.insert(
                    "proctoring",
                    doc! {"transcript": turns(&[("candidate".into(), zh.clone()), ("candidate".into(), zh)])},
                );
            }),
            Expect::Model { attempt: 1 },
        ),
        ("credibility absent", interview(|d| drop(d.remove("credibility"))), Expect::Model { attempt: 1 }),
        ("snapshot null", interview(|d| drop(d.insert("snapshot", Bson::Null))), Expect::Model { attempt: 1 }),
        ("snapshot absent", interview(|d| drop(d.remove("snapshot"))), Expect::Model { attempt: 1 }),
        (
            "snapshot fields null",
            interview(|d| {
                d.insert(
                    "snapshot",
                    doc! {"role": Bson::Null, "skills": Bson::Null, "questions": Bson::Null, "resumeText": Bson::Null},
                );
            }),
            Expect::Model { attempt: 1 },
        ),
        (
            "a turn's text and speaker null or absent",
            interview(|d| {
                let mut t = good_turns();
                if let Bson::Array(a) = &mut t {
                    a.push(Bson::Document(doc! {"speaker": Bson::Null, "text": Bson::Null}));
                    a.push(Bson::Document(doc! {"speaker": "candidate"}));
                    a.push(Bson::Document(doc! {"text": "a turn without a speaker"}));
                }
                d.insert("proctoring", doc! {"transcript": t});
            }),
            Expect::Model { attempt: 1 },
        ),
        (
            "unknown extra fields",
            interview(|d| {
                d.insert("metadata", doc! {"source": "ats", "tags": ["a"]});
                d.insert("proctoring", doc! {"transcript": good_turns(), "webcam": true, "flags": []});
            }),
            Expect::Model { attempt: 1 },
        ),
        ("proctoring null", interview(|d| drop(d.insert("proctoring", Bson::Null))), Expect::Insufficient),
        ("proctoring absent", interview(|d| drop(d.remove("proctoring"))), Expect::Insufficient),
        ("transcript absent", interview(|d| drop(d.insert("proctoring", doc! {}))), Expect::Insufficient),
        (
            "transcript null",
            interview(|d| drop(d.insert("proctoring", doc! {"transcript": Bson::Null}))),
            Expect::Insufficient,
        ),
        ("duration null", interview(|d| drop(d.insert("durationSeconds", Bson::Null))), Expect::Insufficient),
        ("duration absent", interview(|d| drop(d.remove("durationSeconds"))), Expect::Insufficient),
        (
            "transcript as one string",
            interview(|d| drop(d.insert("proctoring", doc! {"transcript": "MARKER the whole transcript"}))),
            Expect::InvalidDocument { field: "proctoring.transcript" },
        ),
        (
            "a turn's text as a document",
            interview(|d| {
                d.insert("proctoring", doc! {"transcript": [{"speaker": "candidate", "text": {"said": "MARKER"}}]});
            }),
            Expect::InvalidDocument { field: "proctoring.transcript[0].text" },
        ),
        (
            "duration as a string",
            interview(|d| drop(d.insert("durationSeconds", "MARKER 754"))),
            Expect::InvalidDocument { field: "durationSeconds" },
        ),
    ];
    for (name, raw, expect) in cases {
        run_case(&env, name, raw, None, expect).await;
    }
}

/// Report documents found before the first delivery, as the API, the shell and older code of
/// this service leave them.
#[tokio::test]
async fn report_documents_written_by_other_services_are_claimed_or_left_as_they_should_be() {
    let env = env().await;
    migrations::apply(&env.mongo.db).await.unwrap();
    let fresh = || interview(|_| {});
    let placeholder = |extra: Document| {
        let mut d =
            doc! {"organizationId": bson::oid::ObjectId::new(), "status": "NOT_STARTED", "createdAt": hours_ago(1)};
        d.extend(extra);
        d
    };
    let cases: Vec<(&str, Document, Expect)> = vec![
        ("API placeholder without attemptCount", placeholder(doc! {}), Expect::Model { attempt: 1 }),
        ("attemptCount null", placeholder(doc! {"attemptCount": Bson::Null}), Expect::Model { attempt: 1 }),
        ("attemptCount Double 0", placeholder(doc! {"attemptCount": 0.0}), Expect::Model { attempt: 1 }),
        (
            "without organizationId, with __v",
            doc! {"status": "NOT_STARTED", "__v": 0_i32, "createdAt": hours_ago(1)},
            Expect::Model { attempt: 1 },
        ),
        (
            "FAILED at Double 2 (shell)",
            doc! {"status": "FAILED", "attemptCount": 2.0, "lastError": "x", "updatedAt": hours_ago(1)},
            Expect::Model { attempt: 3 },
        ),
        (
            "FAILED at Int64 3: out of attempts",
            doc! {"status": "FAILED", "attemptCount": 3_i64, "updatedAt": hours_ago(1)},
            Expect::Untouched { outcome: Outcome::Processed },
        ),
        (
            "PROCESSING without a lease, updated an hour ago",
            doc! {"status": "PROCESSING", "attemptCount": 1_i32, "createdAt": hours_ago(2), "updatedAt": hours_ago(1)},
            Expect::Model { attempt: 2 },
        ),
        (
            "PROCESSING with a null lease, only createdAt, an hour ago",
            doc! {"status": "PROCESSING", "attemptCount": 1.0, "leaseExpiresAt": Bson::Null, "createdAt": hours_ago(1)},
            Expect::Model { attempt: 2 },
        ),
        (
            "PROCESSING without a lease, updated just now: held",
            doc! {"status": "PROCESSING", "attemptCount": 1_i32, "createdAt": hours_ago(1), "updatedAt": DateTime::now()},
            Expect::Untouched { outcome: Outcome::Processed },
        ),
        (
            "PROCESSING with a null lease, created just now: held",
            doc! {"status": "PROCESSING", "leaseExpiresAt": Bson::Null, "updatedAt": Bson::Null, "createdAt": DateTime::now()},
            Expect::Untouched { outcome: Outcome::Processed },
        ),
        (
            "attemptCount a string",
            doc! {"status": "FAILED", "attemptCount": "two MARKER", "updatedAt": hours_ago(1)},
            Expect::InvalidDocument { field: "attemptCount" },
        ),
        (
            "COMPLETED with an unreadable attemptCount: done",
            doc! {"status": "COMPLETED", "attemptCount": "one", "report": {"summary": "legacy"}, "updatedAt": hours_ago(1)},
            Expect::Untouched { outcome: Outcome::Processed },
        ),
        (
            "an unknown status",
            doc! {"status": "IN_PROGRESS", "attemptCount": 1_i32, "updatedAt": hours_ago(1)},
            Expect::InvalidDocument { field: "status" },
        ),
    ];
    for (name, report, expect) in cases {
        run_case(&env, name, fresh(), Some(report), expect).await;
    }
}
