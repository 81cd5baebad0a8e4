//! What the function accepts besides an SQS batch: the deploy's one-shot `{"sophiaOps":"migrate"}`
//! (the stack's `aws.lambda.Invocation`, infra-pulumi/src/stack.ts), which creates the MongoDB
//! indexes from inside the stage, where the database is reachable, before any event source mapping
//! delivers a message. It runs the same migrations as `sophia-ops migrate` (credits, then reports);
//! both are idempotent (`createIndexes` with an identical specification is a no-op).
//!
//! Parse, don't validate: the payload becomes an [`Invocation`] at the boundary. A body with a
//! `sophiaOps` key is an ops request and nothing else (an unknown command or an extra field is a
//! clear error, never an empty SQS batch); any other body is an SQS event, with serde's own errors.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use mongodb::Database;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use sophia_credits::model::CREDIT_LEDGER;
use sophia_platform::indexes::RequiredIndex;

/// The key that marks an ops request.
pub const OPS_KEY: &str = "sophiaOps";

/// The unique index settlement relies on: the ledger's idempotency key (one entry per reference,
/// type and lot). Checked once per cold start; created by [`migrate`] / `sophia-ops migrate`.
pub const REQUIRED_INDEXES: &[RequiredIndex] =
    &[RequiredIndex { collection: CREDIT_LEDGER, keys: &["reference.kind", "reference.id", "type", "lotId"] }];

/// An ops command (the value of `sophiaOps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpsCommand {
    Migrate,
}

/// `{"sophiaOps": "<command>"}`, nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsRequest {
    #[serde(rename = "sophiaOps")]
    pub command: OpsCommand,
}

/// One invocation's payload.
#[derive(Debug, Clone)]
pub enum Invocation {
    Sqs(SqsEvent),
    Ops(OpsRequest),
}

impl<'de> Deserialize<'de> for Invocation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.get(OPS_KEY).is_some() {
            OpsRequest::deserialize(value)
                .map(Invocation::Ops)
                .map_err(|e| D::Error::custom(format!("not a valid ops request ({OPS_KEY}: \"migrate\"): {e}")))
        } else {
            SqsEvent::deserialize(value).map(Invocation::Sqs).map_err(D::Error::custom)
        }
    }
}

/// What a migration did: the database and the indexes now in place (names only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Migrated {
    pub migrated: String,
    pub indexes: Vec<String>,
}

/// The answer to an [`Invocation`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Sqs(SqsBatchResponse),
    Migrated(Migrated),
}

/// Runs both domains' migrations on `db` (what `sophia-ops migrate` runs), in the same order.
pub async fn migrate(db: &Database) -> Result<Migrated, sophia_credits::BoxError> {
    sophia_credits::migrations::apply(db).await?;
    sophia_reports::migrations::apply(db).await?;
    let mut indexes: Vec<String> =
        sophia_credits::migrations::INDEXES.iter().map(|(_, name, _, _)| (*name).to_owned()).collect();
    indexes.push(sophia_credits::migrations::OUTBOX_TTL_INDEX.to_owned());
    indexes.push(sophia_reports::migrations::INTERVIEW_ID_UNIQUE.to_owned());
    tracing::info!(database = db.name(), indexes = indexes.len(), "migrations applied");
    Ok(Migrated { migrated: db.name().to_owned(), indexes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sophia_ops_body_is_an_ops_request_and_anything_else_an_sqs_event() {
        let ops: Invocation = serde_json::from_str(r#"{"sophiaOps":"migrate"}"#).unwrap();
        assert!(matches!(ops, Invocation::Ops(OpsRequest { command: OpsCommand::Migrate })));
        let sqs: Invocation = serde_json::from_str(r#"{"Records":[]}"#).unwrap();
        assert!(matches!(sqs, Invocation::Sqs(e) if e.records.is_empty()));
    }

    #[test]
    fn an_unknown_command_or_an_extra_field_is_refused_by_name() {
        let e = serde_json::from_str::<Invocation>(r#"{"sophiaOps":"drop"}"#).unwrap_err().to_string();
        assert!(e.contains("not a valid ops request") && e.contains("drop"), "{e}");
        let e = serde_json::from_str::<Invocation>(r#"{"sophiaOps":"migrate","Records":[]}"#).unwrap_err().to_string();
        assert!(e.contains("unknown field") && e.contains("Records"), "{e}");
    }

    #[test]
    fn the_required_index_is_the_ledgers_unique_idempotency_key_the_migration_creates() {
        let unique: Vec<(&str, Vec<&str>)> = sophia_credits::migrations::INDEXES
            .iter()
            .filter(|(_, _, _, unique)| *unique)
            .map(|(collection, _, keys, _)| (*collection, keys.split(',').collect()))
            .collect();
        let required: Vec<(&str, Vec<&str>)> =
            REQUIRED_INDEXES.iter().map(|r| (r.collection, r.keys.to_vec())).collect();
        assert_eq!(required, unique);
    }
}
