//! The insufficient-evidence rule: an interview too short to judge gets a COMPLETED
//! `insufficient_evidence` report without a model call (DESIGN.md, "Report generation").

use crate::interview::Turn;
use crate::model::{Recommendation, ReportContent};

/// Interviews shorter than this (in seconds) cannot be judged.
pub const MIN_DURATION_SECONDS: f64 = 60.0;

/// At least this many substantive candidate answers are needed to judge.
pub const MIN_SUBSTANTIVE_ANSWERS: usize = 2;

/// A candidate turn is a *substantive answer* when it has at least this many words.
///
/// Why 8: replies below it are acknowledgements, refusals or clarification requests ("yes",
/// "I don't know", "sorry, could you repeat the question?" is 6 words) and carry nothing to
/// assess; eight words is about the shortest sentence that states an approach, a fact or an
/// example ("I used Rust to rewrite our billing service"). Counting words rather than characters
/// keeps the rule language-neutral for space-separated languages and immune to padding with
/// punctuation.
pub const SUBSTANTIVE_ANSWER_MIN_WORDS: usize = 8;

/// Why an interview cannot be judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Insufficient {
    /// Shorter than [`MIN_DURATION_SECONDS`] (a missing duration counts as 0).
    TooShort { duration_seconds: f64 },
    /// Fewer than [`MIN_SUBSTANTIVE_ANSWERS`] candidate turns of at least
    /// [`SUBSTANTIVE_ANSWER_MIN_WORDS`] words.
    TooFewAnswers { substantive_answers: usize },
}

impl Insufficient {
    /// The reason as stored in the report (no candidate text).
    pub fn reason(&self) -> String {
        match self {
            Self::TooShort { duration_seconds } => format!(
                "interview lasted {duration_seconds} s, less than the {MIN_DURATION_SECONDS} s needed to assess a candidate"
            ),
            Self::TooFewAnswers { substantive_answers } => format!(
                "{substantive_answers} substantive candidate answer(s) (of at least {SUBSTANTIVE_ANSWER_MIN_WORDS} words); at least {MIN_SUBSTANTIVE_ANSWERS} are needed"
            ),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::TooShort { .. } => "too_short",
            Self::TooFewAnswers { .. } => "too_few_answers",
        }
    }

    /// The stored report for this case: no score, recommendation `insufficient_evidence`.
    pub fn report(&self) -> ReportContent {
        let reason = self.reason();
        ReportContent {
            overall_score: None,
            recommendation: Recommendation::InsufficientEvidence,
            summary: format!("Not enough evidence to assess the candidate: {reason}."),
            strengths: Vec::new(),
            concerns: Vec::new(),
            skill_assessments: Vec::new(),
            question_analysis: Vec::new(),
            insufficient_evidence_reason: Some(reason),
            validation_warnings: Vec::new(),
        }
    }
}

pub fn is_substantive(turn: &Turn) -> bool {
    turn.is_candidate() && turn.text.split_whitespace().count() >= SUBSTANTIVE_ANSWER_MIN_WORDS
}

/// The rule. `None`: enough evidence, ask the model.
pub fn assess(duration_seconds: Option<f64>, transcript: &[Turn]) -> Option<Insufficient> {
    let duration = duration_seconds.filter(|d| d.is_finite()).unwrap_or(0.0);
    if duration < MIN_DURATION_SECONDS {
        return Some(Insufficient::TooShort { duration_seconds: duration });
    }
    let substantive_answers = transcript.iter().filter(|t| is_substantive(t)).count();
    if substantive_answers < MIN_SUBSTANTIVE_ANSWERS {
        return Some(Insufficient::TooFewAnswers { substantive_answers });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(speaker: &str, text: &str) -> Turn {
        Turn { speaker: speaker.into(), text: text.into() }
    }

    const LONG: &str = "I rewrote our billing service in Rust over two quarters";

    #[test]
    fn duration_below_sixty_seconds_is_insufficient_even_with_answers() {
        let t = [turn("candidate", LONG), turn("candidate", LONG)];
        assert_eq!(assess(Some(59.0), &t), Some(Insufficient::TooShort { duration_seconds: 59.0 }));
        assert_eq!(assess(None, &t), Some(Insufficient::TooShort { duration_seconds: 0.0 }));
        assert_eq!(assess(Some(60.0), &t), None);
    }

    #[test]
    fn only_candidate_turns_of_enough_words_count() {
        let short = "sorry, could you repeat the question?";
        let t =
            [turn("interviewer", LONG), turn("candidate", short), turn("Candidate", LONG), turn("candidate", "yes")];
        assert_eq!(assess(Some(600.0), &t), Some(Insufficient::TooFewAnswers { substantive_answers: 1 }));
        let t = [turn("candidate", LONG), turn(" CANDIDATE ", LONG)];
        assert_eq!(assess(Some(600.0), &t), None);
    }

    #[test]
    fn the_threshold_is_exactly_the_constant() {
        let seven = "one two three four five six seven";
        let eight = "one two three four five six seven eight";
        assert!(!is_substantive(&turn("candidate", seven)));
        assert!(is_substantive(&turn("candidate", eight)));
    }

    #[test]
    fn the_stored_report_has_no_score_and_says_why() {
        let r = Insufficient::TooFewAnswers { substantive_answers: 1 }.report();
        assert_eq!(r.recommendation, Recommendation::InsufficientEvidence);
        assert_eq!(r.overall_score, None);
        assert!(r.insufficient_evidence_reason.unwrap().contains("1 substantive"));
    }
}
