//! The messages of a run: every valid interview once, duplicates of completed ones, the six
//! kinds of malformed body; shuffled.

use bson::oid::ObjectId;

use super::mix::Mix;
use super::rng::Rng;
use super::seed::Planned;

#[derive(Debug, Clone)]
pub(super) enum Message {
    Valid(usize),
    Malformed(String),
}

/// The six kinds of malformed body, cycled.
fn malformed_body(i: usize, org: ObjectId) -> String {
    let id = ObjectId::new();
    match i % 6 {
        0 => "this is not JSON {".to_owned(),
        1 => format!(
            r#"{{"interviewId":"{id}-not-an-id","organizationId":"{org}","completedAt":"2026-12-02T10:00:00Z","durationSeconds":600}}"#
        ),
        2 => format!(r#"{{"interviewId":"{id}","completedAt":"2026-12-02T10:00:00Z","durationSeconds":600}}"#),
        3 => format!(
            r#"{{"interviewId":"{id}","organizationId":"{org}","completedAt":"2026-12-02T10:00:00Z","durationSeconds":"six hundred"}}"#
        ),
        4 => format!(
            r#"{{"interviewId":"{id}","organizationId":"{org}","completedAt":"yesterday","durationSeconds":-5}}"#
        ),
        _ => format!(
            r#"{{"type":"interview.exploded","interviewId":"{id}","organizationId":"{org}","failureReason":"x","failedAt":"2026-12-02T10:00:00Z"}}"#
        ),
    }
}

/// Every planned interview once, `mix.duplicates` duplicates of completed interviews spread over
/// the whole set, `mix.malformed` malformed bodies; shuffled.
pub(super) fn messages(planned: &[Planned], mix: &Mix, rng: &mut Rng) -> Vec<Message> {
    let mut messages: Vec<Message> = (0..planned.len()).map(Message::Valid).collect();
    for k in 0..mix.duplicates {
        // Duplicates of completed interviews, spread over the whole set.
        messages.push(Message::Valid((k * 7919) % mix.completed));
    }
    for k in 0..mix.malformed {
        messages.push(Message::Malformed(malformed_body(k, planned[k % planned.len()].org)));
    }
    rng.shuffle(&mut messages);
    messages
}

#[cfg(test)]
mod tests {
    use sophia_contracts::{InterviewQueueMessage, QueueMessage};

    use super::*;

    #[test]
    fn the_six_malformed_bodies_are_none_of_them_a_valid_event() {
        let org = ObjectId::new();
        let bodies: Vec<String> = (0..6).map(|i| malformed_body(i, org)).collect();
        assert_eq!(malformed_body(6, org), bodies[0], "cycled");
        for body in &bodies {
            let parsed = InterviewQueueMessage::parse(body);
            assert!(parsed.is_err(), "{body} parses as {parsed:?}");
        }
    }

    #[test]
    fn every_interview_once_plus_duplicates_of_completed_ones_and_malformed_bodies() {
        let mix = Mix::of(200);
        let planned: Vec<Planned> = (0..mix.interviews())
            .map(|i| Planned {
                id: ObjectId::new(),
                org: ObjectId::new(),
                reserved: 10,
                lots: 1,
                duration: (i < mix.completed).then_some(600),
            })
            .collect();
        let messages = messages(&planned, &mix, &mut Rng::new(7));
        assert_eq!(messages.len(), mix.events);
        let mut valid = vec![0; planned.len()];
        let mut malformed = 0;
        for m in &messages {
            match m {
                Message::Valid(i) => valid[*i] += 1,
                Message::Malformed(_) => malformed += 1,
            }
        }
        assert_eq!(malformed, mix.malformed);
        assert!(valid.iter().all(|&n| n >= 1), "every interview published");
        assert_eq!(valid.iter().sum::<usize>(), mix.interviews() + mix.duplicates);
        assert!(valid[mix.completed..].iter().all(|&n| n == 1), "failed interviews are not duplicated");
    }
}
