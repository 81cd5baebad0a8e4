//! The indexes the credits flow relies on, created by an explicit, idempotent step (the ops CLI,
//! the local runner and the tests call [`apply`]; handlers never do).

use std::time::Duration;

use bson::Document;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

use crate::error::CreditsError;
use crate::model::{CREDIT_LEDGER, CREDIT_LOTS, INTERVIEWS, OUTBOX};

/// `(collection, index name, keys, unique)`.
pub const INDEXES: &[(&str, &str, &str, bool)] = &[
    (CREDIT_LEDGER, "ledger_idempotency", "reference.kind,reference.id,type,lotId", true),
    (CREDIT_LEDGER, "ledger_by_organization", "organizationId,createdAt", false),
    (OUTBOX, "outbox_pending", "status,createdAt", false),
    (CREDIT_LOTS, "lots_by_organization_expiry", "organizationId,status,expiresAt", false),
    (INTERVIEWS, "interviews_by_organization", "organizationId,settledAt", false),
];

/// How long a published outbox entry is kept: a week lets an operator trace a `report.generate`
/// back to its settlement during an incident (the DLQs keep messages 14 days, but a published
/// entry has done its work), while the collection stays the size of a week's settlements instead
/// of growing for ever. Pending entries have no `publishedAt` and never expire.
pub const PUBLISHED_OUTBOX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The TTL index on published outbox entries (MongoDB deletes a document once its `publishedAt`
/// is older than [`PUBLISHED_OUTBOX_TTL`]; documents without a date there are never deleted).
pub const OUTBOX_TTL_INDEX: &str = "outbox_published_ttl";

fn keys(spec: &str) -> Document {
    let mut d = Document::new();
    for field in spec.split(',') {
        d.insert(field, 1);
    }
    d
}

/// Creates every index of [`INDEXES`]; running it again changes nothing.
pub async fn apply(db: &Database) -> Result<(), CreditsError> {
    for (collection, name, spec, unique) in INDEXES {
        let options = IndexOptions::builder().name(name.to_string()).unique(*unique).build();
        let model = IndexModel::builder().keys(keys(spec)).options(options).build();
        db.collection::<Document>(collection)
            .create_index(model)
            .await
            .map_err(CreditsError::mongo("createIndexes"))?;
        tracing::debug!(collection, index = name, "index ensured");
    }
    let options = IndexOptions::builder().name(OUTBOX_TTL_INDEX.to_owned()).expire_after(PUBLISHED_OUTBOX_TTL).build();
    let model = IndexModel::builder().keys(keys("publishedAt")).options(options).build();
    db.collection::<Document>(OUTBOX).create_index(model).await.map_err(CreditsError::mongo("createIndexes"))?;
    Ok(())
}
