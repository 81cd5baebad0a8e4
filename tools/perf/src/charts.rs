//! The pictures of the proof tools: SVG charts of a load test and of a bench run, drawn with
//! plotters' SVG backend (no system fonts, no image library: text stays text in the SVG).
//!
//! - [`load_svg`]: latency percentiles and throughput over the run, the receive-count histogram
//!   per function, the audited outcome counts (`scripts/load-test` writes `.local/load-test.svg`);
//! - [`bench_svg`]: cold start, first event, peak memory and zip size per function, this run
//!   against the previous one (`scripts/bench` writes `.local/bench.svg`).

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

use crate::load::LoadReport;

/// Why a picture could not be drawn (a plotters error, as text).
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart: {0}")]
pub struct ChartError(String);

fn chart_error(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

const FONT: &str = "sans-serif";
const SETTLE: RGBColor = RGBColor(31, 119, 180);
const SETTLE_LIGHT: RGBColor = RGBColor(140, 190, 230);
const REPORT: RGBColor = RGBColor(230, 110, 20);
const REPORT_LIGHT: RGBColor = RGBColor(250, 185, 120);
const PREVIOUS: RGBColor = RGBColor(170, 170, 170);
const FUNCTION_COLORS: [RGBColor; 4] =
    [RGBColor(31, 119, 180), RGBColor(230, 110, 20), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];

/// One series of a bar chart: a value (or none) per category.
struct Bars<'s> {
    name: &'s str,
    color: RGBColor,
    values: Vec<Option<f64>>,
}

/// Grouped vertical bars, one group per category, each bar labelled with its value.
fn bar_chart(
    area: &Area,
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[Bars],
    format: fn(f64) -> String,
) -> Result<(), ChartError> {
    let n = categories.len().max(1);
    let max = series.iter().flat_map(|s| s.values.iter().flatten()).copied().fold(0.0_f64, f64::max);
    // Room above the tallest bar for its value, and for the legend box when there is one.
    let headroom = if series.len() > 1 { 1.45 } else { 1.18 };
    let top = if max > 0.0 { max * headroom } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(10)
        .x_label_area_size(28)
        .y_label_area_size(58)
        .build_cartesian_2d(-0.5_f64..(n as f64 - 0.5), 0.0_f64..top)
        .map_err(chart_error)?;
    let labels = categories.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .y_label_formatter(&|y| format(*y))
        .label_style((FONT, 14))
        .draw()
        .map_err(chart_error)?;
    let group = 0.8;
    let width = group / series.len().max(1) as f64;
    let value_style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (k, s) in series.iter().enumerate() {
        let color = s.color;
        // (left edge of this series' bar in category i, value), for the categories with a value.
        let points: Vec<(f64, f64)> = s
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i as f64 - group / 2.0 + k as f64 * width, v)))
            .collect();
        let bars = points
            .iter()
            .map(|&(x0, v)| Rectangle::new([(x0 + width * 0.06, 0.0), (x0 + width * 0.94, v)], color.filled()));
        chart
            .draw_series(bars)
            .map_err(chart_error)?
            .label(s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let texts = points.iter().map(|&(x0, v)| Text::new(format(v), (x0 + width / 2.0, v), value_style.clone()));
        chart.draw_series(texts).map_err(chart_error)?;
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, 15))
            .draw()
            .map_err(chart_error)?;
    }
    Ok(())
}

/// One line of a line chart: its name, colour and points.
type Line<'s> = (&'s str, RGBColor, Vec<(f64, f64)>);

/// Lines over the run; `log` for a logarithmic y axis (latencies span milliseconds to minutes).
fn line_chart(
    area: &Area,
    title: &str,
    y_desc: &str,
    end_s: f64,
    series: &[Line],
    log: bool,
    legend: SeriesLabelPosition,
) -> Result<(), ChartError> {
    let max = series.iter().flat_map(|s| s.2.iter().map(|p| p.1)).fold(0.0_f64, f64::max).max(1.0);
    let x_range = 0.0_f64..end_s.max(1.0);
    macro_rules! draw {
        ($y_range:expr) => {{
            let mut chart = ChartBuilder::on(area)
                .caption(title, (FONT, 20))
                .margin(10)
                .x_label_area_size(34)
                .y_label_area_size(58)
                .build_cartesian_2d(x_range, $y_range)
                .map_err(chart_error)?;
            chart
                .configure_mesh()
                .x_desc("seconds from the first publish")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| if *y >= 10.0 { format!("{y:.0}") } else { format!("{y:.1}") })
                .y_desc(y_desc)
                .label_style((FONT, 14))
                .draw()
                .map_err(chart_error)?;
            for (name, color, points) in series {
                let color = *color;
                chart
                    .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
                    .map_err(chart_error)?
                    .label(*name)
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
            }
            chart
                .configure_series_labels()
                .position(legend)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font((FONT, 15))
                .draw()
                .map_err(chart_error)?;
        }};
    }
    if log {
        draw!((1.0_f64..max * 2.0).log_scale());
    } else {
        draw!(0.0_f64..max * 1.15);
    }
    Ok(())
}

fn integer(v: f64) -> String {
    format!("{v:.0}")
}

fn one_decimal(v: f64) -> String {
    format!("{v:.1}")
}

fn two_decimals(v: f64) -> String {
    format!("{v:.2}")
}

/// The load test's picture: latency and throughput over the run, receive counts, outcomes.
pub fn load_svg(report: &LoadReport) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1280, 900)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let m = &report.mix;
        let verdict = if report.ok() { "audit passed" } else { "AUDIT FAILED" };
        let title = format!(
            "Sophia load test: {} messages, {} organizations, {} report pollers; {:.1} settled/s; {verdict}",
            m.events, report.orgs, report.pollers, report.settled_per_second
        );
        let body = root.titled(&title, (FONT, 24)).map_err(chart_error)?;
        let panels = body.split_evenly((2, 2));
        timeline_panels(&panels[0], &panels[1], report)?;
        receive_count_panel(&panels[2], report)?;
        outcomes_panel(&panels[3], report)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

/// The run's timeline: latency percentiles from publish, and throughput, per window.
fn timeline_panels(latency_area: &Area, throughput_area: &Area, report: &LoadReport) -> Result<(), ChartError> {
    let end = report.timeline.last().map_or(1.0, |w| w.end_s);
    let mid = |w: &crate::load::Window| (w.start_s + w.end_s) / 2.0;
    let latency = |count: fn(&crate::load::Window) -> usize, value: fn(&crate::load::Window) -> f64| {
        report.timeline.iter().filter(|w| count(w) > 0).map(|w| (mid(w), value(w).max(1.0))).collect::<Vec<_>>()
    };
    line_chart(
        latency_area,
        "Latency from publish (percentiles per window)",
        "milliseconds (log)",
        end,
        &[
            ("settlement p50", SETTLE_LIGHT, latency(|w| w.settled, |w| w.settle_p50_ms)),
            ("settlement p99", SETTLE, latency(|w| w.settled, |w| w.settle_p99_ms)),
            ("report p50", REPORT_LIGHT, latency(|w| w.reports, |w| w.report_p50_ms)),
            ("report p99", REPORT, latency(|w| w.reports, |w| w.report_p99_ms)),
        ],
        true,
        SeriesLabelPosition::LowerRight,
    )?;
    let per_second = |count: fn(&crate::load::Window) -> usize| {
        report.timeline.iter().map(|w| (mid(w), count(w) as f64 / w.seconds().max(1e-9))).collect::<Vec<_>>()
    };
    line_chart(
        throughput_area,
        "Throughput",
        "per second",
        end,
        &[
            ("interviews settled / s", SETTLE, per_second(|w| w.settled)),
            ("reports finished / s", REPORT, per_second(|w| w.reports)),
        ],
        false,
        SeriesLabelPosition::LowerLeft,
    )
}

/// Records by receive count, per function (1 = no retry).
fn receive_count_panel(area: &Area, report: &LoadReport) -> Result<(), ChartError> {
    let max_receive = report.receive_counts.iter().filter_map(|(_, h)| h.keys().max().copied()).max().unwrap_or(1);
    let categories: Vec<String> = (1..=max_receive).map(|c| format!("received {c}x")).collect();
    let series: Vec<Bars> = report
        .receive_counts
        .iter()
        .enumerate()
        .map(|(i, (function, h))| Bars {
            name: function,
            color: FUNCTION_COLORS[i % FUNCTION_COLORS.len()],
            values: (1..=max_receive).map(|c| Some(h.get(&c).copied().unwrap_or(0) as f64)).collect(),
        })
        .collect();
    bar_chart(area, "Records by receive count (1 = no retry)", "records", &categories, &series, integer)
}

/// The audited outcomes (duplicates and malformed as published).
fn outcomes_panel(area: &Area, report: &LoadReport) -> Result<(), ChartError> {
    let m = &report.mix;
    let outcomes: [(&str, usize); 7] = [
        ("settled", report.settled),
        ("failed (released)", m.failed),
        ("duplicates", m.duplicates),
        ("malformed", m.malformed),
        ("reports ok", report.reports_completed),
        ("insufficient", report.insufficient_evidence_reports),
        ("reports FAILED", report.reports_failed),
    ];
    bar_chart(
        area,
        "Outcomes (audited; duplicates and malformed as published)",
        "count",
        &outcomes.iter().map(|o| o.0.to_owned()).collect::<Vec<_>>(),
        &[Bars { name: "count", color: SETTLE, values: outcomes.iter().map(|o| Some(o.1 as f64)).collect() }],
        integer,
    )
}

/// The figures of one bench run per function, read from its JSON (this run's or an older file's:
/// missing fields are missing figures, not errors).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchFigures {
    pub architecture: Option<String>,
    /// function -> figure
    pub ready_ms: BTreeMap<String, f64>,
    pub first_event_ms: BTreeMap<String, f64>,
    pub peak_rss_mib: BTreeMap<String, f64>,
    pub zip_mb: BTreeMap<String, f64>,
}

impl BenchFigures {
    pub fn from_json(value: &Value) -> Self {
        let mut figures = Self {
            architecture: value.get("lambda_architecture").and_then(Value::as_str).map(str::to_owned),
            ..Self::default()
        };
        let rows = |key: &str| value.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        for row in rows("cold_starts") {
            let Some(function) = row.get("function").and_then(Value::as_str) else { continue };
            let put = |map: &mut BTreeMap<String, f64>, field: &str, scale: f64| {
                if let Some(v) = row.get(field).and_then(Value::as_f64).filter(|v| v.is_finite()) {
                    map.insert(function.to_owned(), v * scale);
                }
            };
            put(&mut figures.ready_ms, "ready_ms_median", 1.0);
            put(&mut figures.first_event_ms, "first_event_ms_median", 1.0);
            put(&mut figures.peak_rss_mib, "peak_rss_kib_median", 1.0 / 1024.0);
        }
        for row in rows("zips") {
            if let (Some(function), Some(bytes)) =
                (row.get("function").and_then(Value::as_str), row.get("zip_bytes").and_then(Value::as_f64))
            {
                figures.zip_mb.insert(function.to_owned(), bytes / 1_000_000.0);
            }
        }
        figures
    }

    fn functions(&self) -> Vec<String> {
        let mut all: Vec<String> = self.zip_mb.keys().chain(self.ready_ms.keys()).cloned().collect();
        all.sort();
        all.dedup();
        all
    }
}

/// The bench's picture: each figure per function, the previous run (grey) beside this one.
pub fn bench_svg(now: &BenchFigures, previous: Option<&BenchFigures>) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1280, 820)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let arch = |f: &BenchFigures| f.architecture.clone().unwrap_or_else(|| "unknown architecture".into());
        let title = match previous {
            Some(p) => format!("Sophia bench: this run ({}) against the previous run ({})", arch(now), arch(p)),
            None => format!("Sophia bench ({}); no previous run recorded", arch(now)),
        };
        let body = root.titled(&title, (FONT, 24)).map_err(chart_error)?;
        let panels = body.split_evenly((2, 2));
        let functions = now.functions();
        let panel = |area: &Area,
                     title: &str,
                     y: &str,
                     pick: fn(&BenchFigures) -> &BTreeMap<String, f64>,
                     format: fn(f64) -> String| {
            let values = |f: &BenchFigures| functions.iter().map(|name| pick(f).get(name).copied()).collect();
            let mut series = Vec::new();
            if let Some(p) = previous {
                series.push(Bars { name: "previous run", color: PREVIOUS, values: values(p) });
            }
            series.push(Bars { name: "this run", color: SETTLE, values: values(now) });
            bar_chart(area, title, y, &functions, &series, format)
        };
        panel(&panels[0], "Cold start: process start to first poll (median)", "ms", |f| &f.ready_ms, one_decimal)?;
        panel(&panels[1], "First event: one batch on a fresh process (median)", "ms", |f| &f.first_event_ms, integer)?;
        panel(
            &panels[2],
            "Peak memory after the first event (VmHWM, median)",
            "MiB",
            |f| &f.peak_rss_mib,
            one_decimal,
        )?;
        panel(&panels[3], "Zip size", "MB", |f| &f.zip_mb, two_decimals)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{Latency, Mix, Window};
    use serde_json::json;

    fn load_report() -> LoadReport {
        LoadReport {
            mix: Mix::of(200),
            orgs: 5,
            pollers: 4,
            settle_pollers: 1,
            settle_concurrency: 1,
            seed_seconds: 0.1,
            publish_seconds: 1.0,
            settle_seconds: 20.0,
            report_seconds: 30.0,
            settled_per_second: 9.4,
            messages_per_second: 10.0,
            settle_latency: Latency::default(),
            report_latency: Latency::default(),
            settled: 188,
            reports_completed: 180,
            reports_failed: 4,
            insufficient_evidence_reports: 9,
            ledger_entries: 600,
            esm: Vec::new(),
            receive_counts: vec![
                ("interview-completed".into(), BTreeMap::from([(1, 196), (2, 3)])),
                ("report-generate".into(), BTreeMap::from([(1, 184), (2, 4), (3, 4)])),
            ],
            timeline: (0..30)
                .map(|i| Window {
                    start_s: f64::from(i),
                    end_s: f64::from(i + 1),
                    settled: 6,
                    settle_p50_ms: 120.0,
                    settle_p99_ms: 480.0,
                    reports: if i < 5 { 0 } else { 7 },
                    report_p50_ms: 2_000.0,
                    report_p99_ms: 9_000.0,
                })
                .collect(),
            violations: Vec::new(),
            timed_out: false,
        }
    }

    #[test]
    fn the_load_picture_has_every_panel_and_the_figures_of_the_run() {
        let svg = load_svg(&load_report()).expect("draws");
        assert!(svg.starts_with("<svg"), "an SVG document");
        for text in [
            "Sophia load test: 200 messages, 5 organizations, 4 report pollers; 9.4 settled/s; audit passed",
            "Latency from publish (percentiles per window)",
            "settlement p99",
            "report p50",
            "Throughput",
            "interviews settled / s",
            "Records by receive count (1 = no retry)",
            "received 3x",
            "interview-completed",
            "report-generate",
            "Outcomes (audited; duplicates and malformed as published)",
            "reports FAILED",
            "\n188\n",
            "\n196\n",
        ] {
            assert!(svg.contains(text), "the picture shows {text:?}");
        }
        // Four latency lines and two throughput lines, each with its legend sample (2 points).
        let lines: Vec<(&str, usize)> = svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(r#"stroke-width="2""#))
            .map(|l| {
                let color = l.split(r#"stroke=""#).nth(1).and_then(|c| c.get(..7)).unwrap_or("");
                let points = l.split(r#"points=""#).nth(1).and_then(|p| p.split('"').next()).unwrap_or("");
                (color, points.split_whitespace().count())
            })
            .collect();
        assert_eq!(lines.len(), 12, "{lines:?}");
        let points = |color: &str| {
            let mut n: Vec<usize> = lines.iter().filter(|l| l.0 == color).map(|l| l.1).collect();
            n.sort();
            n
        };
        // Settlement p99 (latency) and settled/s (throughput): one point per window, 30 windows.
        assert_eq!(points("#1F77B4"), [2, 2, 30, 30]);
        // Report p99: only the 25 windows in which reports finished; reports per second: every window.
        assert_eq!(points("#E66E14"), [2, 2, 25, 30]);
    }

    #[test]
    fn a_failed_audit_says_so_in_the_title() {
        let mut report = load_report();
        report.violations.push("interview x not settled".into());
        assert!(load_svg(&report).expect("draws").contains("AUDIT FAILED"));
    }

    fn bench_json(zip: f64, ready: f64, rss_kib: f64, arch: &str) -> Value {
        json!({
            "lambda_architecture": arch,
            "zips": [{"function": "interview-completed", "zip_bytes": zip}, {"function": "report-generate", "zip_bytes": zip - 100_000.0}],
            "cold_starts": [
                {"function": "interview-completed", "ready_ms_median": ready, "first_event_ms_median": 50.0, "peak_rss_kib_median": rss_kib},
                {"function": "report-generate", "ready_ms_median": ready, "first_event_ms_median": null, "peak_rss_kib_median": rss_kib}
            ]
        })
    }

    #[test]
    fn bench_figures_are_read_leniently_from_any_run_json() {
        let f = BenchFigures::from_json(&bench_json(4_054_696.0, 6.7, 10_240.0, "x86_64"));
        assert_eq!(f.architecture.as_deref(), Some("x86_64"));
        assert_eq!(f.zip_mb["interview-completed"], 4.054696);
        assert_eq!(f.peak_rss_mib["report-generate"], 10.0);
        assert_eq!(f.first_event_ms.get("report-generate"), None, "null is a missing figure");
        assert_eq!(BenchFigures::from_json(&json!({"zips": "?"})), BenchFigures::default());
    }

    #[test]
    fn the_bench_picture_sets_this_run_beside_the_previous_one() {
        let now = BenchFigures::from_json(&bench_json(3_200_000.0, 5.0, 9_216.0, "x86_64"));
        let before = BenchFigures::from_json(&bench_json(4_054_696.0, 6.7, 10_240.0, "x86_64"));
        let svg = bench_svg(&now, Some(&before)).expect("draws");
        for text in [
            "Sophia bench: this run (x86_64) against the previous run (x86_64)",
            "previous run",
            "this run",
            "Zip size",
            "\n4.05\n",
            "\n3.20\n",
            "\n10.0\n",
            "\n9.0\n",
        ] {
            assert!(svg.contains(text), "the picture shows {text:?}");
        }
        let first = bench_svg(&now, None).expect("draws");
        assert!(first.contains("no previous run recorded") && !first.contains("\nprevious run\n"));
    }
}
