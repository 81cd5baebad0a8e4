//! How many messages of each kind a run publishes (the messages themselves: `messages`).

use serde::Serialize;

/// How many messages of each kind a run of `events` publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mix {
    pub events: usize,
    pub completed: usize,
    pub failed: usize,
    pub duplicates: usize,
    pub malformed: usize,
}

impl Mix {
    /// 5 % duplicates, 2 % malformed, 1 % failed, the rest completed (each at least one when
    /// `events` allows).
    pub fn of(events: usize) -> Self {
        let pct = |p: usize| (events * p / 100).max(usize::from(events >= 100));
        let (duplicates, malformed, failed) = (pct(5), pct(2), pct(1));
        let completed = events.saturating_sub(duplicates + malformed + failed).max(1);
        Self { events, completed, failed, duplicates, malformed }
    }
    /// Distinct valid interviews.
    pub fn interviews(&self) -> usize {
        self.completed + self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_of_ten_thousand() {
        let m = Mix::of(10_000);
        assert_eq!((m.completed, m.failed, m.duplicates, m.malformed), (9_200, 100, 500, 200));
        assert_eq!(m.interviews() + m.duplicates + m.malformed, 10_000);
    }

    #[test]
    fn a_tiny_mix_has_one_completed_interview_and_nothing_else() {
        let m = Mix::of(10);
        assert_eq!((m.completed, m.failed, m.duplicates, m.malformed), (10, 0, 0, 0));
        assert_eq!(Mix::of(0).completed, 1, "at least one interview");
    }
}
