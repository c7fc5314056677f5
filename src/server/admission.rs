//! Admission: engine slots and the bounded queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::header;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::api_error::{ApiError, ServerCode};

/// Bounds the work in the server: `slots` counts every admitted request (uploading,
/// waiting or running), `engine` the running transcriptions.
#[derive(Debug)]
pub(crate) struct Admission {
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) engine: Arc<Semaphore>,
    pub(crate) max_concurrent: usize,
    pub(crate) max_queue: usize,
    /// Exponential moving average of the transcription time, in milliseconds.
    pub(crate) average_ms: AtomicU64,
}

impl Admission {
    pub(crate) fn new(max_concurrent: usize, max_queue: usize) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(max_concurrent + max_queue)),
            engine: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            max_queue,
            average_ms: AtomicU64::new(1000),
        }
    }

    /// A place for one more request, or `server_busy` at once.
    pub(crate) fn admit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.slots).try_acquire_owned().map_err(|_| {
            self.busy(format!(
                "The server is busy: {} transcriptions running and {} requests waiting. \
                 Retry later.",
                self.max_concurrent, self.max_queue
            ))
        })
    }

    /// Waits for an engine slot until `deadline`.
    pub(crate) async fn engine_slot(
        &self,
        deadline: Instant,
    ) -> Result<OwnedSemaphorePermit, ApiError> {
        let waiting = Arc::clone(&self.engine).acquire_owned();
        match tokio::time::timeout_at(deadline.into(), waiting).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(self.busy("The server is shutting down.".to_owned())),
            Err(_) => Err(self.busy(
                "The server is busy: no transcription slot became free before the request \
                 timeout. Retry later."
                    .to_owned(),
            )),
        }
    }

    pub(crate) fn busy(&self, message: String) -> ApiError {
        ApiError::new(ServerCode::ServerBusy, message)
            .header(header::RETRY_AFTER, self.retry_after_secs().to_string())
    }

    /// Seconds a client should wait: the recent average transcription time, 1 to 60.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        self.average_ms
            .load(Ordering::Relaxed)
            .div_ceil(1000)
            .clamp(1, 60)
    }

    pub(crate) fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        // A lost update under contention only makes the estimate a little staler.
        let old = self.average_ms.load(Ordering::Relaxed);
        self.average_ms
            .store(old - old / 4 + sample / 4, Ordering::Relaxed);
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.max_concurrent - self.engine.available_permits()
    }

    pub(crate) fn waiting(&self) -> usize {
        let admitted = self.max_concurrent + self.max_queue - self.slots.available_permits();
        admitted.saturating_sub(self.in_flight())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_is_bounded() {
        let admission = Admission::new(1, 1);
        let first = admission.admit().expect("first");
        let second = admission.admit().expect("second");
        let error = admission.admit().expect_err("full");
        assert_eq!(error.code, "server_busy");
        assert!(
            error
                .headers
                .iter()
                .any(|(name, _)| name == header::RETRY_AFTER)
        );
        assert_eq!(admission.waiting(), 2);
        drop((first, second));
        assert!(admission.admit().is_ok());
        admission.record(Duration::from_secs(30));
        assert!(admission.retry_after_secs() > 1);
    }
}
