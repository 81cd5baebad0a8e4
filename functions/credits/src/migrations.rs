//! The indexes the credits flow relies on, created by an explicit, idempotent step (the ops CLI,
//! the local runner and the tests call [`apply`]; handlers never do).

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
    Ok(())
}
