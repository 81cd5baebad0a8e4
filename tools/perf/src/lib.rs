//! The proof tools, on the local pipeline of `sophia-local`: figures, not assertions.
//!
//! - [`load`]: the load test (`scripts/load-test`, binary `sophia-load`): thousands of interview
//!   events of every kind through the runner's pipeline, then a full audit;
//! - [`bench`]: the benchmarks (`scripts/bench`, binary `sophia-bench`): zip sizes, cold starts,
//!   peak memory, MongoDB round trips, batch latency;
//! - [`charts`]: the SVG pictures of both;
//! - [`cost`]: the cost of one report in tokens and dollars, before and after the compact prompt;
//! - [`burst`]: one organization's burst beside a quiet one, and a provider outage, through report
//!   generation with a realistic OpenAI fake (`sophia-load --burst`).

pub mod bench;
pub mod burst;
pub mod charts;
pub mod cost;
pub mod load;
