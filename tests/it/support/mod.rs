//! Helpers shared by the modules of the test binary, over the `harness` library's [`harness::World`]
//! (the local servers, a test's own database and queues): the settlement context and recording
//! publisher (`settlement`), the report-generate function over a world's database and readers of
//! the stored report (`report`), the `sophia-ops` context over a world's queues (`ops`), the
//! report consumer with its declared retry policy, time scaled (`scaled_reports`), the local
//! pipeline the drills run on (`drill`), and a test run in a process of its own (`alone`).

pub mod alone;
pub mod drill;
pub mod ops;
pub mod report;
pub mod scaled_reports;
pub mod settlement;
