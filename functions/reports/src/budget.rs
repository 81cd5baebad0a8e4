//! The whole interview within a token budget (docs/design.md, "Report input and output").
//!
//! Tokens are not counted with the model's tokenizer at run time: the o200k vocabulary alone is
//! about 3.6 MB, more than a whole function's zip. [`estimate_tokens`] is a conservative bound
//! instead (never below the real count on the texts this system sees), checked against the real
//! o200k tokenizer in this module's tests on English, German, French, code, Chinese, Japanese,
//! Korean, Thai, Russian and Arabic text.
//!
//! Over the budget, turns are omitted from the middle: the opening (introductions, the first
//! questions) and the end (where the hardest questions usually are) are kept, the end getting the
//! larger share.

use std::ops::Range;

/// The default budget for the transcript, in estimated tokens. A 4-hour interview is about
/// 300,000 characters of English: about 65,000 real o200k tokens, about 140,000 by the
/// conservative [`estimate_tokens`], so it fits whole. gpt-4.1-mini takes about 1M tokens of
/// context; at $0.40 per million input tokens a full budget of English (~90,000 real tokens)
/// costs about 4 cents.
pub const DEFAULT_TRANSCRIPT_TOKEN_BUDGET: usize = 200_000;

/// The share of an over-budget transcript's budget given to its opening; the end gets the rest.
pub const OPENING_SHARE: f64 = 0.4;

/// Tokens a turn costs besides its text (its speaker and separators in the compact form).
pub const TURN_OVERHEAD_TOKENS: usize = 4;

/// A conservative bound on the o200k token count of `text`, by runs: a run of ASCII letters
/// costs one token per two letters (English words of four or five letters are mostly one token,
/// but identifiers and hex split more), a run of digits one per three (o200k groups digits by
/// three), every other visible ASCII character one (code and punctuation), a run of whitespace
/// one unless it is a single space before a word, a CJK character one and a half, and any other non-ASCII
/// character one (accented Latin, Cyrillic, Arabic and Thai letters measure 0.35 to 0.45).
pub fn estimate_tokens(text: &str) -> usize {
    #[derive(PartialEq, Clone, Copy)]
    enum Run {
        None,
        Letters,
        Digits,
    }
    // Counted in half tokens: a CJK character costs three.
    let (mut halves, mut run, mut run_len, mut spaces) = (0usize, Run::None, 0usize, 0usize);
    let close = |run: Run, len: usize| {
        2 * match run {
            Run::None => 0,
            Run::Letters => len.div_ceil(LETTERS_PER_TOKEN),
            Run::Digits => len.div_ceil(3),
        }
    };
    for c in text.chars() {
        let kind = if c.is_ascii_alphabetic() {
            Run::Letters
        } else if c.is_ascii_digit() {
            Run::Digits
        } else {
            Run::None
        };
        if kind != run {
            halves += close(run, run_len);
            (run, run_len) = (kind, 0);
        }
        if kind != Run::None {
            run_len += 1;
        }
        if c.is_whitespace() {
            spaces += 1;
            continue;
        }
        // o200k joins one space to the word after it, not to a number or a symbol.
        if spaces > 1 || (spaces == 1 && !c.is_alphabetic()) {
            halves += 2;
        }
        spaces = 0;
        if is_cjk(c) {
            halves += 3;
        } else if !c.is_ascii() || kind == Run::None {
            halves += 2;
        }
    }
    (halves + close(run, run_len) + 2 * usize::from(spaces > 1)).div_ceil(2)
}

/// Han, kana, hangul and CJK punctuation and full-width forms: about one token per character
/// (0.8 to 0.9 measured), counted as one and a half.
fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FFFF)
}

/// Letters of an ASCII word per token in [`estimate_tokens`]: English words of four to five
/// letters are mostly one token, but rarer words, names and identifiers split more.
const LETTERS_PER_TOKEN: usize = 2;

/// Which turns of a transcript are sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The opening turns sent, from the first.
    pub head: Range<usize>,
    /// The turns left out (empty when everything fits).
    pub omitted: Range<usize>,
    /// The closing turns sent, to the last.
    pub tail: Range<usize>,
    /// The estimated tokens of the turns sent (texts and overhead).
    pub estimated_tokens: usize,
}

impl Selection {
    /// Every one of `n` turns.
    pub fn all(n: usize) -> Self {
        Self { head: 0..n, omitted: n..n, tail: n..n, estimated_tokens: 0 }
    }

    pub fn turns_omitted(&self) -> usize {
        self.omitted.len()
    }

    /// The indices of the turns sent, in order.
    pub fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        self.head.clone().chain(self.tail.clone())
    }
}

/// Chooses the turns to send within `budget` tokens; `costs[i]` is turn `i`'s estimated tokens.
pub fn select(costs: &[usize], budget: usize) -> Selection {
    let n = costs.len();
    let total: usize = costs.iter().sum();
    if total <= budget {
        return Selection { head: 0..n, omitted: n..n, tail: n..n, estimated_tokens: total };
    }
    // The opening first, up to its share; then the end with what is left (including any share
    // the opening did not use); then the opening again if the end left some (a long last turn).
    let opening_budget = (budget as f64 * OPENING_SHARE) as usize;
    let mut head = 0;
    let mut used = 0;
    while head < n && used + costs[head] <= opening_budget {
        used += costs[head];
        head += 1;
    }
    let mut tail_start = n;
    while tail_start > head && used + costs[tail_start - 1] <= budget {
        used += costs[tail_start - 1];
        tail_start -= 1;
    }
    while head < tail_start && used + costs[head] <= budget {
        used += costs[head];
        head += 1;
    }
    Selection { head: 0..head, omitted: head..tail_start, tail: tail_start..n, estimated_tokens: used }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_fits_under_the_budget() {
        let s = select(&[10, 20, 30], 60);
        assert_eq!((s.head, s.omitted.len(), s.estimated_tokens), (0..3, 0, 60));
    }

    #[test]
    fn the_middle_is_omitted_and_the_end_gets_the_larger_share() {
        let costs = vec![10; 100]; // 1,000 tokens
        let s = select(&costs, 500);
        assert_eq!(s.head, 0..20, "40% of 500 = 200 tokens of opening");
        assert_eq!(s.tail, 70..100, "the remaining 300 tokens from the end");
        assert_eq!(s.omitted, 20..70);
        assert_eq!(s.turns_omitted(), 50);
        assert_eq!(s.estimated_tokens, 500);
        assert_eq!(s.kept().count(), 50);
    }

    #[test]
    fn a_long_last_turn_leaves_the_rest_to_the_opening() {
        let mut costs = vec![10; 20];
        costs.push(1_000); // a monologue at the end that alone exceeds the budget
        let s = select(&costs, 150);
        assert_eq!(s.tail, 21..21, "the last turn cannot fit");
        assert_eq!(s.head, 0..15, "its share goes to the opening");
        assert!(s.estimated_tokens <= 150);
    }

    #[test]
    fn never_over_budget_and_never_overlapping() {
        for budget in [0, 1, 7, 50, 333, 10_000] {
            let costs: Vec<usize> = (0..57).map(|i| (i * 37) % 91 + 1).collect();
            let s = select(&costs, budget);
            assert!(s.estimated_tokens <= budget, "budget {budget}: {s:?}");
            assert_eq!(s.head.end, s.omitted.start);
            assert_eq!(s.omitted.end, s.tail.start);
            assert_eq!(s.tail.end, costs.len());
            assert_eq!(s.kept().map(|i| costs[i]).sum::<usize>(), s.estimated_tokens);
        }
    }

    /// The bound against OpenAI's o200k tokenizer (gpt-4.1's): never below the real count.
    #[test]
    fn the_estimate_is_never_below_the_o200k_count() {
        let bpe = tiktoken_rs::o200k_base().expect("o200k vocabulary");
        let samples = [
            "I moved our billing tables from MySQL to Postgres with dual writes and a nightly checksum job.",
            "Wir haben die Abrechnungstabellen mit doppelten Schreibvorgängen migriert und nächtlich geprüft.",
            "Nous avons migré les tables de facturation avec des écritures doubles et une vérification nocturne.",
            "fn main() { let x: Vec<u64> = (0..10).map(|i| i * 2).collect(); println!(\"{x:?}\"); }",
            "我们使用双写和每晚的校验任务，把计费表从MySQL迁移到了Postgres。",
            "請求テーブルをデュアルライトと夜間のチェックサムジョブでMySQLからPostgresへ移行しました。",
            "우리는 이중 쓰기와 야간 체크섬 작업으로 청구 테이블을 MySQL에서 Postgres로 옮겼습니다.",
            "เราย้ายตารางการเรียกเก็บเงินจาก MySQL ไปยัง Postgres ด้วยการเขียนซ้ำและงานตรวจสอบทุกคืน",
            "Мы перенесли таблицы биллинга из MySQL в Postgres с двойной записью и ночной проверкой.",
            "نقلنا جداول الفوترة من MySQL إلى Postgres باستخدام الكتابة المزدوجة وفحص ليلي.",
            "42 17 3.14159 0xDEADBEEF 2026-12-03T19:09:41Z 1e-9 -273.15 100% $0.40/M",
            "Um, so, yeah... I think — honestly — it's like, you know, the \"right\" approach?!",
        ];
        for text in samples {
            let real = bpe.encode_with_special_tokens(text).len();
            let estimate = estimate_tokens(text);
            assert!(estimate >= real, "estimate {estimate} < o200k {real} for {text:?}");
        }
        // And not absurdly pessimistic on English, the common case (the budget is about cost).
        let english = samples[0].repeat(50);
        let (real, estimate) = (bpe.encode_with_special_tokens(&english).len(), estimate_tokens(&english));
        assert!(estimate * 2 <= real * 5, "estimate {estimate} vs o200k {real}: more than 2.5 times");
    }
}
