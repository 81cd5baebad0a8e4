//! The documents of the credits model (docs/design.md), as stored. Integers are written as Int64.
//! Other writers store them differently (the mongo shell as doubles, Mongoose as Int32; absent
//! and `null` alike): every read goes through `sophia_documents` ([`crate::store`] fetches raw
//! documents and decodes them), whose integer readers accept any BSON numeric holding an integral
//! value and reject a fractional one with an error that names the field.

use bson::oid::ObjectId;
use bson::{DateTime, Document};
use serde::{Deserialize, Serialize};
use sophia_documents::{int, null_as_default};

use crate::arithmetic::{Allocation, LotState, LotStatus};

pub const ORGANIZATIONS: &str = "organizations";
pub const CREDIT_LOTS: &str = "creditLots";
pub const CREDIT_LEDGER: &str = "creditLedger";
pub const INTERVIEWS: &str = "interviews";
pub const OUTBOX: &str = "outbox";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrgCredits {
    #[serde(default, deserialize_with = "int::i64_or_zero")]
    pub available: i64,
    #[serde(default, deserialize_with = "int::i64_or_zero")]
    pub reserved: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub credits: OrgCredits,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreditLot {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub organization_id: ObjectId,
    #[serde(deserialize_with = "int::i64")]
    pub granted: i64,
    #[serde(deserialize_with = "int::i64")]
    pub remaining: i64,
    #[serde(default, deserialize_with = "int::i64_or_zero")]
    pub reserved: i64,
    pub expires_at: DateTime,
    pub status: LotStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime>,
}

impl CreditLot {
    pub fn state(&self) -> LotState {
        LotState {
            id: self.id,
            granted: self.granted,
            remaining: self.remaining,
            reserved: self.reserved,
            expires_at: self.expires_at.to_chrono(),
            status: self.status,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LedgerType {
    Reserve,
    Settle,
    Release,
    Forfeit,
}

impl LedgerType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserve => "RESERVE",
            Self::Settle => "SETTLE",
            Self::Release => "RELEASE",
            Self::Forfeit => "FORFEIT",
        }
    }
}

/// What a ledger entry is about. `INTERVIEW` for reservations and settlements; `LOT_EXPIRY` for
/// the forfeit of a lot's unreserved remainder when a settlement expires the lot (it belongs to
/// no interview, so invariant 5 does not count it; invariant 4 does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReferenceKind {
    Interview,
    LotExpiry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reference {
    pub kind: ReferenceKind,
    pub id: ObjectId,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub organization_id: ObjectId,
    pub lot_id: ObjectId,
    #[serde(rename = "type")]
    pub kind: LedgerType,
    #[serde(deserialize_with = "int::i64")]
    pub amount: i64,
    pub reference: Reference,
    pub created_at: DateTime,
}

impl LedgerEntry {
    pub fn new(
        organization_id: ObjectId,
        lot_id: ObjectId,
        kind: LedgerType,
        amount: i64,
        reference: Reference,
        at: DateTime,
    ) -> Self {
        Self { id: ObjectId::new(), organization_id, lot_id, kind, amount, reference, created_at: at }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterviewCredits {
    /// Absent or `null`: nothing reserved.
    #[serde(default, deserialize_with = "int::i64_or_zero")]
    pub reserved: i64,
    #[serde(default, deserialize_with = "int::opt_i64", skip_serializing_if = "Option::is_none")]
    pub consumed: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub allocations: Vec<Allocation>,
}

/// The fields of an interview that the credits flow reads (other fields are left alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterviewCreditsView {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub organization_id: ObjectId,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub credits: InterviewCredits,
    #[serde(default)]
    pub settled_at: Option<DateTime>,
    #[serde(default)]
    pub retention_expires_at: Option<DateTime>,
    /// When the API created the interview (Mongoose `timestamps`); absent on older documents.
    /// A completion or failure anchor before it is inconsistent data (docs/design.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OutboxStatus {
    Pending,
    Published,
}

/// A message to publish after a commit (the transactional outbox). `_id` is deterministic
/// (`report.generate:<interviewId>`), so one settlement can only ever write one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxEntry {
    #[serde(rename = "_id")]
    pub id: String,
    /// The event type, e.g. `report.generate`.
    pub kind: String,
    pub interview_id: ObjectId,
    pub organization_id: ObjectId,
    pub request_id: String,
    pub status: OutboxStatus,
    pub created_at: DateTime,
    #[serde(default, deserialize_with = "int::i64_or_zero")]
    pub attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<DateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqs_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl OutboxEntry {
    pub const REPORT_GENERATE: &'static str = "report.generate";

    pub fn report_generate_id(interview_id: ObjectId) -> String {
        format!("{}:{}", Self::REPORT_GENERATE, interview_id.to_hex())
    }
}

/// Extra fields of a new interview (snapshot, transcript, ...), merged into the document.
pub type ExtraFields = Document;
