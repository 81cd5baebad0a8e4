//! The report types.
//!
//! - [`LlmReport`]: what the model must return. Its JSON schema is generated from this type
//!   (see [`crate::schema`]) and sent with `strict: true`; the reply is parsed into it and then
//!   [validated](LlmReport::validate) (ranges are checked here, not in the schema, because
//!   strict mode's support for numeric keywords varies by model).
//! - [`ReportContent`] and [`GenerationMetadata`]: what is stored in `interviewReports`, whether
//!   the report came from the model or from the insufficient-evidence rule.
//! - [`ReportStatus`]: the lifecycle `NOT_STARTED -> PROCESSING -> COMPLETED | FAILED`.

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

/// The assessment of one skill of the role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillAssessment {
    /// The skill, as named in the role's skill list.
    pub skill: String,
    /// Integer score from 1 (no demonstrated ability) to 5 (expert).
    pub score: i32,
    /// Short verbatim quotes from the candidate's answers that support the score.
    pub evidence: Vec<String>,
    /// How much evidence the transcript gives for this skill.
    pub confidence: Confidence,
}

/// The analysis of one interview question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionAnalysis {
    /// The question, as asked.
    pub question: String,
    /// Whether the candidate gave an answer to this question.
    pub answered: bool,
    /// Integer score of the answer from 1 (poor or missing) to 5 (excellent).
    pub score: i32,
    /// A neutral one- or two-sentence analysis of the answer.
    pub analysis: String,
}

/// The structured output the model must produce. Every field is required (strict mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "InterviewReport")]
pub struct LlmReport {
    /// Integer overall score from 0 (no evidence of fit) to 100 (exceptional fit for the role).
    pub overall_score: i32,
    /// The hiring recommendation; `insufficient_evidence` when the transcript does not allow a judgement.
    pub recommendation: Recommendation,
    /// A neutral summary of the interview in at most five sentences.
    pub summary: String,
    /// Observed strengths, each one sentence.
    pub strengths: Vec<String>,
    /// Observed concerns or gaps, each one sentence.
    pub concerns: Vec<String>,
    /// One entry per skill of the role.
    pub skill_assessments: Vec<SkillAssessment>,
    /// One entry per interview question.
    pub question_analysis: Vec<QuestionAnalysis>,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReportStatus {
    NotStarted,
    Processing,
    Completed,
    Failed,
}

impl ReportStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStarted => "NOT_STARTED",
            Self::Processing => "PROCESSING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
        }
    }
}

/// Where a stored report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportSource {
    /// The chat completion.
    Model,
    /// The insufficient-evidence rule (no model call).
    InsufficientEvidenceRule,
}

/// The report as stored (`interviewReports.report`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportContent {
    /// 0..=100; `None` when there was not enough evidence to score.
    pub overall_score: Option<i32>,
    pub recommendation: Recommendation,
    pub summary: String,
    pub strengths: Vec<String>,
    pub concerns: Vec<String>,
    pub skill_assessments: Vec<SkillAssessment>,
    pub question_analysis: Vec<QuestionAnalysis>,
    /// Set when the insufficient-evidence rule wrote the report: which threshold was missed.
    pub insufficient_evidence_reason: Option<String>,
    /// What the check of the model's output against the interview found and did
    /// ([`crate::validate`]): dropped quotes and entries, flagged inconsistencies. Empty when the
    /// output passed, and for the insufficient-evidence rule.
    #[serde(default)]
    pub validation_warnings: Vec<crate::validate::ValidationWarning>,
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationMetadata {
    pub source: ReportSource,
    /// The model that answered (as the API reported it); `None` for the rule.
    pub model: Option<String>,
    /// The model that was asked for (configuration).
    pub requested_model: Option<String>,
    /// The chat completion's `id`.
    pub completion_id: Option<String>,
    pub prompt_version: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    pub latency_ms: i64,
    pub truncation: Truncation,
    pub generated_at: bson::DateTime,
}
