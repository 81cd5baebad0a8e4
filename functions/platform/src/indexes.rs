//! Checks that the unique indexes a function relies on exist. The indexes are created by the
//! explicit migration step (`sophia-ops migrate`, run by `scripts/deploy`), never by a handler;
//! a function that finds one missing says so loudly, once per cold start, because without it
//! concurrent duplicates can write two documents where the design allows one.

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

/// The indexes of `required` that are missing from `db`.
pub async fn missing_unique_indexes(
    db: &Database,
    required: &[RequiredIndex],
) -> mongodb::error::Result<Vec<RequiredIndex>> {
    let mut missing = Vec::new();
    for index in required {
        let specs: Vec<Document> = match db.run_command(bson::doc! {"listIndexes": index.collection}).await {
            Ok(reply) => reply
                .get_document("cursor")
                .ok()
                .and_then(|c| c.get_array("firstBatch").ok())
                .map(|batch| batch.iter().filter_map(Bson::as_document).cloned().collect())
                .unwrap_or_default(),
            Err(e) if is_namespace_not_found(&e) => Vec::new(),
            Err(e) => return Err(e),
        };
        if !specs.iter().any(|spec| is_unique_on(spec, index.keys)) {
            missing.push(*index);
        }
    }
    Ok(missing)
}

/// Checks `required` and logs each missing index as an ERROR (the check failing is a WARN: the
/// function still runs). For a function's first invocation (or `main`): once per cold start.
pub async fn log_missing_unique_indexes(
    db: &Database,
    function: &str,
    required: &[RequiredIndex],
) -> Vec<RequiredIndex> {
    match missing_unique_indexes(db, required).await {
        Ok(missing) => {
            for index in &missing {
                tracing::error!(
                    function,
                    database = db.name(),
                    index = %index,
                    "required unique index missing: duplicates can be stored; run `sophia-ops migrate` against this database"
                );
            }
            missing
        }
        Err(e) => {
            tracing::warn!(function, database = db.name(), error = %e, "could not check the required unique indexes");
            Vec::new()
        }
    }
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
}
