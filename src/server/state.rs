//! What every request handler shares: the server's state, and the record of one request
//! that its access log line and metrics are written from.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hyper::header::HeaderMap;

use super::admission::Admission;
use super::auth::ApiKeys;
use super::metrics::Metrics;
use crate::ContextTranscriber;

#[derive(Debug)]
pub(crate) struct AppState {
    pub(crate) transcriber: ContextTranscriber,
    pub(crate) keys: ApiKeys,
    pub(crate) admission: Admission,
    pub(crate) max_file_bytes: u64,
    pub(crate) request_timeout: Duration,
    pub(crate) draining: AtomicBool,
    pub(crate) model_name: String,
    pub(crate) request_ids: RequestIds,
    pub(crate) metrics: Metrics,
    /// `GET /metrics` needs no API key.
    pub(crate) metrics_public: bool,
    /// When the model was loaded, in Unix seconds (the model list's `created`).
    pub(crate) loaded_at: u64,
}

/// Generated request ids: a keyed hash of a counter (unique, not guessable in order).
#[derive(Debug, Default)]
pub(crate) struct RequestIds {
    pub(crate) counter: AtomicU64,
    pub(crate) keys: RandomState,
}

impl RequestIds {
    /// The client's `X-Request-Id` if it is a short token, else a new id.
    pub(crate) fn for_request(&self, headers: &HeaderMap) -> String {
        if let Some(id) = headers.get("x-request-id").and_then(|v| v.to_str().ok())
            && (1..=128).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        {
            return id.to_owned();
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("req_{:016x}", self.keys.hash_one(n))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_headers as headers;
    use super::*;

    #[test]
    fn request_ids() {
        let ids = RequestIds::default();
        let a = ids.for_request(&headers(&[]));
        let b = ids.for_request(&headers(&[]));
        assert!(a.starts_with("req_") && a.len() == 20 && a != b, "{a} {b}");
        assert_eq!(
            ids.for_request(&headers(&[("x-request-id", "abc-123")])),
            "abc-123"
        );
        let odd = ids.for_request(&headers(&[("x-request-id", "a b")]));
        assert!(odd.starts_with("req_"), "{odd}");
    }
}
