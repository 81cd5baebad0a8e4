//! MongoDB below the [`World`](crate::World): a bare database of a test's own (no migration, for
//! the tests about what an unmigrated database does), clients of a given URI, and readers of
//! stored documents.

use std::time::Duration;

use bson::{Document, doc};
use futures::TryStreamExt;
use sophia_contracts::InterviewId;
use sophia_platform::mongo::{Mongo, MongoSettings};

use crate::{mongo_uri, unique};

/// A MongoDB handle on a database of its own, without the migrations (nx-27017 transactions are
/// not isolated between clients of one database, so no two tests share one).
pub async fn test_mongo() -> Mongo {
    mongo_with(&mongo_uri(), &database_name(), Duration::from_secs(5)).await
}

/// A fresh database name.
pub fn database_name() -> String {
    unique("t").replace('-', "_")
}

/// A client of `uri`, database `database`, server selection given up after 1 s.
pub async fn mongo_at(uri: &str, database: &str) -> Mongo {
    mongo_with(uri, database, Duration::from_secs(1)).await
}

/// Settings for a client of `uri`, database `database` (server selection given up after 1 s).
pub fn mongo_settings(uri: &str, database: &str) -> MongoSettings {
    MongoSettings {
        uri: uri.to_owned(),
        database: database.to_owned(),
        server_selection_timeout: Duration::from_secs(1),
        allow_standalone: true,
    }
}

/// A client of `uri`, database `database`, server selection given up after `server_selection`.
pub async fn mongo_with(uri: &str, database: &str, server_selection: Duration) -> Mongo {
    let settings = MongoSettings { server_selection_timeout: server_selection, ..mongo_settings(uri, database) };
    Mongo::connect(&settings).await.expect("MongoDB client builds")
}

/// An integer field (dotted path) whatever its stored width (nx-27017 returns small Int64 as Int32):
/// `sophia_documents::int::at`, `None` when it is missing or not an integer.
pub fn int(d: &Document, path: &str) -> Option<i64> {
    sophia_documents::int::at(d, path)?.ok()
}

/// The stored report documents of one interview (a `find`: nx-27017's count_documents does not
/// match ObjectId fields, see tests/it/mongo_wire_gaps.rs).
pub async fn reports_of(db: &mongodb::Database, interview: InterviewId) -> Vec<Document> {
    db.collection::<Document>("interviewReports")
        .find(doc! {"interviewId": interview.oid()})
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("read")
}
