//! Helpers shared by the modules of the test binary: the settlement world and recording
//! publisher (`settlement`), the report-generate environment and readers of the stored report
//! (`report`), and the `sophia-ops` context over a test's own queues (`ops`). The local servers,
//! databases and queues come from the `harness` library.

pub mod alone;
pub mod ops;
pub mod report;
pub mod settlement;
