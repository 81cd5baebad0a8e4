//! Checks that the indexes a function relies on exist. The indexes are created by the explicit
//! migration step (`sophia-ops migrate`, run by `scripts/deploy`), never by a handler; a function
//! that finds one missing says so loudly, once per cold start:
//! - a missing unique index: concurrent duplicates can write two documents where the design
//!   allows one;
//! - a missing TTL index (`interviewReports.retentionExpiresAt`): candidate data is kept
//!   past the retention date the system promises.

use bson::{Bson, Document};
use mongodb::Database;

/// A unique index a function needs: its collection and its key fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequiredIndex {
    pub collection: &'static str,
    pub keys: &'static [&'static str],
}

impl std::fmt::Display for RequiredIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.collection, self.keys.join(", "))
    }
}

/// A TTL index a function needs: MongoDB deletes a document of `collection` once the date in
/// `field` is `expire_after_seconds` old (documents without a date there are never deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequiredTtlIndex {
    pub collection: &'static str,
    pub field: &'static str,
    pub expire_after_seconds: i64,
}

impl std::fmt::Display for RequiredTtlIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({}) expireAfterSeconds {}", self.collection, self.field, self.expire_after_seconds)
    }
}

/// Whether the index specification `spec` (a `listIndexes` entry) is a TTL index on exactly
/// `field` with `expire_after_seconds` (an int32, int64 or whole double, as shells write it).
pub fn is_ttl_on(spec: &Document, field: &str, expire_after_seconds: i64) -> bool {
    let on = spec.get_document("key").map(key_names).unwrap_or_default();
    let expire = spec.get("expireAfterSeconds").and_then(|n| sophia_documents::int::from_bson(n).ok());
    on == [field] && expire == Some(expire_after_seconds)
}

/// MongoDB's NamespaceNotFound: the collection does not exist yet (so neither do its indexes).
const NAMESPACE_NOT_FOUND: i32 = 26;

fn is_namespace_not_found(e: &mongodb::error::Error) -> bool {
    matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(c) if c.code == NAMESPACE_NOT_FOUND)
}

fn key_names(keys: &Document) -> Vec<&str> {
    keys.keys().map(String::as_str).collect()
}

/// Whether the index specification `spec` (a `listIndexes` entry) is a unique index on `keys`.
pub fn is_unique_on(spec: &Document, keys: &[&str]) -> bool {
    let unique = matches!(spec.get("unique"), Some(Bson::Boolean(true)));
    let on = spec.get_document("key").map(key_names).unwrap_or_default();
    unique && on == keys
}

/// The index specifications of `collection` (none when the collection does not exist yet).
pub async fn index_specs(db: &Database, collection: &str) -> mongodb::error::Result<Vec<Document>> {
    match db.run_command(bson::doc! {"listIndexes": collection}).await {
        Ok(reply) => Ok(reply
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_array("firstBatch").ok())
            .map(|batch| batch.iter().filter_map(Bson::as_document).cloned().collect())
            .unwrap_or_default()),
        Err(e) if is_namespace_not_found(&e) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// An index a function relies on, as the start-up check sees it.
pub trait Required: Copy + std::fmt::Display {
    /// What the ERROR says when the index is missing.
    const MISSING: &'static str;
    /// What the WARN says when the check itself fails.
    const UNCHECKED: &'static str;
    fn collection(&self) -> &'static str;
    /// Whether the `listIndexes` entry `spec` is this index.
    fn satisfied_by(&self, spec: &Document) -> bool;
}

impl Required for RequiredIndex {
    const MISSING: &'static str =
        "required unique index missing: duplicates can be stored; run `sophia-ops migrate` against this database";
    const UNCHECKED: &'static str = "could not check the required unique indexes";
    fn collection(&self) -> &'static str {
        self.collection
    }
    fn satisfied_by(&self, spec: &Document) -> bool {
        is_unique_on(spec, self.keys)
    }
}

impl Required for RequiredTtlIndex {
    const MISSING: &'static str = "required TTL index missing: candidate data outlives its retention date; run `sophia-ops migrate` against this database";
    const UNCHECKED: &'static str = "could not check the required TTL indexes";
    fn collection(&self) -> &'static str {
        self.collection
    }
    fn satisfied_by(&self, spec: &Document) -> bool {
        is_ttl_on(spec, self.field, self.expire_after_seconds)
    }
}

/// The indexes of `required` that are missing from `db`.
pub async fn missing_indexes<I: Required>(db: &Database, required: &[I]) -> mongodb::error::Result<Vec<I>> {
    let mut missing = Vec::new();
    for index in required {
        if !index_specs(db, index.collection()).await?.iter().any(|spec| index.satisfied_by(spec)) {
            missing.push(*index);
        }
    }
    Ok(missing)
}

/// The unique indexes of `required` that are missing from `db`.
pub async fn missing_unique_indexes(
    db: &Database,
    required: &[RequiredIndex],
) -> mongodb::error::Result<Vec<RequiredIndex>> {
    missing_indexes(db, required).await
}

/// The TTL indexes of `required` that are missing from `db` (or have another expiry).
pub async fn missing_ttl_indexes(
    db: &Database,
    required: &[RequiredTtlIndex],
) -> mongodb::error::Result<Vec<RequiredTtlIndex>> {
    missing_indexes(db, required).await
}

/// Checks `required` and logs each missing index as an ERROR (the check failing is a WARN: the
/// function still runs). For a function's first invocation (or `main`): once per cold start.
pub async fn log_missing_indexes<I: Required>(db: &Database, function: &str, required: &[I]) -> Vec<I> {
    match missing_indexes(db, required).await {
        Ok(missing) => {
            for index in &missing {
                tracing::error!(function, database = db.name(), index = %index, "{}", I::MISSING);
            }
            missing
        }
        Err(e) => {
            tracing::warn!(function, database = db.name(), error = %e, "{}", I::UNCHECKED);
            Vec::new()
        }
    }
}

/// [`log_missing_indexes`] for unique indexes.
pub async fn log_missing_unique_indexes(
    db: &Database,
    function: &str,
    required: &[RequiredIndex],
) -> Vec<RequiredIndex> {
    log_missing_indexes(db, function, required).await
}

/// [`log_missing_indexes`] for TTL indexes.
pub async fn log_missing_ttl_indexes(
    db: &Database,
    function: &str,
    required: &[RequiredTtlIndex],
) -> Vec<RequiredTtlIndex> {
    log_missing_indexes(db, function, required).await
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn only_a_unique_index_on_exactly_those_keys_counts() {
        let keys = &["interviewId"];
        assert!(is_unique_on(&doc! {"key": {"interviewId": 1}, "name": "x", "unique": true}, keys));
        assert!(is_unique_on(&doc! {"key": {"interviewId": 1.0}, "unique": true}, keys), "a shell-written 1.0");
        assert!(!is_unique_on(&doc! {"key": {"interviewId": 1}, "name": "x"}, keys), "not unique");
        assert!(!is_unique_on(&doc! {"key": {"interviewId": 1, "organizationId": 1}, "unique": true}, keys));
        assert!(!is_unique_on(&doc! {"key": {"_id": 1}, "unique": true}, keys));
    }

    #[test]
    fn only_a_ttl_index_on_exactly_that_field_with_that_expiry_counts() {
        let f = "retentionExpiresAt";
        assert!(is_ttl_on(&doc! {"key": {f: 1}, "name": "x", "expireAfterSeconds": 0}, f, 0));
        assert!(is_ttl_on(&doc! {"key": {f: 1}, "expireAfterSeconds": 0_i64}, f, 0));
        assert!(is_ttl_on(&doc! {"key": {f: 1}, "expireAfterSeconds": 0.0}, f, 0), "a shell-written 0.0");
        assert!(!is_ttl_on(&doc! {"key": {f: 1}}, f, 0), "a plain index deletes nothing");
        assert!(!is_ttl_on(&doc! {"key": {f: 1}, "expireAfterSeconds": 86400}, f, 0), "another expiry");
        assert!(!is_ttl_on(&doc! {"key": {f: 1, "x": 1}, "expireAfterSeconds": 0}, f, 0), "compound: not a TTL index");
        assert!(!is_ttl_on(&doc! {"key": {"createdAt": 1}, "expireAfterSeconds": 0}, f, 0));
    }
}
