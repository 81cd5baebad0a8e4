//! The insufficient-evidence rule: an interview too short to judge gets a COMPLETED
//! `insufficient_evidence` report without a model call (docs/design.md, "Report generation").

use unicode_segmentation::UnicodeSegmentation;

use crate::interview::Turn;
use crate::report::{Recommendation, ReportContent};

/// Interviews shorter than this (in seconds) cannot be judged.
pub const MIN_DURATION_SECONDS: f64 = 60.0;

/// At least this many substantive candidate answers are needed to judge.
pub const MIN_SUBSTANTIVE_ANSWERS: usize = 2;

/// A candidate turn is a *substantive answer* when it has at least this many words.
///
/// Why 8: replies below it are acknowledgements, refusals or clarification requests ("yes",
/// "I don't know", "sorry, could you repeat the question?" is 6 words) and carry nothing to
/// assess; eight words is about the shortest sentence that states an approach, a fact or an
/// example ("I used Rust to rewrite our billing service"). Words are counted by [`word_count`]
/// (Unicode word segmentation), so the rule holds for every script, not only for languages that
/// separate words with spaces, and punctuation never counts.
pub const SUBSTANTIVE_ANSWER_MIN_WORDS: usize = 8;

/// Han and Hiragana characters per word. Unicode word segmentation (UAX #29) has no dictionary:
/// it splits Chinese and Japanese into one segment per character. Chinese words average about 1.5
/// to 2 characters; counting every character as a word would make "对不起，你能重复一下问题吗？"
/// ("sorry, could you repeat the question?", 12 characters) substantive.
pub const CHARS_PER_WORD_HAN_KANA: usize = 2;

/// Segments per word for Thai, Lao, Khmer and Myanmar, written without spaces: UAX #29 without a
/// dictionary yields about one segment per letter (with its marks), and their words average
/// about three of them.
pub const SEGMENTS_PER_WORD_SOUTHEAST_ASIAN: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    /// Han and Hiragana: one segment per character.
    HanKana,
    /// Thai, Lao, Khmer, Myanmar: about one segment per letter.
    SoutheastAsian,
    /// Everything else, Katakana runs included (one segment is one word).
    Spaced,
}

fn script(c: char) -> Script {
    match u32::from(c) {
        0x3040..=0x309F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F => Script::HanKana,
        0x0E00..=0x0EFF | 0x1000..=0x109F | 0x1780..=0x17FF => Script::SoutheastAsian,
        _ => Script::Spaced,
    }
}

/// The number of words in `text`, in any script: Unicode word segments (UAX #29, which skips
/// punctuation and spaces); segments of scripts written without spaces are converted to words
/// by [`CHARS_PER_WORD_HAN_KANA`] and [`SEGMENTS_PER_WORD_SOUTHEAST_ASIAN`] (rounded up).
pub fn word_count(text: &str) -> usize {
    let (mut words, mut han_kana, mut southeast_asian) = (0_usize, 0_usize, 0_usize);
    for segment in text.unicode_words() {
        match segment.chars().next().map_or(Script::Spaced, script) {
            Script::HanKana => han_kana += segment.chars().count(),
            Script::SoutheastAsian => southeast_asian += 1,
            Script::Spaced => words += 1,
        }
    }
    words + han_kana.div_ceil(CHARS_PER_WORD_HAN_KANA) + southeast_asian.div_ceil(SEGMENTS_PER_WORD_SOUTHEAST_ASIAN)
}

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
    turn.is_candidate() && word_count(&turn.text) >= SUBSTANTIVE_ANSWER_MIN_WORDS
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
    fn punctuation_is_not_a_word() {
        assert_eq!(word_count("yes - ... !!! ok"), 2);
        assert_eq!(word_count("I don't know."), 3);
        assert!(!is_substantive(&turn("candidate", "a, b, c, d, e, f, g")));
    }

    /// Fixtures in Chinese, Japanese and Thai: a real answer is substantive, a short reply or a
    /// request to repeat is not (whitespace splitting counted each answer as one or two words).
    #[test]
    fn answers_in_scripts_without_spaces_are_counted_by_word_segmentation() {
        let substantive = [
            "我们把账单表从MySQL迁移到Postgres，并且每晚核对每个租户的校验和。",
            "請求処理を並列化して、レイテンシを半分にしました。毎晩チェックサムを比較しました。",
            "ผมย้ายตารางบิลลิ่งจาก MySQL ไป Postgres และตรวจสอบข้อมูลทุกคืนเป็นเวลาสองสัปดาห์",
        ];
        for answer in substantive {
            assert!(answer.split_whitespace().count() < SUBSTANTIVE_ANSWER_MIN_WORDS, "the old count: {answer}");
            assert!(is_substantive(&turn("candidate", answer)), "{} words: {answer}", word_count(answer));
        }
        let short = ["我不知道。", "对不起，你能重复一下问题吗？", "わかりません。", "ไม่ทราบครับ"];
        for answer in short {
            assert!(!is_substantive(&turn("candidate", answer)), "{} words: {answer}", word_count(answer));
        }
        let t: Vec<Turn> = substantive.iter().map(|a| turn("candidate", a)).collect();
        assert_eq!(assess(Some(600.0), &t), None, "a CJK/Thai interview is assessed by the model");
    }

    #[test]
    fn the_stored_report_has_no_score_and_says_why() {
        let r = Insufficient::TooFewAnswers { substantive_answers: 1 }.report();
        assert_eq!(r.recommendation, Recommendation::InsufficientEvidence);
        assert_eq!(r.overall_score, None);
        assert!(r.insufficient_evidence_reason.unwrap().contains("1 substantive"));
    }
}
