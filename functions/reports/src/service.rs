//! `generate_report`: the replaced system's seven steps (docs/design.md, "Its report generation"),
//! with the rules of docs/design.md, "Report generation".

use std::time::Duration;

use bson::DateTime;
use mongodb::Database;
use sophia_contracts::{InterviewId, OrganizationId};
use tracing::{Instrument, field};

use crate::error::ReportError;
use crate::error_kind::ErrorKind;
use crate::evidence::{self, Insufficient};
use crate::interview;
use crate::openai::{ModelReply, ReportModel};
use crate::prompt::{self, Prompt, PromptLimits, prompt_version};
use crate::repair;
use crate::report::{
    CallPurpose, GenerationMetadata, LlmReport, ModelCall, Recommendation, ReportContent, ReportSource, ReportStatus,
    StoredReport, Truncation, ValidationWarning,
};
use crate::store::{INTERVIEW_REPORTS, Lease, MAX_ATTEMPTS, ReportStore, retention_or_fallback};
use crate::validate::{self, Expectations};

/// The lease of a claim ([`crate::claim::lease`]: the report-generate function's declared timeout).
pub fn default_lease() -> Duration {
    crate::claim::lease()
}

/// What a completed report cost (zero for the insufficient-evidence rule), over every call of
/// the attempt, and how it ended: for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: i64,
    pub cached_tokens: i64,
    pub completion_tokens: i64,
    pub latency_ms: i64,
    /// Repair calls made (0 or 1).
    pub repair_calls: i64,
    /// The stored report still carries a critical finding (`needsReview`).
    pub needs_review: bool,
}

/// How a successful `generate_report` ended. Every variant means "acknowledge the message".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Generated {
    /// This call wrote the COMPLETED report.
    Completed { recommendation: Recommendation, source: ReportSource, attempt: i32, usage: Usage },
    /// The report was already COMPLETED: nothing to do (no model call).
    AlreadyCompleted,
    /// The report was found out of attempts (`attemptCount >= MAX_ATTEMPTS`) before claiming:
    /// it is (now) FAILED and stays so; no model call. A failing last attempt is not this: its
    /// error is returned (SQS moves the message to the DLQ).
    AttemptsExhausted,
    /// Another worker holds a live PROCESSING lease: skipped.
    HeldByAnother,
    /// This worker's lease expired and another worker reclaimed the report before this one
    /// could write its result: the result was discarded.
    LeaseLost,
    /// The candidate's data of this interview was erased (the report is a tombstone,
    /// [`crate::erasure`]): nothing was written, the message is acknowledged with this reason.
    Erased,
}

impl Generated {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Completed { .. } => "completed",
            Self::AlreadyCompleted => "already_completed",
            Self::AttemptsExhausted => "attempts_exhausted",
            Self::HeldByAnother => "held_by_another",
            Self::LeaseLost => "lease_lost",
            Self::Erased => "erased",
        }
    }
}

/// Report generation: the database and the model client, both built once per process.
#[derive(Debug, Clone)]
pub struct ReportService {
    db: Database,
    store: ReportStore,
    model: ReportModel,
    lease: Duration,
    limits: PromptLimits,
}

impl ReportService {
    pub fn new(db: Database, model: ReportModel) -> Self {
        Self { store: ReportStore::new(&db), db, model, lease: default_lease(), limits: PromptLimits::default() }
    }

    /// Overrides the lease length (tests).
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Overrides the prompt's limits (from `PromptLimits::from_env` in the function).
    pub fn with_prompt_limits(mut self, limits: PromptLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn store(&self) -> &ReportStore {
        &self.store
    }

    pub fn model(&self) -> &ReportModel {
        &self.model
    }

    /// [`generate_report_until`](Self::generate_report_until) without a deadline.
    pub async fn generate_report(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
    ) -> Result<Generated, ReportError> {
        self.generate_report_until(interview_id, organization_id, None).await
    }

    /// Generates the report of one interview. `Ok` means "acknowledge"; `Err` has a
    /// [`disposition`](ReportError::disposition). The model call is bounded by the client
    /// timeout and by `deadline` (the invocation's), whichever is sooner.
    pub async fn generate_report_until(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Generated, ReportError> {
        let span = tracing::info_span!(
            "generate_report",
            interviewId = %interview_id,
            organizationId = %organization_id,
            attempt = field::Empty,
            model = field::Empty,
        );
        let result = self.run(interview_id, organization_id, deadline).instrument(span.clone()).await;
        let result = self.erased_instead(interview_id, result).await;
        span.in_scope(|| match &result {
            Ok(g) => tracing::info!(outcome = g.as_str(), "report generation finished"),
            // ERROR from the first attempt, so that the dashboard's ERROR widget shows every
            // failed report with its interview id (the span) and kind; a missing interview is no
            // report failure (nothing written, the message dropped).
            Err(e @ ReportError::InterviewNotFound { .. }) => {
                tracing::warn!(kind = e.kind(), error = %e, "report generation failed")
            }
            Err(e) => tracing::error!(
                kind = e.kind(),
                transient = e.is_transient(),
                error = %e,
                "report generation failed"
            ),
        });
        result
    }

    /// A failure of a report whose interview was erased meanwhile is no failure: the erasure's
    /// tombstone refused the write (a late model answer, a failure record), and the message is
    /// acknowledged as [`Generated::Erased`]. An error reading the tombstone keeps the failure.
    async fn erased_instead(
        &self,
        interview_id: InterviewId,
        result: Result<Generated, ReportError>,
    ) -> Result<Generated, ReportError> {
        match result {
            Ok(Generated::LeaseLost) | Err(_) => {
                match crate::erasure::report_is_tombstone(&self.db, interview_id).await {
                    Ok(true) => {
                        tracing::info!("the interview was erased while its report was generated; nothing stored");
                        Ok(Generated::Erased)
                    }
                    _ => result,
                }
            }
            result => result,
        }
    }

    async fn run(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Generated, ReportError> {
        // 1. The interview, org-scoped and not soft-deleted (decoded after the claim, so that an
        // unreadable one is recorded on its report).
        let Some(raw) = interview::load_raw(&self.db, interview_id, organization_id).await? else {
            return Err(ReportError::InterviewNotFound { interview_id, organization_id });
        };
        // 2.-5. The claim, or why there is none.
        let retention = retention_or_fallback(interview::retention_of(&raw), DateTime::now());
        let Some(lease) = self.claim(interview_id, organization_id, retention).await? else {
            return self.not_claimed(interview_id, retention).await;
        };
        let interview = match interview::decode(raw) {
            Ok(interview) => interview,
            Err(e) => return Err(self.failed(&lease, ReportError::Document(e)).await),
        };
        // 6. Insufficient evidence: a COMPLETED report without a model call.
        if let Some(insufficient) = evidence::assess(interview.duration_seconds, &interview.proctoring.transcript) {
            return self.complete_without_model(&lease, insufficient).await;
        }
        // 7. The model.
        self.generate_with_model(&lease, &interview, deadline).await
    }

    /// Steps 2-5, the claim: a first delivery inserts the report already claimed (one write);
    /// otherwise the atomic claim of the existing report. `None`: not claimed, and
    /// [`not_claimed`](Self::not_claimed) reads why. Every write sets the retention date.
    async fn claim(
        &self,
        interview_id: InterviewId,
        organization_id: OrganizationId,
        retention: DateTime,
    ) -> Result<Option<Lease>, ReportError> {
        let lease = match self.store.insert_claimed(interview_id, organization_id, retention, self.lease).await? {
            Some(lease) => lease,
            None => match self.store.claim(interview_id, self.lease, retention).await? {
                Some(lease) => lease,
                None => return Ok(None),
            },
        };
        tracing::Span::current().record("attempt", lease.attempt);
        tracing::info!(leaseExpiresAt = %lease.expires_at, "report claimed");
        Ok(Some(lease))
    }

    /// Step 6, the insufficient-evidence rule's report, stored COMPLETED without a model call.
    async fn complete_without_model(
        &self,
        lease: &Lease,
        insufficient: Insufficient,
    ) -> Result<Generated, ReportError> {
        tracing::info!(reason = insufficient.kind(), "insufficient evidence; no model call");
        let generation = GenerationMetadata {
            source: ReportSource::InsufficientEvidenceRule,
            model: None,
            requested_model: None,
            completion_id: None,
            prompt_version: prompt_version().to_owned(),
            prompt_tokens: 0,
            cached_tokens: 0,
            completion_tokens: 0,
            total_tokens: 0,
            latency_ms: 0,
            truncation: Truncation::default(),
            generated_at: DateTime::now(),
            calls: Vec::new(),
        };
        let content = insufficient.report();
        self.finish(lease, content, generation, ReportSource::InsufficientEvidenceRule, 0).await
    }

    /// Step 7, the model: the first call, one repair if its reply has a critical finding, the
    /// better reply stored. Every failure is recorded on the report and returned, the last
    /// attempt's included (docs/design.md, "Report generation"): SQS retries it, then moves it to
    /// the DLQ.
    async fn generate_with_model(
        &self,
        lease: &Lease,
        interview: &interview::Interview,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Generated, ReportError> {
        // Erased since the claim (requested, even before its tombstone is written): do not send
        // the candidate's data to the model. (A call already sent cannot be recalled; its answer
        // is refused by the tombstone.)
        if self.erased_since_claim(lease).await? {
            return Ok(Generated::Erased);
        }
        let prompt = self.prompt(interview);
        // Every call of the attempt (the first and the one repair) ends by the same time.
        let end = self.model.attempt_end(deadline);
        let expected = expectations(interview);
        let first = self.first_call(lease, &prompt, &expected, end).await?;
        // The repair sends the candidate's data again: not once the erasure is requested.
        if first.has_critical_findings() && self.erased_since_claim(lease).await? {
            return Ok(Generated::Erased);
        }
        let (stored, calls) = self.repair_if_critical(first, &prompt, &expected, end).await;
        let repair_calls = calls.iter().filter(|c| c.purpose == CallPurpose::Repair).count() as i64;
        let generation = self.model_generation(&stored.reply, calls, prompt.truncation);
        self.finish(lease, stored.into_content(), generation, ReportSource::Model, repair_calls).await
    }

    /// Whether the interview's erasure was requested or its tombstone written since the claim
    /// (an error reading it is recorded on the report and returned).
    async fn erased_since_claim(&self, lease: &Lease) -> Result<bool, ReportError> {
        match crate::erasure::is_erased(&self.db, InterviewId::new(lease.interview_id)).await {
            Ok(erased) => Ok(erased),
            Err(e) => Err(self.failed(lease, ReportError::Mongo(e)).await),
        }
    }

    /// The prompt within the limits; what was cut is logged (counts only) and recorded on the
    /// report.
    fn prompt(&self, interview: &interview::Interview) -> Prompt {
        let prompt = prompt::build_with(interview, &self.limits);
        tracing::Span::current().record("model", self.model.model());
        if prompt.truncation.any() {
            tracing::info!(
                resumeTruncated = prompt.truncation.resume_truncated,
                turnsShortened = prompt.truncation.turns_shortened,
                turnsOmitted = prompt.truncation.turns_omitted,
                turnsTotal = prompt.truncation.turns_total,
                "candidate data cut to the prompt's limits (recorded on the report)"
            );
        }
        prompt
    }

    /// The first chat completion, checked. Its failure is recorded on the report and returned.
    async fn first_call(
        &self,
        lease: &Lease,
        prompt: &Prompt,
        expected: &Expectations,
        end: tokio::time::Instant,
    ) -> Result<CheckedReply, ReportError> {
        match self.model.complete_until(&self.model.request(prompt), end).await {
            Ok(reply) => Ok(CheckedReply::new(reply, expected, CallPurpose::First)),
            Err(source) => {
                let error = ReportError::Model { attempt: lease.attempt, source };
                if lease.attempt >= MAX_ATTEMPTS && !error.is_transient() {
                    tracing::error!(
                        kind = error.kind(),
                        maxAttempts = MAX_ATTEMPTS,
                        "report generation failed on its last attempt; the report stays FAILED and the message goes to the DLQ"
                    );
                }
                Err(self.failed(lease, error).await)
            }
        }
    }

    /// One repair when the first reply has a critical finding (docs/report-quality.md). Returns
    /// the reply to store and every call made, the stored one marked. A failed repair call
    /// leaves the first reply stored, marked for review by its finding.
    async fn repair_if_critical(
        &self,
        first: CheckedReply,
        prompt: &Prompt,
        expected: &Expectations,
        end: tokio::time::Instant,
    ) -> (CheckedReply, Vec<ModelCall>) {
        if !first.has_critical_findings() {
            let call = first.call(CallPurpose::First);
            return (first, vec![call]);
        }
        let request = self.model.repair_request(prompt, &first.reply.content, &first.corrective_message(expected));
        match self.model.complete_until(&request, end).await {
            Ok(reply) => {
                let repair = CheckedReply::new(reply, expected, CallPurpose::Repair);
                CheckedReply::better_of(first, repair)
            }
            Err(e) => {
                tracing::warn!(kind = %e.kind(), "the repair call failed; the first reply is stored for review");
                let calls = vec![first.call(CallPurpose::First), failed_call(CallPurpose::Repair, e.kind())];
                (first, calls)
            }
        }
    }

    /// The generation metadata of a model-written report: `stored` is the reply stored; the
    /// tokens and the latency are the sums over every call of the attempt.
    fn model_generation(
        &self,
        stored: &ModelReply,
        calls: Vec<ModelCall>,
        truncation: Truncation,
    ) -> GenerationMetadata {
        let sum = |f: fn(&ModelCall) -> i64| calls.iter().map(f).sum::<i64>();
        GenerationMetadata {
            source: ReportSource::Model,
            model: Some(stored.model.clone()),
            requested_model: Some(self.model.model().to_owned()),
            completion_id: Some(stored.completion_id.clone()),
            prompt_version: prompt_version().to_owned(),
            prompt_tokens: sum(|c| c.prompt_tokens),
            cached_tokens: sum(|c| c.cached_tokens),
            completion_tokens: sum(|c| c.completion_tokens),
            total_tokens: sum(|c| c.total_tokens),
            latency_ms: sum(|c| c.latency_ms),
            truncation,
            generated_at: DateTime::now(),
            calls,
        }
    }

    /// Why the report could not be claimed: completed, out of attempts (acknowledged without a
    /// model call: the only failure acknowledged, docs/design.md "Report generation"), held by a live worker, or unreadable
    /// (recorded on the report and returned as `invalid_document`).
    async fn not_claimed(&self, interview_id: InterviewId, retention: DateTime) -> Result<Generated, ReportError> {
        let Some(raw) = self.store.find_raw(interview_id).await? else {
            // Deleted between the claim and this read: the next delivery starts afresh.
            tracing::info!("the report disappeared while being claimed; skipped");
            return Ok(Generated::HeldByAnother);
        };
        // A COMPLETED report is done, whatever else it holds; a tombstone is never written again.
        match raw.get_str("status").ok() {
            Some(s) if s == ReportStatus::Completed.as_str() => return Ok(Generated::AlreadyCompleted),
            Some(s) if s == ReportStatus::Erased.as_str() => {
                tracing::info!("the interview's candidate data was erased; acknowledged, nothing written");
                return Ok(Generated::Erased);
            }
            _ => {}
        }
        let report: StoredReport = match sophia_documents::decode(INTERVIEW_REPORTS, raw) {
            Ok(report) => report,
            Err(e) => {
                if let Err(write) = self.store.fail_unreadable(interview_id, &e, retention).await {
                    tracing::error!(error = %write, "could not record the unreadable report");
                }
                return Err(ReportError::Document(e));
            }
        };
        if report.attempt_count >= MAX_ATTEMPTS {
            return self.exhausted(interview_id, retention).await;
        }
        tracing::info!("another worker holds a live lease on this report; skipped");
        Ok(Generated::HeldByAnother)
    }

    async fn exhausted(&self, interview_id: InterviewId, retention: DateTime) -> Result<Generated, ReportError> {
        if self.store.mark_exhausted(interview_id, self.lease, retention).await? {
            tracing::warn!(
                maxAttempts = MAX_ATTEMPTS,
                "report is out of attempts; left FAILED and the message acknowledged"
            );
            Ok(Generated::AttemptsExhausted)
        } else {
            // A live holder is on its last attempt, or it completed meanwhile.
            match self.store.find(interview_id).await {
                Ok(Some(r)) if r.status == ReportStatus::Completed => Ok(Generated::AlreadyCompleted),
                Ok(Some(r)) if r.status == ReportStatus::Erased => Ok(Generated::Erased),
                _ => Ok(Generated::HeldByAnother),
            }
        }
    }

    async fn finish(
        &self,
        lease: &Lease,
        content: ReportContent,
        generation: GenerationMetadata,
        source: ReportSource,
        repair_calls: i64,
    ) -> Result<Generated, ReportError> {
        let recommendation = content.recommendation;
        // The review mark: never a silent contradiction (docs/report-quality.md).
        let needs_review = validate::critical(&content.validation_warnings).next().is_some();
        if needs_review {
            let codes: Vec<_> = validate::critical(&content.validation_warnings).map(|w| w.code.as_str()).collect();
            tracing::warn!(codes = %codes.join(","), "the stored report carries a critical finding; marked needsReview");
        }
        match self.store.complete(lease, &content, &generation, needs_review).await {
            Ok(true) => Ok(Generated::Completed {
                recommendation,
                source,
                attempt: lease.attempt,
                usage: Usage {
                    prompt_tokens: generation.prompt_tokens,
                    cached_tokens: generation.cached_tokens,
                    completion_tokens: generation.completion_tokens,
                    latency_ms: generation.latency_ms,
                    repair_calls,
                    needs_review,
                },
            }),
            Ok(false) => {
                tracing::warn!("lease lost before the report was written (expired and reclaimed); result discarded");
                Ok(Generated::LeaseLost)
            }
            Err(e) => Err(self.failed(lease, ReportError::Mongo(e)).await),
        }
    }

    /// FAILED with `lastError` and `errorKind` (and a refusal's text), before the error is
    /// returned. If even that write fails, the lease expires on its own and the retry reclaims
    /// the report.
    async fn failed(&self, lease: &Lease, error: ReportError) -> ReportError {
        let kind = error.error_kind().unwrap_or(ErrorKind::Database);
        match self.store.fail(lease, &error.to_string(), kind, error.refusal()).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!("lease lost before the failure was recorded"),
            Err(e) => tracing::error!(error = %e, "could not record the failure; the lease will expire"),
        }
        error
    }
}

/// One call's line (no content: tokens, ids, latency).
fn log_reply(reply: &ModelReply, purpose: CallPurpose) {
    tracing::info!(
        call = ?purpose,
        respondingModel = %reply.model,
        promptTokens = reply.prompt_tokens,
        completionTokens = reply.completion_tokens,
        totalTokens = reply.total_tokens,
        cachedTokens = reply.cached_tokens,
        retries = reply.retries,
        latencyMs = reply.latency.as_millis() as u64,
        "chat completion received"
    );
}

/// The codes of a reply's findings (never their text's subject: codes only).
fn log_findings(warnings: &[ValidationWarning], purpose: CallPurpose) {
    if !warnings.is_empty() {
        let codes: Vec<_> = warnings.iter().map(|w| w.code.as_str()).collect();
        tracing::warn!(
            call = ?purpose,
            validationWarnings = warnings.len(),
            critical = validate::critical(warnings).count(),
            codes = %codes.join(","),
            "the model's output disagreed with the interview; corrected or flagged on the report"
        );
    }
}

/// One chat completion of an attempt (the first or the repair) and what the check against the
/// interview made of it.
struct CheckedReply {
    /// The reply as the model answered: its report before the check, its content, its usage.
    reply: ModelReply,
    /// Its report after the check: what is stored if this reply is kept.
    checked: LlmReport,
    /// The check's findings.
    warnings: Vec<ValidationWarning>,
}

impl CheckedReply {
    /// Logs the reply, checks it against the interview before it can be stored (docs/design.md,
    /// "Report generation"), and logs the findings' codes.
    fn new(reply: ModelReply, expected: &Expectations, purpose: CallPurpose) -> Self {
        log_reply(&reply, purpose);
        let (checked, warnings) = validate::check(reply.report.clone(), expected);
        log_findings(&warnings, purpose);
        Self { reply, checked, warnings }
    }

    /// A critical finding a repair can clear: the reply is repaired once. (Any critical finding,
    /// this kind or one about the transcript, marks the stored report for review.)
    fn has_critical_findings(&self) -> bool {
        validate::critical(&self.warnings).any(|w| w.code.repairable())
    }

    /// What the repair request tells the model to fix in this reply.
    fn corrective_message(&self, expected: &Expectations) -> String {
        repair::corrective_message(&self.reply.report, &self.checked, &self.warnings, expected)
    }

    /// Whether this reply, the repair of `first`, is the one to store
    /// ([`repair::repair_is_better`]).
    fn replaces(&self, first: &CheckedReply) -> bool {
        repair::repair_is_better(&first.warnings, &self.warnings)
    }

    /// Of `first` and its `repair`, the one to store ([`replaces`](Self::replaces)), and the two
    /// calls (first, repair) with only the stored one marked.
    fn better_of(first: CheckedReply, repair: CheckedReply) -> (CheckedReply, Vec<ModelCall>) {
        let (mut first_call, mut repair_call) = (first.call(CallPurpose::First), repair.call(CallPurpose::Repair));
        let stored = if repair.replaces(&first) {
            first_call.stored = false;
            repair
        } else {
            repair_call.stored = false;
            first
        };
        (stored, vec![first_call, repair_call])
    }

    /// Its entry in the report's calls (no content: tokens, ids, latency), marked stored.
    fn call(&self, purpose: CallPurpose) -> ModelCall {
        let reply = &self.reply;
        ModelCall {
            purpose,
            completion_id: Some(reply.completion_id.clone()),
            prompt_tokens: i64::from(reply.prompt_tokens),
            cached_tokens: i64::from(reply.cached_tokens),
            completion_tokens: i64::from(reply.completion_tokens),
            total_tokens: i64::from(reply.total_tokens),
            latency_ms: reply.latency.as_millis() as i64,
            critical_findings: Some(validate::critical(&self.warnings).count() as i64),
            error_kind: None,
            stored: true,
        }
    }

    /// The report to store: the checked report with its findings.
    fn into_content(self) -> ReportContent {
        let mut content: ReportContent = self.checked.into();
        content.validation_warnings = self.warnings;
        content
    }
}

/// The entry of a call that produced no report: no tokens (an HTTP error answer is not billed),
/// never stored.
fn failed_call(purpose: CallPurpose, error_kind: ErrorKind) -> ModelCall {
    ModelCall {
        purpose,
        completion_id: None,
        prompt_tokens: 0,
        cached_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        latency_ms: 0,
        critical_findings: None,
        error_kind: Some(error_kind),
        stored: false,
    }
}

/// What the model's output is checked against: the snapshot's skills and questions, the
/// candidate's turns.
fn expectations(interview: &interview::Interview) -> validate::Expectations {
    validate::Expectations {
        skills: interview.snapshot.skills.iter().map(|s| s.label().to_owned()).collect(),
        questions: interview.snapshot.questions.iter().map(|q| q.label().to_owned()).collect(),
        candidate_turns: interview
            .proctoring
            .transcript
            .iter()
            .filter(|t| t.is_candidate())
            .map(|t| t.text.clone())
            .collect(),
    }
}
