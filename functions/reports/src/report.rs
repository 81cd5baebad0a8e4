//! The report types.
//!
//! - [`LlmReport`]: what the model must return. Its JSON schema is generated from this type
//!   (see [`crate::schema`]) and sent with `strict: true`; the reply is parsed into it and then
//!   [validated](LlmReport::validate) (the schema states the ranges as `minimum`/`maximum`,
//!   which strict mode supports; they are checked again after parsing).
//! - [`ReportContent`] and [`GenerationMetadata`]: what is stored in `interviewReports`, whether
//!   the report came from the model or from the insufficient-evidence rule.
//! - [`ReportStatus`]: the lifecycle `NOT_STARTED -> PROCESSING -> COMPLETED | FAILED`.
//! - [`StoredReport`]: the head of a report document as read back (the claim rule and the
//!   store read it).
//! - [`ValidationWarning`]: one finding of the output checks ([`crate::validate`]), as stored in
//!   `validationWarnings`, with its [`WarningCode`] and [`Severity`].

use std::ops::RangeInclusive;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Overall score scale: 0 (no evidence of fit) to 100 (exceptional fit).
pub const OVERALL_SCORE_RANGE: RangeInclusive<i32> = 0..=100;
/// Per-skill and per-question scale: 1 (no demonstrated ability) to 5 (expert).
pub const SKILL_SCORE_RANGE: RangeInclusive<i32> = 1..=5;

/// The hiring recommendation. `insufficient_evidence` is also what the rule writes when the
/// interview was too short to judge (and the model may choose it too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Recommendation {
    StrongHire,
    Hire,
    LeanHire,
    LeanNoHire,
    NoHire,
    InsufficientEvidence,
}

impl Recommendation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StrongHire => "strong_hire",
            Self::Hire => "hire",
            Self::LeanHire => "lean_hire",
            Self::LeanNoHire => "lean_no_hire",
            Self::NoHire => "no_hire",
            Self::InsufficientEvidence => "insufficient_evidence",
        }
    }
}

/// How sure the assessment is, given the evidence in the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// The assessment of one skill of the role. Fields are in the order the model writes them:
/// the evidence and the reasoning first, then the score they justify.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillAssessment {
    /// The skill, as named in the role's skill list.
    pub skill: String,
    /// Short verbatim quotes from the candidate's answers that bear on this skill.
    pub evidence: Vec<String>,
    /// One or two sentences: what the evidence shows about the skill, and why that earns the score.
    pub rationale: String,
    /// Integer score from 1 (no demonstrated ability) to 5 (expert), justified by the rationale.
    #[schemars(range(min = 1, max = 5))]
    pub score: i32,
    /// How much evidence the transcript gives for this skill.
    pub confidence: Confidence,
}

/// The analysis of one interview question: the analysis first, then its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionAnalysis {
    /// The question, as asked.
    pub question: String,
    /// Whether the candidate gave an answer to this question.
    pub answered: bool,
    /// A neutral one- or two-sentence analysis of the answer.
    pub analysis: String,
    /// Integer score of the answer from 1 (poor or missing) to 5 (excellent), justified by the analysis.
    #[schemars(range(min = 1, max = 5))]
    pub score: i32,
}

/// The structured output the model must produce. Every field is required (strict mode). The
/// order is the order of writing: observations and per-item assessments first, then the summary,
/// then the overall score and the recommendation they lead to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "InterviewReport")]
pub struct LlmReport {
    /// One entry per skill of the role, in the given order.
    pub skill_assessments: Vec<SkillAssessment>,
    /// One entry per interview question, in the given order.
    pub question_analysis: Vec<QuestionAnalysis>,
    /// Observed strengths, each one sentence.
    pub strengths: Vec<String>,
    /// Observed concerns or gaps, each one sentence.
    pub concerns: Vec<String>,
    /// A neutral summary of the interview in at most five sentences.
    pub summary: String,
    /// Integer overall score from 0 (no evidence of fit) to 100 (exceptional fit for the role), justified by the assessments above.
    #[schemars(range(min = 0, max = 100))]
    pub overall_score: i32,
    /// The hiring recommendation; `insufficient_evidence` when the transcript does not allow a judgement.
    pub recommendation: Recommendation,
}

/// Why a model reply, although it parsed, is not an acceptable report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value} is outside {min}..={max}")]
pub struct OutOfRange {
    pub field: String,
    pub value: i32,
    pub min: i32,
    pub max: i32,
}

fn check(field: impl Into<String>, value: i32, range: &RangeInclusive<i32>) -> Result<(), OutOfRange> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(OutOfRange { field: field.into(), value, min: *range.start(), max: *range.end() })
    }
}

impl LlmReport {
    /// Checks the scales the schema states in its descriptions.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        check("overallScore", self.overall_score, &OVERALL_SCORE_RANGE)?;
        for (i, s) in self.skill_assessments.iter().enumerate() {
            check(format!("skillAssessments[{i}].score"), s.score, &SKILL_SCORE_RANGE)?;
        }
        for (i, q) in self.question_analysis.iter().enumerate() {
            check(format!("questionAnalysis[{i}].score"), q.score, &SKILL_SCORE_RANGE)?;
        }
        Ok(())
    }
}

/// The lifecycle of a report document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReportStatus {
    NotStarted,
    Processing,
    Completed,
    Failed,
    // The tombstone of an erasure: the report and everything derived from the candidate's
    // answers were removed, and every writer's conditional write skips it (crate::erasure).
    // Final. (A plain comment: a doc comment would turn the schema's enum into a oneOf.)
    Erased,
}

impl ReportStatus {
    /// What an attempts reset does with a report in this status, as declared once for the Rust
    /// side and the API's TypeScript package (`declarations/reports.json`).
    pub fn reset_rule(self) -> sophia_declarations::ResetRule {
        sophia_declarations::report_reset_rule(self.as_str())
            .unwrap_or_else(|| unreachable!("declarations/reports.json names every ReportStatus (a test checks it)"))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStarted => "NOT_STARTED",
            Self::Processing => "PROCESSING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Erased => "ERASED",
        }
    }
}

/// Where a stored report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportSource {
    /// The chat completion.
    Model,
    /// The insufficient-evidence rule (no model call).
    InsufficientEvidenceRule,
}

/// The report as stored (`interviewReports.report`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportContent {
    /// 0..=100; `null` when there was not enough evidence to score.
    #[schemars(range(min = 0, max = 100))]
    pub overall_score: Option<i32>,
    /// The hiring recommendation.
    pub recommendation: Recommendation,
    /// A short summary of the interview for the hiring team.
    pub summary: String,
    /// The candidate's strengths, as the model wrote them.
    pub strengths: Vec<String>,
    /// The concerns, as the model wrote them.
    pub concerns: Vec<String>,
    /// One assessment per skill of the role, with the transcript quotes it rests on.
    pub skill_assessments: Vec<SkillAssessment>,
    /// One analysis per interview question.
    pub question_analysis: Vec<QuestionAnalysis>,
    /// Set when the insufficient-evidence rule wrote the report: which threshold was missed.
    pub insufficient_evidence_reason: Option<String>,
    /// What the check of the model's output against the interview found and did
    /// ([`crate::validate`]): dropped quotes and entries, flagged inconsistencies. Empty when the
    /// output passed, and for the insufficient-evidence rule.
    #[serde(default)]
    pub validation_warnings: Vec<ValidationWarning>,
}

impl From<LlmReport> for ReportContent {
    fn from(r: LlmReport) -> Self {
        Self {
            overall_score: Some(r.overall_score),
            recommendation: r.recommendation,
            summary: r.summary,
            strengths: r.strengths,
            concerns: r.concerns,
            skill_assessments: r.skill_assessments,
            question_analysis: r.question_analysis,
            insufficient_evidence_reason: None,
            validation_warnings: Vec::new(),
        }
    }
}

/// What was cut from the candidate data before it was sent (see [`crate::prompt`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub resume_truncated: bool,
    pub resume_original_chars: i64,
    pub resume_sent_chars: i64,
    /// Turns whose text was cut to the per-turn limit.
    pub turns_shortened: i64,
    /// Turns in the interview's transcript.
    #[serde(default)]
    pub turns_total: i64,
    /// Turns left out of the middle because the transcript was over its token budget (the
    /// opening and the end are sent whole).
    pub turns_omitted: i64,
    /// The first and last omitted turn, 1-based (absent when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_from_turn: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_to_turn: Option<i64>,
    pub transcript_original_chars: i64,
    pub transcript_sent_chars: i64,
    /// The transcript sent, in estimated tokens (the budget's conservative count).
    #[serde(default)]
    pub transcript_estimated_tokens: i64,
}

impl Truncation {
    pub fn any(&self) -> bool {
        self.resume_truncated || self.turns_shortened > 0 || self.turns_omitted > 0
    }
}

/// How the stored report was produced (`interviewReports.generation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerationMetadata {
    pub source: ReportSource,
    /// The model that answered (as the API reported it); `None` for the rule.
    pub model: Option<String>,
    /// The model that was asked for (configuration).
    pub requested_model: Option<String>,
    /// The chat completion's `id`.
    pub completion_id: Option<String>,
    /// [`crate::prompt::prompt_version`]: changes whenever the instructions or the schema do.
    pub prompt_version: String,
    /// The tokens of every chat completion of this attempt (the first call and the repair, when
    /// there was one): what was billed. Each call's own are in `calls`.
    pub prompt_tokens: i64,
    /// Of the prompt tokens, those served from OpenAI's prompt cache (billed at a quarter).
    #[serde(default)]
    pub cached_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    /// The model's time over every call of the attempt.
    pub latency_ms: i64,
    pub truncation: Truncation,
    #[schemars(with = "BsonDate")]
    pub generated_at: bson::DateTime,
    /// Each chat completion of the attempt, in order: the first call, then the repair when the
    /// first reply had a critical finding (`docs/report-quality.md`). Empty for the rule.
    #[serde(default)]
    pub calls: Vec<ModelCall>,
}

/// Why a chat completion was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// The report requested from the interview.
    First,
    /// The one repair of an attempt: the same request followed by the first reply and a short
    /// corrective message naming its critical findings.
    Repair,
}

/// One chat completion of an attempt (`generation.calls[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCall {
    pub purpose: CallPurpose,
    /// The chat completion's `id` (`null` when the call produced no completion).
    pub completion_id: Option<String>,
    /// Its tokens as the API reported them (0 when the call failed: an HTTP error answer is not
    /// billed; the tokens of a 200 whose content was refused or unusable are not known here).
    pub prompt_tokens: i64,
    pub cached_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    pub latency_ms: i64,
    /// Critical findings of its reply after the check (`null` when the call failed).
    pub critical_findings: Option<i64>,
    /// Why the call produced no report (`null` when it did).
    pub error_kind: Option<crate::error_kind::ErrorKind>,
    /// Whether its reply is the stored report.
    pub stored: bool,
}

/// Stands for a BSON date in the stored document's JSON Schema.
pub struct BsonDate;

impl JsonSchema for BsonDate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BsonDate".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "A BSON date (a JavaScript Date through Mongoose; ISO-8601 in extended JSON)"
        })
    }
}

/// Stands for a BSON ObjectId in the stored document's JSON Schema.
pub struct BsonObjectId;

impl JsonSchema for BsonObjectId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BsonObjectId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9a-fA-F]{24}$",
            "description": "A BSON ObjectId (24 hex characters as a string)"
        })
    }
}

/// One `interviewReports` document as this service writes it: the layout the API reads
/// (`functions/contracts/schemas/interview-report-document.schema.json` is generated from this
/// type). Fields marked optional are absent until the state that sets them; `null` and absent
/// mean the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "InterviewReportDocument")]
pub struct ReportDocument {
    /// The document's id.
    #[serde(rename = "_id")]
    #[schemars(with = "BsonObjectId")]
    pub id: bson::oid::ObjectId,
    /// The interview (unique: one report per interview).
    #[schemars(with = "BsonObjectId")]
    pub interview_id: bson::oid::ObjectId,
    /// The organization whose interview it is.
    #[schemars(with = "BsonObjectId")]
    pub organization_id: bson::oid::ObjectId,
    /// `NOT_STARTED` (a placeholder written by the API) -> `PROCESSING` -> `COMPLETED` | `FAILED`;
    /// any of them -> `ERASED` (the tombstone of an erasure, final).
    pub status: ReportStatus,
    /// Generation attempts so far (at most `maxAttempts` of declarations/reports.json unless an
    /// operator resets them).
    #[schemars(range(min = 0))]
    pub attempt_count: i32,
    /// The claim of the worker generating it (`PROCESSING` only).
    #[serde(default)]
    #[schemars(with = "Option<BsonObjectId>")]
    pub lease_id: Option<bson::oid::ObjectId>,
    /// When that claim expires; a `PROCESSING` report past it is claimed again.
    #[serde(default)]
    #[schemars(with = "Option<BsonDate>")]
    pub lease_expires_at: Option<bson::DateTime>,
    /// Why the last attempt failed (`FAILED`; cleared on completion). Names fields, statuses and
    /// codes, never candidate text.
    #[serde(default)]
    pub last_error: Option<String>,
    /// The kind of the last failure (`FAILED`; cleared on completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::error_kind::ErrorKind>,
    /// When the last attempt failed (`FAILED`; cleared on completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BsonDate>")]
    pub last_error_at: Option<bson::DateTime>,
    /// The model's refusal text when the last attempt was refused (`errorKind: refusal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// When the report must be deleted: copied from the interview, else 60 days after the write
    /// (`FALLBACK_RETENTION_DAYS`). Set by every write of this service (the claim, completion,
    /// failure, out-of-attempts and unreadable records); the TTL index on it deletes the report.
    #[serde(default)]
    #[schemars(with = "Option<BsonDate>")]
    pub retention_expires_at: Option<bson::DateTime>,
    /// The report (`COMPLETED` only).
    #[serde(default)]
    pub report: Option<ReportContent>,
    /// `COMPLETED` only: `true` when the stored report still carries a critical finding (see
    /// `report.validationWarnings[].severity`) after the one repair: show it as provisional, not
    /// as the model's verdict. `false` for a report without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_review: Option<bool>,
    /// How it was produced (`COMPLETED` only).
    #[serde(default)]
    pub generation: Option<GenerationMetadata>,
    /// Transcript turns the model did not see, omitted from the middle to fit the token budget
    /// (`COMPLETED` only; 0: the whole interview was assessed). The range is in
    /// `generation.truncation` (`omittedFromTurn`, `omittedToTurn`).
    #[serde(default)]
    pub transcript_turns_omitted: Option<i64>,
    /// When the document was created (by the API's placeholder or the first claim).
    #[schemars(with = "BsonDate")]
    pub created_at: bson::DateTime,
    /// The last write. A `PROCESSING` report without `leaseExpiresAt` (written before leases
    /// existed) is claimed again one lease length after it.
    #[schemars(with = "BsonDate")]
    pub updated_at: bson::DateTime,
    /// When the report was completed (`COMPLETED` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BsonDate>")]
    pub completed_at: Option<bson::DateTime>,
    /// When an operator last gave the report a fresh attempt budget (`attemptCount` back to 0):
    /// `sophia-ops report retry --reset-attempts`, or `sophia-ops dlq redrive report-generate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BsonDate>")]
    pub attempts_reset_at: Option<bson::DateTime>,
    /// The last attempts reset: who, when, through what, and the state it found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_retry: Option<RetryMark>,
    /// Every attempts reset, oldest first (each one also `lastRetry` when it was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<Vec<RetryMark>>,
    /// Failures that gave their attempt back because the provider or the database was away
    /// (`errorKind` `rate_limited`, `server_error`, `timeout` or `database`): they do not use the
    /// attempt budget, so they are counted here instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub transient_failures: Option<i64>,
    /// `FAILED` only: `true` while the report's message will be delivered again without anyone
    /// acting (the provider or the database was away and the consumer retries, or an attempt
    /// other than the last failed): show it as waiting for a retry, not as failed. `false` (or
    /// absent) on a `FAILED` report: nothing retries it any more (out of attempts, given up
    /// after the outage outlasted the give-up age, an unreadable document): it needs an
    /// operator. Cleared by the next claim and by completion (docs/design.md, "Report states").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for_retry: Option<bool>,
    /// When the API's admin retry (`retryReportGeneration` of clients/typescript) queued a
    /// `report.generate` for the report, written together with `updatedAt` of the same instant:
    /// while the two are equal (no write since) and less than one lease length has passed, the
    /// message is still on its way to the consumer and another retry publishes nothing. Any later
    /// write (the consumer's claim) moves `updatedAt` on; nothing needs to clear it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BsonDate>")]
    pub retry_queued_at: Option<bson::DateTime>,
    /// When the candidate's data was erased: set on the tombstone only (`status` `ERASED`),
    /// which holds nothing else but the ids and dates (docs/candidate-data.md, "Erasure").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BsonDate>")]
    pub erased_at: Option<bson::DateTime>,
}

/// One attempts reset as recorded on the report (`lastRetry`, and appended to `retries`): by
/// `sophia-ops report retry --reset-attempts`, `sophia-ops dlq redrive report-generate`, and the
/// API's admin retry (`retryReportGeneration` of clients/typescript).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryMark {
    /// When the attempts were reset.
    #[schemars(with = "BsonDate")]
    pub at: bson::DateTime,
    /// Who asked: an AWS identity, an operator's `--by` or login name, or the API's admin user (an
    /// id or an e-mail). Not candidate data.
    pub by: String,
    /// Through what: `report-retry` or `dlq-redrive` (the operator CLI), `api-admin-retry` (the API).
    pub via: String,
    /// `attemptCount` before the reset.
    #[schemars(range(min = 0))]
    pub attempts_before: i32,
    /// The status before the reset: `FAILED`, or `PROCESSING` under an expired lease.
    pub status_before: ReportStatus,
}

/// How much a finding matters to the reader of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Corrected or cut; the report still says what the model meant (a label corrected, a list
    /// or a string cut, a quote or an entry dropped).
    Minor,
    /// The report as stored would mislead: it is repaired once, else stored with `needsReview`.
    Critical,
}

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// Fewer than half of the interview's skills (or questions) are assessed after the check.
    TooFewAssessed,
    /// An assessed skill or question that the interview did not have: dropped.
    UnexpectedEntry,
    /// A second entry for the same skill or question: dropped.
    DuplicateEntry,
    /// A skill or question of the interview that the model did not assess.
    MissingEntry,
    /// An entry whose label did not match, taken as the interview's entry at that position.
    LabelCorrected,
    /// A quote that does not occur in the candidate's turns: dropped.
    QuoteNotFound,
    /// The recommendation is outside the overall score's band.
    RecommendationInconsistent,
    /// The overall score is far from what the skill scores say.
    OverallScoreInconsistent,
    /// A high skill score with no quote left to support it.
    ScoreWithoutEvidence,
    /// A list longer than its bound: cut.
    TooManyItems,
    /// A text longer than its bound: cut.
    TooLong,
    /// A candidate turn reads as an instruction to the evaluator ([`crate::injection`]): the
    /// report may follow it rather than the interview. About the transcript, not the reply: a
    /// repair cannot remove it.
    InstructionToEvaluator,
}

impl WarningCode {
    /// The severity rule (`docs/report-quality.md`): a code is critical or minor whatever the
    /// report. A missing, unexpected or duplicate entry is minor on its own; when so few entries
    /// are left that fewer than half of the items are assessed, [`Self::TooFewAssessed`] is added.
    pub fn severity(self) -> Severity {
        match self {
            Self::TooFewAssessed
            | Self::RecommendationInconsistent
            | Self::OverallScoreInconsistent
            | Self::ScoreWithoutEvidence
            | Self::InstructionToEvaluator => Severity::Critical,
            Self::UnexpectedEntry
            | Self::DuplicateEntry
            | Self::MissingEntry
            | Self::LabelCorrected
            | Self::QuoteNotFound
            | Self::TooManyItems
            | Self::TooLong => Severity::Minor,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::TooFewAssessed => "too_few_assessed",
            Self::UnexpectedEntry => "unexpected_entry",
            Self::DuplicateEntry => "duplicate_entry",
            Self::MissingEntry => "missing_entry",
            Self::LabelCorrected => "label_corrected",
            Self::QuoteNotFound => "quote_not_found",
            Self::RecommendationInconsistent => "recommendation_inconsistent",
            Self::OverallScoreInconsistent => "overall_score_inconsistent",
            Self::ScoreWithoutEvidence => "score_without_evidence",
            Self::TooManyItems => "too_many_items",
            Self::TooLong => "too_long",
            Self::InstructionToEvaluator => "instruction_to_evaluator",
        }
    }

    /// Whether a repair call can clear it: every finding about the reply; not one about the
    /// transcript ([`Self::InstructionToEvaluator`]), which the same transcript would raise again.
    pub fn repairable(self) -> bool {
        !matches!(self, Self::InstructionToEvaluator)
    }

    /// Every code, in declaration order.
    pub const ALL: [WarningCode; 12] = [
        Self::TooFewAssessed,
        Self::UnexpectedEntry,
        Self::DuplicateEntry,
        Self::MissingEntry,
        Self::LabelCorrected,
        Self::QuoteNotFound,
        Self::RecommendationInconsistent,
        Self::OverallScoreInconsistent,
        Self::ScoreWithoutEvidence,
        Self::TooManyItems,
        Self::TooLong,
        Self::InstructionToEvaluator,
    ];
}

/// The overall-score band a recommendation requires (inclusive), on a `recommendation_inconsistent`
/// finding: what the stored recommendation violates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScoreBand {
    pub recommendation: Recommendation,
    pub min_score: i32,
    pub max_score: i32,
}

/// One finding, as stored in the report's `validationWarnings`. Never holds candidate text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationWarning {
    pub code: WarningCode,
    /// The code's severity (the rule is in `docs/report-quality.md`), stored so that a reader
    /// needs no copy of the rule.
    pub severity: Severity,
    /// The field of the model's output, e.g. `skillAssessments[2].evidence[0]`.
    pub field: String,
    /// What was done, in words that hold no candidate text.
    pub message: String,
    /// On `recommendation_inconsistent` only: the band the stored recommendation requires and
    /// its overall score is outside of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<ScoreBand>,
}

impl ValidationWarning {
    pub(crate) fn new(code: WarningCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code, severity: code.severity(), field: field.into(), message: message.into(), band: None }
    }

    pub fn is_critical(&self) -> bool {
        self.severity == Severity::Critical
    }
}

/// The head of a report document as read back: a read model of a document the API may also
/// write (docs/design.md, "Documents written by other services"), decoded with
/// [`sophia_documents::decode`]. `attemptCount` absent or `null` is 0 and may be any integral
/// numeric; `organizationId` and the lease may be absent; unknown fields are ignored. The
/// report's content is not read here (see [`ReportDocument`] for
/// the written layout).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredReport {
    #[serde(rename = "_id")]
    pub id: bson::oid::ObjectId,
    pub interview_id: bson::oid::ObjectId,
    #[serde(default)]
    pub organization_id: Option<bson::oid::ObjectId>,
    pub status: ReportStatus,
    #[serde(default, deserialize_with = "sophia_documents::int::i32_or_zero")]
    pub attempt_count: i32,
    #[serde(default)]
    pub lease_id: Option<bson::oid::ObjectId>,
    #[serde(default)]
    pub lease_expires_at: Option<bson::DateTime>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub error_kind: Option<crate::error_kind::ErrorKind>,
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default, deserialize_with = "sophia_documents::int::i32_or_zero")]
    pub transient_failures: i32,
    /// See [`ReportDocument::waiting_for_retry`](crate::report::ReportDocument::waiting_for_retry).
    #[serde(default)]
    pub waiting_for_retry: Option<bool>,
    #[serde(default)]
    pub retention_expires_at: Option<bson::DateTime>,
    #[serde(default)]
    pub created_at: Option<bson::DateTime>,
    #[serde(default)]
    pub updated_at: Option<bson::DateTime>,
}
