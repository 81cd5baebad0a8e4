//! MongoDB round trips per settlement and per report, counted with the driver's command
//! monitoring around the library calls (`SettlementService`, `ReportService`), next to the
//! minimum the data model allows.

use std::fmt;
use std::sync::{Arc, Mutex};

use interview_completed::SqsReportPublisher;
use mongodb::event::EventHandler;
use mongodb::event::command::CommandEvent;
use serde::Serialize;
use sophia_contracts::{DurationSeconds, InterviewCompleted, OrganizationId, Timestamp};
use sophia_credits::{SettleContext, SettlementService, seed};
use sophia_reports::{ReportModel, ReportService};

use super::BenchError;
use super::world::World;

#[derive(Debug, Clone, Serialize)]
pub struct RoundTrip {
    pub case: String,
    pub commands: Vec<String>,
    pub count: usize,
    pub minimum: usize,
    pub minimum_reason: String,
}

/// A client whose every command name is recorded.
async fn monitored_client(uri: &str) -> Result<(mongodb::Client, Arc<Mutex<Vec<String>>>), BenchError> {
    let commands: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = commands.clone();
    let mut options = mongodb::options::ClientOptions::parse(uri).await?;
    options.command_event_handler = Some(EventHandler::callback(move |e: CommandEvent| {
        if let CommandEvent::Started(s) = e {
            seen.lock().expect("not poisoned").push(s.command_name);
        }
    }));
    Ok((mongodb::Client::with_options(options)?, commands))
}

fn take(commands: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    std::mem::take(&mut *commands.lock().expect("not poisoned"))
}

/// The commands seen since the last case, and the cases so far.
struct Trips {
    commands: Arc<Mutex<Vec<String>>>,
    out: Vec<RoundTrip>,
}

impl Trips {
    /// Forgets the commands seen so far (the seeding of the next case).
    fn reset(&self) {
        take(&self.commands);
    }

    /// The commands seen since the last reset or case, as `case`.
    fn record(&mut self, case: &str, minimum: usize, reason: &str) {
        let commands = take(&self.commands);
        self.out.push(RoundTrip {
            case: case.to_owned(),
            count: commands.len(),
            commands,
            minimum,
            minimum_reason: reason.to_owned(),
        });
    }
}

/// Round trips of the library calls, with the minimum the data model allows.
pub(super) async fn round_trips(world: &World) -> Result<Vec<RoundTrip>, BenchError> {
    let (client, commands) = monitored_client(&world.settings.uri).await?;
    let db = client.database(&world.settings.database);
    // One warm-up command so that connection set-up is not counted.
    db.run_command(bson::doc! {"ping": 1}).await?;
    let mut trips = Trips { commands, out: Vec::new() };
    trips.reset();
    let org = world.orgs(1).await?[0];
    let org2 = two_lot_organization(world).await?;
    let service = SettlementService::new(client.clone(), db.clone());
    settlement_trips(world, &service, org, org2, &mut trips).await?;
    report_trips(world, &db, org, &mut trips).await?;
    Ok(trips.out)
}

/// A second organization whose reservations span two lots: 5 credits on a lot that expires
/// first, the rest on a later one.
async fn two_lot_organization(world: &World) -> Result<OrganizationId, BenchError> {
    let store = world.store();
    let org2 = seed::create_organization(&store, "Bench two-lot organization").await?;
    seed::grant_lot(&store, org2, 5, chrono::Utc::now() + chrono::Duration::days(10)).await?;
    seed::grant_lot(&store, org2, 1000, chrono::Utc::now() + chrono::Duration::days(365)).await?;
    Ok(org2)
}

/// Settlements: completed on one lot and on two, failed, a duplicate, and the whole record.
async fn settlement_trips(
    world: &World,
    service: &SettlementService,
    org: OrganizationId,
    org2: OrganizationId,
    trips: &mut Trips,
) -> Result<(), BenchError> {
    let ctx = || SettleContext::now_with_deadline(None);

    let a = world.interview(org, 30, Some(600)).await?;
    trips.reset();
    service
        .settle_completed_interview(a, org, Timestamp::now(), DurationSeconds::new(600).unwrap_or_default(), ctx())
        .await?;
    trips.record("settle completed, 1 lot", 8, MIN_SETTLE);

    let b = world.interview(org2, 20, Some(600)).await?;
    trips.reset();
    service
        .settle_completed_interview(b, org2, Timestamp::now(), DurationSeconds::new(600).unwrap_or_default(), ctx())
        .await?;
    trips.record("settle completed, 2 lots", 8, MIN_SETTLE);

    let c = world.interview(org, 30, None).await?;
    trips.reset();
    service.settle_failed_interview(c, org, Timestamp::now(), ctx()).await?;
    trips.record("settle failed, 1 lot", 7, "as completed, without the outbox insert");

    service
        .settle_completed_interview(a, org, Timestamp::now(), DurationSeconds::new(600).unwrap_or_default(), ctx())
        .await?;
    trips.record(
        "duplicate (already settled)",
        1,
        "one read (or one findAndModify claim that matches nothing) must decide it",
    );

    let d = world.interview(org, 30, Some(600)).await?;
    trips.reset();
    let message = InterviewCompleted {
        interview_id: d,
        organization_id: org,
        completed_at: Timestamp::now(),
        duration_seconds: DurationSeconds::new(600).unwrap_or_default(),
    };
    service.settle_completed_and_publish(&message, &SqsReportPublisher(world.producer()), ctx()).await?;
    trips.record(
        "whole record: settle + publish report.generate + mark outbox published",
        9,
        "the settlement's 8 + marking the outbox entry published after the SQS send",
    );
    Ok(())
}

/// Reports: the model path, insufficient evidence, a retry of a FAILED report, a duplicate.
async fn report_trips(
    world: &World,
    db: &mongodb::Database,
    org: OrganizationId,
    trips: &mut Trips,
) -> Result<(), BenchError> {
    let reports = ReportService::new(db.clone(), ReportModel::new(&world.openai.settings()));
    let e = world.interview(org, 30, Some(900)).await?;
    trips.reset();
    reports.generate_report(e, org).await?;
    trips.record("report, model path (first delivery)", 3, MIN_REPORT);

    let f = world.interview(org, 30, Some(40)).await?;
    trips.reset();
    reports.generate_report(f, org).await?;
    trips.record("report, insufficient evidence (no model call)", 3, MIN_REPORT);

    // A retry: the report of `f` put back to FAILED, as a failed model call leaves it.
    db.collection::<bson::Document>(sophia_reports::store::INTERVIEW_REPORTS)
        .update_one(bson::doc! {"interviewId": f.oid()}, bson::doc! {"$set": {"status": "FAILED"}})
        .await?;
    trips.reset();
    reports.generate_report(f, org).await?;
    trips.record(
        "report, retry of a FAILED report",
        4,
        "the first delivery's 3 + the insert the unique index refuses (the price of not reading the report first, \
         which would cost every first delivery a 4th trip)",
    );

    reports.generate_report(e, org).await?;
    trips.record(
        "report, duplicate (already COMPLETED)",
        4,
        "the interview, the refused insert, the claim that matches nothing, one read to say why; 1 (a read of the report \
         first) only at a 4th trip on every first delivery, and duplicates are the rare case",
    );
    Ok(())
}

const MIN_SETTLE: &str = "this data model on MongoDB 7, with the read outside the transaction (a duplicate costs that one read and no transaction): \
     the read, the claim {settledAt: null, credits.reserved: R}, one find of the allocated lots (expiry and remaining decide consume/release/forfeit \
     and status), ONE update command carrying a guarded statement per lot, the organization $inc, the ledger insert_many, the outbox insert, \
     commitTransaction = 8 whatever the number of lots. 7 by folding the read into a findAndModify claim (consumed by a pipeline $min), at a \
     transaction per duplicate; fewer needs a model change or MongoDB 8 bulkWrite across collections";

const MIN_REPORT: &str = "find the interview (org-scoped, not deleted), the insert of the report already claimed (PROCESSING, attemptCount 1, \
     the lease; the unique index on interviewId makes it an insert-if-absent), the guarded update writing the result = 3, reached. \
     A findAndModify upsert claim would also be 3 but needs $setOnInsert and a unique index enforced on upserts, neither of which \
     nx-27017 has, so it could not be tested here";

/// The round-trip section of the bench table.
pub(super) fn round_trips_section(f: &mut fmt::Formatter<'_>, rows: &[RoundTrip]) -> fmt::Result {
    writeln!(f, "\nMongoDB round trips (driver command monitoring)")?;
    writeln!(f, "  {:<72} {:>6} {:>8}  commands", "case", "count", "minimum")?;
    for r in rows {
        writeln!(f, "  {:<72} {:>6} {:>8}  {}", r.case, r.count, r.minimum, r.commands.join(" "))?;
    }
    writeln!(f, "  minimum, settlement: {MIN_SETTLE}")?;
    writeln!(f, "  minimum, report: {MIN_REPORT}")
}
