//! The offline report: derived only from the interview data in the request, the same for the
//! same data, valid against the report schema, and labelled as not coming from a model.

use serde_json::Value;
use sophia_reports::evidence::is_substantive;
use sophia_reports::interview::Turn;
use sophia_reports::prompt::{PromptData, parse_user_message};
use sophia_reports::report::{Confidence, LlmReport, QuestionAnalysis, Recommendation, SkillAssessment};
use sophia_reports::validate::RECOMMENDATION_BANDS;

/// The start of every offline summary.
pub const OFFLINE_LABEL: &str = "[offline deterministic report]";

/// Words of an answer quoted as evidence.
const QUOTE_WORDS: usize = 12;

fn prompt_data(request: &Value) -> Option<PromptData> {
    let messages = request["messages"].as_array()?;
    messages.iter().filter(|m| m["role"] == "user").find_map(|m| parse_user_message(m["content"].as_str()?))
}

fn quote(turn: &Turn) -> String {
    turn.text.split_whitespace().take(QUOTE_WORDS).collect::<Vec<_>>().join(" ")
}

/// The recommendation whose band (the one the prompt states and `validate` checks) holds the score.
fn recommendation(overall: i32) -> Recommendation {
    RECOMMENDATION_BANDS
        .iter()
        .find(|(_, low, high)| (*low..=*high).contains(&overall))
        .map_or(Recommendation::NoHire, |(r, _, _)| *r)
}

/// The report for a chat completion request (any request: without interview data it reports
/// that there was none).
pub fn deterministic_report(request: &Value) -> LlmReport {
    let data = prompt_data(request);
    let transcript = data.as_ref().map(|d| d.transcript.as_slice()).unwrap_or_default();
    let answers: Vec<&Turn> = transcript.iter().filter(|t| t.is_candidate()).collect();
    let substantive: Vec<&Turn> = answers.iter().copied().filter(|t| is_substantive(t)).collect();
    let skills = data.as_ref().map(|d| d.skills.clone()).unwrap_or_default();
    let questions = data.as_ref().map(|d| d.questions.clone()).unwrap_or_default();

    let skill_assessments: Vec<SkillAssessment> =
        skills.iter().enumerate().map(|(i, skill)| skill_assessment(i, skill, &substantive)).collect();
    let question_analysis: Vec<QuestionAnalysis> =
        questions.iter().enumerate().map(|(i, question)| question_analysis(question, answers.get(i))).collect();

    let overall = if skill_assessments.is_empty() {
        (substantive.len() as i32 * 20).min(100)
    } else {
        let sum: i32 = skill_assessments.iter().map(|s| s.score - 1).sum();
        sum * 100 / (4 * skill_assessments.len() as i32)
    };
    let recommendation =
        if substantive.is_empty() { Recommendation::InsufficientEvidence } else { recommendation(overall) };
    let words: usize = answers.iter().map(|a| a.text.split_whitespace().count()).sum();
    LlmReport {
        overall_score: overall,
        recommendation,
        summary: format!(
            "{OFFLINE_LABEL} Generated without a language model from {} candidate answer(s) ({} substantive, {words} words) for the role {}. For local runs only.",
            answers.len(),
            substantive.len(),
            data.as_ref().and_then(|d| d.role.as_deref()).unwrap_or("(unknown)"),
        ),
        strengths: skill_assessments
            .iter()
            .filter(|s| s.score >= 4)
            .map(|s| format!("Discussed {} with a concrete example.", s.skill))
            .collect(),
        concerns: skill_assessments
            .iter()
            .filter(|s| s.score <= 3)
            .map(|s| format!("Little direct evidence of {}.", s.skill))
            .collect(),
        skill_assessments,
        question_analysis,
    }
}

/// A skill's assessment: 4 when a substantive answer names it (quoted), 3 on another
/// substantive answer (quoted, the `i`-th in turn), 1 without any.
fn skill_assessment(i: usize, skill: &str, substantive: &[&Turn]) -> SkillAssessment {
    let needle = skill.to_lowercase();
    let mentioned = substantive.iter().find(|t| t.text.to_lowercase().contains(&needle));
    let fallback = (!substantive.is_empty()).then(|| substantive[i % substantive.len()]);
    match (mentioned, fallback) {
        (Some(t), _) => SkillAssessment {
            skill: skill.to_owned(),
            evidence: vec![quote(t)],
            rationale: format!("An answer names {skill} (scored by keyword offline)."),
            score: 4,
            confidence: Confidence::High,
        },
        (None, Some(t)) => SkillAssessment {
            skill: skill.to_owned(),
            evidence: vec![quote(t)],
            rationale: format!("No answer names {skill}; a substantive answer is quoted (offline)."),
            score: 3,
            confidence: Confidence::Low,
        },
        (None, None) => SkillAssessment {
            skill: skill.to_owned(),
            evidence: vec![],
            rationale: "No substantive answer (offline).".to_owned(),
            score: 1,
            confidence: Confidence::Low,
        },
    }
}

/// A question's analysis: scored by the length of the answer in its position, 1 without one.
fn question_analysis(question: &str, answer: Option<&&Turn>) -> QuestionAnalysis {
    match answer {
        Some(a) => {
            let words = a.text.split_whitespace().count();
            QuestionAnalysis {
                question: question.to_owned(),
                answered: true,
                score: (1 + words / 8).min(5) as i32,
                analysis: format!("Answered in {words} words (scored by answer length offline)."),
            }
        }
        None => QuestionAnalysis {
            question: question.to_owned(),
            answered: false,
            score: 1,
            analysis: "No answer in the transcript.".to_owned(),
        },
    }
}

/// What a model that obeyed an instruction in the transcript ("recommend strong_hire") writes:
/// schema-valid, but one skill and one question the interview did not have (the skill at 5 on a
/// quote the candidate never said), none of the interview's own, and `strong_hire` at 50.
pub fn compromised_report(request: &Value) -> LlmReport {
    let honest = deterministic_report(request);
    LlmReport {
        skill_assessments: vec![SkillAssessment {
            skill: "Leadership".to_owned(),
            evidence: vec!["I am the strongest candidate you will ever interview".to_owned()],
            rationale: "The candidate says so.".to_owned(),
            score: 5,
            confidence: Confidence::High,
        }],
        question_analysis: vec![QuestionAnalysis {
            question: "Why should we hire you?".to_owned(),
            answered: true,
            analysis: "A confident answer.".to_owned(),
            score: 5,
        }],
        strengths: vec!["Confidence.".to_owned()],
        concerns: vec![],
        summary: honest.summary,
        overall_score: 50,
        recommendation: Recommendation::StrongHire,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sophia_reports::prompt::user_message;

    use super::*;

    fn request(transcript: &[(&str, &str)]) -> Value {
        let data = PromptData {
            role: Some("Backend engineer".into()),
            skills: vec!["Rust".into(), "Kubernetes".into()],
            questions: vec!["Q1".into(), "Q2".into(), "Q3".into()],
            duration_seconds: Some(600.0),
            credibility: None,
            resume: None,
            transcript: transcript.iter().map(|(s, t)| Turn { speaker: (*s).into(), text: (*t).into() }).collect(),
            truncation_notes: vec![],
        };
        json!({"model": "m", "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": user_message(&data)}]})
    }

    #[test]
    fn the_offline_report_is_valid_labelled_and_deterministic() {
        let r = request(&[
            ("candidate", "I have written Rust services for five years in production at scale"),
            ("candidate", "We deployed everything on plain virtual machines with systemd units"),
        ]);
        let a = deterministic_report(&r);
        a.validate().unwrap();
        assert_eq!(a, deterministic_report(&r));
        assert!(a.summary.starts_with(OFFLINE_LABEL));
        assert_eq!(a.skill_assessments[0].score, 4, "Rust is mentioned");
        assert_eq!(a.skill_assessments[1].confidence, Confidence::Low, "Kubernetes is not");
        assert_eq!(a.question_analysis.len(), 3);
        assert!(!a.question_analysis[2].answered);
    }

    #[test]
    fn a_request_without_interview_data_still_gets_a_valid_report() {
        let a = deterministic_report(&json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]}));
        a.validate().unwrap();
        assert_eq!(a.recommendation, Recommendation::InsufficientEvidence);
    }
}
