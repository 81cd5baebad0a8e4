//! The publish: the shuffled messages through the real producer with bounded concurrency,
//! and when each interview was first published (the start of its latency).

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use futures::StreamExt;
use sophia_contracts::{DurationSeconds, EventType, InterviewId, OrganizationId, RequestId, Timestamp};
use sophia_sqs_producer::{CompletedInput, FailedInput, Queue, QueueUrls, SqsProducer};

use sophia_local::runner::Runner;

use super::messages::Message;
use super::mix::Mix;
use super::progress::progress_bar;
use super::seed::Planned;
use super::{LoadError, LoadOptions};

/// What the publish gave: each planned interview's first publish time, by index.
pub(super) struct Published {
    pub(super) at: HashMap<usize, SystemTime>,
    /// Just before the first message went out.
    pub(super) first: SystemTime,
    pub(super) seconds: f64,
}

/// Publishes `messages` (`options.publish_concurrency` at a time), a progress bar on stderr.
pub(super) async fn publish(
    runner: &Runner,
    planned: &[Planned],
    messages: Vec<Message>,
    mix: &Mix,
    options: &LoadOptions,
) -> Result<Published, LoadError> {
    let env = runner.env();
    let producer = SqsProducer::new(runner.sqs.clone(), QueueUrls::from_lookup(|name| env.get(name).cloned()));
    if producer.urls().get(Queue::InterviewCompleted).is_none() {
        return Err(LoadError::Setup("no interview queue URL".into()));
    }

    // Bounded concurrency; the first publish time of each interview.
    let bar = progress_bar(options.progress, messages.len() as u64, "publish");
    let first_publish = SystemTime::now();
    let publish_started = Instant::now();
    let planned_ref = planned;
    let published: Vec<Result<Option<(usize, SystemTime)>, LoadError>> =
        futures::stream::iter(messages.into_iter().enumerate())
            .map(|(n, m)| {
                let (producer, bar) = (&producer, &bar);
                async move {
                    let request_id = RequestId::from_caller(Some(&format!("load-{n}")));
                    let at = SystemTime::now();
                    let out = match m {
                        Message::Valid(i) => {
                            let p = &planned_ref[i];
                            match p.duration {
                                Some(seconds) => {
                                    let input = CompletedInput {
                                        interview_id: InterviewId::new(p.id),
                                        organization_id: OrganizationId::new(p.org),
                                        completed_at: Some(Timestamp::now()),
                                        duration_seconds: DurationSeconds::new(seconds),
                                    };
                                    producer.publish_interview_completed(input, &request_id).await?;
                                }
                                None => {
                                    let input = FailedInput {
                                        interview_id: InterviewId::new(p.id),
                                        organization_id: OrganizationId::new(p.org),
                                        failure_reason: "load test: bot could not join".into(),
                                        failed_at: Some(Timestamp::now()),
                                    };
                                    producer.publish_interview_failed(input, &request_id).await?;
                                }
                            }
                            Some((i, at))
                        }
                        Message::Malformed(body) => {
                            producer
                                .send(Queue::InterviewCompleted, &body, EventType::InterviewCompleted, &request_id)
                                .await?;
                            None
                        }
                    };
                    bar.inc(1);
                    Ok(out)
                }
            })
            .buffer_unordered(options.publish_concurrency.max(1))
            .collect()
            .await;
    let mut published_at: HashMap<usize, SystemTime> = HashMap::new();
    for r in published {
        if let Some((i, at)) = r? {
            published_at.entry(i).and_modify(|t| *t = (*t).min(at)).or_insert(at);
        }
    }
    let publish_seconds = publish_started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    eprintln!(
        "published {} messages in {publish_seconds:.1} s ({:.0} msg/s)",
        mix.events,
        mix.events as f64 / publish_seconds.max(1e-9)
    );
    Ok(Published { at: published_at, first: first_publish, seconds: publish_seconds })
}
