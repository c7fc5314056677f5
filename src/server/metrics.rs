//! `GET /metrics`: the server's counters in the Prometheus/OpenMetrics text format,
//! written by the official Rust client (`prometheus-client`), never formatted by hand.
//!
//! * `ctxscribe_requests_total{path, status, code}`: answered requests (`code` is the
//!   error code, empty on success; `path` is one of the server's routes or `other`).
//! * `ctxscribe_stage_seconds{stage}`: a histogram per stage of a transcription
//!   request (`read`, `queue`, `decode`, `engine`, `total`).
//! * `ctxscribe_audio_seconds_total`: seconds of audio transcribed.
//! * `ctxscribe_in_flight_requests`, `ctxscribe_queued_requests`: the load now.
//! * `ctxscribe_model_info{model, multilingual}`: the loaded model.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use super::admission::Admission;
use super::record::RequestRecord;

/// The content type of the answer (OpenMetrics text, which Prometheus reads).
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    path: String,
    status: u16,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    stage: String,
}

type Constructor = fn() -> Histogram;

/// The server's metrics and their registry.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    stages: Family<StageLabels, Histogram, Constructor>,
    audio_seconds: Counter<f64, AtomicU64>,
    in_flight: Gauge,
    queued: Gauge,
}

/// 1 ms to about 9 minutes, doubling.
fn stage_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 20))
}

impl Metrics {
    pub(crate) fn new(model: &str, multilingual: bool) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "ctxscribe_requests",
            "Requests answered, by route, HTTP status and error code (empty on success)",
            requests.clone(),
        );
        let stages: Family<StageLabels, Histogram, Constructor> =
            Family::new_with_constructor(stage_histogram);
        registry.register(
            "ctxscribe_stage_seconds",
            "Time per stage of the transcription requests: read (upload), queue, decode, \
             engine, total",
            stages.clone(),
        );
        let audio_seconds = Counter::<f64, AtomicU64>::default();
        registry.register(
            "ctxscribe_audio_seconds",
            "Seconds of audio transcribed",
            audio_seconds.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "ctxscribe_in_flight_requests",
            "Transcriptions running now",
            in_flight.clone(),
        );
        let queued = Gauge::default();
        registry.register(
            "ctxscribe_queued_requests",
            "Admitted requests uploading or waiting for an engine slot",
            queued.clone(),
        );
        registry.register(
            "ctxscribe_model",
            "The loaded model",
            Info::new(vec![
                ("model".to_owned(), model.to_owned()),
                ("multilingual".to_owned(), multilingual.to_string()),
            ]),
        );
        Metrics {
            registry,
            requests,
            stages,
            audio_seconds,
            in_flight,
            queued,
        }
    }

    /// Counts one answered request; `transcription` says whether its stages count.
    pub(crate) fn observe(
        &self,
        path: &'static str,
        status: u16,
        record: &RequestRecord,
        total: Duration,
        transcription: bool,
    ) {
        self.requests
            .get_or_create(&RequestLabels {
                path: path.to_owned(),
                status,
                code: record.code.unwrap_or_default().to_owned(),
            })
            .inc();
        if !transcription {
            return;
        }
        let stages = [
            ("read", record.read),
            ("queue", record.queue),
            ("decode", record.decode),
            ("engine", record.engine),
            ("total", Some(total)),
        ];
        for (stage, took) in stages {
            if let Some(took) = took {
                self.observe_stage(stage, took);
            }
        }
        if let Some(secs) = record.audio_secs {
            self.audio_seconds.inc_by(secs);
        }
    }

    fn observe_stage(&self, stage: &str, took: Duration) {
        self.stages
            .get_or_create(&StageLabels {
                stage: stage.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// The metrics as text, with the load gauges read from `admission` now.
    pub(crate) fn render(&self, admission: &Admission) -> String {
        self.in_flight
            .set(i64::try_from(admission.in_flight()).unwrap_or(i64::MAX));
        self.queued
            .set(i64::try_from(admission.waiting()).unwrap_or(i64::MAX));
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_and_stages() {
        let metrics = Metrics::new("ggml-tiny.en.bin", false);
        let record = RequestRecord {
            read: Some(Duration::from_millis(3)),
            audio_secs: Some(11.0),
            ..RequestRecord::default()
        };
        metrics.observe(
            "/v1/audio/transcriptions",
            200,
            &record,
            Duration::from_millis(500),
            true,
        );
        let text = metrics.render(&Admission::new(1, 4));
        for expected in [
            "ctxscribe_requests_total{path=\"/v1/audio/transcriptions\",status=\"200\",code=\"\"} 1",
            "ctxscribe_stage_seconds_count{stage=\"read\"} 1",
            "ctxscribe_stage_seconds_count{stage=\"total\"} 1",
            "ctxscribe_audio_seconds_total 11.0",
            "ctxscribe_in_flight_requests 0",
            "ctxscribe_model_info{model=\"ggml-tiny.en.bin\",multilingual=\"false\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} not in\n{text}");
        }
        assert!(!text.contains("stage=\"engine\""), "{text}");
    }
}
