//! What one report costs, in the numbers people read: input, cached and output tokens
//! of the chat completion for a 30-minute and a 4-hour fixture interview, counted with OpenAI's
//! o200k tokenizer (gpt-4.1's), and the list-price cost, for the prompt as it is now and as it
//! was before the compact form and the token budget (`report-v1`: the interview as pretty JSON
//! with a speaker key per turn, the transcript cut after 60,000 characters).
//!
//! Counts are of the request's text (system message, user message, response schema) plus a few
//! tokens of message framing; OpenAI's own `usage` can differ by a handful of tokens. Cached
//! tokens are the static prefix (the instructions and the schema) as OpenAI's prompt caching
//! would serve it on a repeated request: from 1,024 tokens on, in steps of 128 (https://platform.openai.com/docs/guides/prompt-caching).
//!
//! The worst case of a report is its first call plus the one repair a reply with a critical
//! finding gets (`docs/report-quality.md`): the same request, then the first reply and a short
//! corrective message. The repair is counted with only the static prefix cached (OpenAI may also
//! serve the first request's whole prompt from its cache, which would make it cheaper: the table
//! gives the bound), and with a reply as long as the first.

use serde::Serialize;
use serde_json::json;
use sophia_reports::interview::{Interview, Proctoring, Snapshot, Turn};
use sophia_reports::schema::report_schema;
use sophia_reports::{prompt, repair, validate};

/// gpt-4.1-mini list prices, US dollars per million tokens (https://openai.com/api/pricing/, read 2026-12-03).
pub const INPUT_PER_MILLION: f64 = 0.40;
pub const CACHED_INPUT_PER_MILLION: f64 = 0.10;
pub const OUTPUT_PER_MILLION: f64 = 1.60;
/// Prompt caching starts at this many prompt tokens and grows in steps of [`CACHE_STEP`].
pub const CACHE_MINIMUM: usize = 1_024;
pub const CACHE_STEP: usize = 128;
/// Tokens of chat framing per message, and for the reply's priming (OpenAI's cookbook figures).
const TOKENS_PER_MESSAGE: usize = 3;
const REPLY_PRIMING: usize = 3;
/// The `report-v1` transcript bound, for the "before" rows.
const V1_MAX_TRANSCRIPT_CHARS: usize = 60_000;

#[derive(Debug, Clone, Serialize)]
pub struct ReportCost {
    pub interview: String,
    pub prompt: String,
    pub turns: usize,
    pub transcript_chars: usize,
    pub turns_sent: usize,
    pub input_tokens: usize,
    pub cached_tokens: usize,
    pub output_tokens: usize,
    /// A first request (nothing cached) and a repeated one (the static prefix cached), in USD.
    pub cost_first_usd: f64,
    pub cost_cached_usd: f64,
    /// The repair call (the prompt as it is now only): its input tokens and cost, and the worst
    /// case of one report, a repeated request plus its repair.
    pub repair_input_tokens: Option<usize>,
    pub cost_repair_usd: Option<f64>,
    pub cost_worst_usd: Option<f64>,
}

/// A fixture interview of `turns` turns alternating interviewer / candidate, varied text.
pub fn fixture(turns: usize) -> Interview {
    const QUESTIONS: [&str; 4] = [
        "Could you walk me through how you would design the retry policy for this consumer?",
        "What would you measure first if the settlement latency doubled overnight?",
        "How do you keep candidate data out of the logs when an error quotes a document?",
        "Tell me about a time you had to roll back a deployment under pressure.",
    ];
    const ANSWERS: [&str; 4] = [
        "I would separate transient failures from permanent ones at the edge, keep the domain free of transport types, \
         retry the transient ones with a bounded budget derived from the remaining time, and send the permanent ones to a \
         dead-letter queue where an operator can see them and replay them later after the fix is deployed.",
        "First the round trips per settlement and the commit latency on the primary, then the queue age, because a \
         doubling usually means a slower database or a backlog, and the two look the same from the outside until you \
         split the time per step; I would add a span per step if they were missing.",
        "Errors name the field path and the expected type, never the value; the decoder is ours, so the driver's message \
         that quotes the value never reaches a log line, and a test seeds a marker string everywhere and greps for it.",
        "We had a migration that locked a table for minutes; I paged the owner, rolled back with the previous image, \
         wrote the timeline while it was fresh, and the follow-up split the migration into batches with a throttle.",
    ];
    let transcript = (0..turns)
        .map(|i| {
            let k = (i / 2) % 4;
            if i % 2 == 0 {
                Turn { speaker: "interviewer".into(), text: QUESTIONS[k].into() }
            } else {
                // Two of the answers, so a turn is about 650 characters: 80 turns are about 28,000
                // characters (a 30-minute interview), 960 about 330,000 (four hours).
                let text = format!("{} {} (answer {})", ANSWERS[k], ANSWERS[(k + 1) % 4], i / 2 + 1);
                Turn { speaker: "candidate".into(), text }
            }
        })
        .collect();
    Interview {
        id: bson::oid::ObjectId::new(),
        organization_id: bson::oid::ObjectId::new(),
        duration_seconds: Some(turns as f64 * 15.0),
        retention_expires_at: None,
        snapshot: Snapshot {
            role: Some("Senior Backend Engineer".into()),
            skills: ["Rust", "Distributed systems", "Databases", "Incident response"]
                .iter()
                .map(|s| sophia_reports::interview::Labelled::Text((*s).into()))
                .collect(),
            questions: QUESTIONS.iter().map(|q| sophia_reports::interview::Labelled::Text((*q).into())).collect(),
            resume_text: Some("Backend engineer, 8 years: Rust, PostgreSQL, MongoDB, AWS Lambda, SQS. ".repeat(20)),
        },
        proctoring: Proctoring { transcript },
        credibility: None,
    }
}

/// The `report-v1` user message: pretty JSON, a speaker key per turn, the first 60,000
/// characters of transcript.
fn v1_user_message(interview: &Interview) -> (String, usize) {
    let mut budget = V1_MAX_TRANSCRIPT_CHARS;
    let mut sent = Vec::new();
    for t in &interview.proctoring.transcript {
        if budget == 0 {
            break;
        }
        let text: String = t.text.chars().take(budget.min(4_000)).collect();
        budget = budget.saturating_sub(text.chars().count());
        sent.push(json!({"speaker": t.speaker, "text": text}));
    }
    let data = json!({
        "role": interview.snapshot.role,
        "skills": interview.snapshot.skills.iter().map(|s| s.label()).collect::<Vec<_>>(),
        "questions": interview.snapshot.questions.iter().map(|s| s.label()).collect::<Vec<_>>(),
        "durationSeconds": interview.duration_seconds,
        "credibility": null,
        "resume": interview.snapshot.resume_text,
        "transcript": sent,
        "truncationNotes": [],
    });
    let n = sent.len();
    (
        format!(
            "Interview data to assess (JSON):\n<interview_data>\n{}\n</interview_data>",
            serde_json::to_string_pretty(&data).unwrap()
        ),
        n,
    )
}

fn cached(prefix_tokens: usize) -> usize {
    if prefix_tokens < CACHE_MINIMUM { 0 } else { prefix_tokens / CACHE_STEP * CACHE_STEP }
}

fn usd(input: usize, cached: usize, output: usize) -> f64 {
    ((input - cached) as f64 * INPUT_PER_MILLION
        + cached as f64 * CACHED_INPUT_PER_MILLION
        + output as f64 * OUTPUT_PER_MILLION)
        / 1e6
}

/// The cost rows: 30-minute (80 turns) and 4-hour (960 turns) interviews, before and now.
pub fn report_costs() -> Result<Vec<ReportCost>, String> {
    let bpe = tiktoken_rs::o200k_base().map_err(|e| format!("o200k vocabulary: {e}"))?;
    let count = |s: &str| bpe.encode_with_special_tokens(s).len();
    let schema = serde_json::to_string(&report_schema()).unwrap_or_default();
    let static_tokens = count(prompt::SYSTEM_PROMPT) + count(&schema) + TOKENS_PER_MESSAGE;
    let mut rows = Vec::new();
    for (name, turns) in [("30-minute (80 turns)", 80), ("4-hour (960 turns)", 960)] {
        let interview = fixture(turns);
        let transcript_chars = interview.proctoring.transcript.iter().map(|t| t.text.chars().count()).sum();
        let now = prompt::build(&interview);
        let (v1_user, v1_sent) = v1_user_message(&interview);
        let now_sent = turns - now.truncation.turns_omitted as usize;
        // The reply: the offline model's report for the interview, as the JSON the model writes.
        let request = json!({"messages": [{"role": "user", "content": now.user}]});
        let reply = serde_json::to_string(&sophia_openai_fake::deterministic_report(&request)).unwrap_or_default();
        let output = count(&reply);
        // The repair's extra messages: a first reply as long as a good one, and the corrective
        // message for the offline model's compromised reply (strong_hire at 50, nothing of the
        // interview assessed: every kind of line it can hold).
        let expected = validate::Expectations {
            skills: interview.snapshot.skills.iter().map(|s| s.label().to_owned()).collect(),
            questions: interview.snapshot.questions.iter().map(|q| q.label().to_owned()).collect(),
            candidate_turns: interview.proctoring.transcript.iter().map(|t| t.text.clone()).collect(),
        };
        let compromised = sophia_openai_fake::compromised_report(&request);
        let (checked, warnings) = validate::check(compromised.clone(), &expected);
        let corrective = repair::corrective_message(&compromised, &checked, &warnings, &expected);
        let repair_extra = output + count(&corrective) + 2 * TOKENS_PER_MESSAGE;
        for (label, user, sent) in [("report-v1 (before)", v1_user, v1_sent), ("now", now.user.clone(), now_sent)] {
            let input = static_tokens + count(&user) + TOKENS_PER_MESSAGE + REPLY_PRIMING;
            let cached_tokens = cached(static_tokens);
            let is_now = label == "now";
            let repair_input = input + repair_extra;
            let cost_repair = usd(repair_input, cached_tokens, output);
            rows.push(ReportCost {
                interview: name.to_owned(),
                prompt: label.to_owned(),
                turns,
                transcript_chars,
                turns_sent: sent,
                input_tokens: input,
                cached_tokens,
                output_tokens: output,
                cost_first_usd: usd(input, 0, output),
                cost_cached_usd: usd(input, cached_tokens, output),
                repair_input_tokens: is_now.then_some(repair_input),
                cost_repair_usd: is_now.then_some(cost_repair),
                cost_worst_usd: is_now.then_some(usd(input, cached_tokens, output) + cost_repair),
            });
        }
    }
    Ok(rows)
}

/// The table printed by the bench.
pub fn table(rows: &[ReportCost]) -> String {
    let mut out = format!(
        "\nCost of one report (gpt-4.1-mini list prices: input ${INPUT_PER_MILLION}/M, cached ${CACHED_INPUT_PER_MILLION}/M, output ${OUTPUT_PER_MILLION}/M; o200k counts; now = {})\n",
        prompt::prompt_version()
    );
    out += "  usual = one call (repeated: the static prefix cached); worst = usual + the one repair of a reply with a critical finding (static prefix cached only)\n";
    out += &format!(
        "  {:<22} {:<20} {:>11} {:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10}\n",
        "interview", "prompt", "turns sent", "input", "cached", "output", "first", "usual", "repair", "worst"
    );
    let money = |v: Option<f64>| v.map_or_else(|| format!("{:>10}", "-"), |v| format!("{v:>9.4}$"));
    for r in rows {
        out += &format!(
            "  {:<22} {:<20} {:>5}/{:<5} {:>8} {:>8} {:>7} {:>9.4}$ {:>9.4}$ {} {}\n",
            r.interview,
            r.prompt,
            r.turns_sent,
            r.turns,
            r.input_tokens,
            r.cached_tokens,
            r.output_tokens,
            r.cost_first_usd,
            r.cost_cached_usd,
            money(r.cost_repair_usd),
            money(r.cost_worst_usd)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_hour_interview_is_sent_whole_now_and_was_cut_before() {
        let rows = report_costs().unwrap();
        let row = |interview: &str, prompt: &str| {
            rows.iter().find(|r| r.interview.starts_with(interview) && r.prompt.starts_with(prompt)).unwrap().clone()
        };
        let (before, now) = (row("4-hour", "report-v1"), row("4-hour", "now"));
        assert_eq!(now.turns_sent, 960);
        assert!(before.turns_sent < 300, "v1 kept only the beginning: {}", before.turns_sent);
        let (before30, now30) = (row("30-minute", "report-v1"), row("30-minute", "now"));
        assert_eq!((before30.turns_sent, now30.turns_sent), (80, 80));
        assert!(now30.input_tokens < before30.input_tokens, "the compact form is smaller: {now30:?} vs {before30:?}");
        assert!(now30.cached_tokens >= CACHE_MINIMUM, "the static prefix is long enough to be cached");
        assert!(now30.cost_cached_usd < now30.cost_first_usd);
    }

    #[test]
    fn the_worst_case_is_the_usual_call_plus_one_repair_and_stays_bounded() {
        let rows = report_costs().unwrap();
        for r in rows.iter().filter(|r| r.prompt == "now") {
            let (repair, worst) = (r.cost_repair_usd.unwrap(), r.cost_worst_usd.unwrap());
            assert!(r.repair_input_tokens.unwrap() > r.input_tokens, "{r:?}");
            assert!(repair > r.cost_cached_usd, "the repair re-sends the request and more: {r:?}");
            assert!((worst - (r.cost_cached_usd + repair)).abs() < 1e-12, "{r:?}");
            assert!(worst < 2.5 * r.cost_first_usd, "at most one repair: {r:?}");
        }
        for r in rows.iter().filter(|r| r.prompt != "now") {
            assert_eq!((r.cost_repair_usd, r.cost_worst_usd), (None, None), "no repair before: {r:?}");
        }
        let table = table(&rows);
        assert!(table.contains("worst") && table.contains("repair"), "{table}");
    }
}
