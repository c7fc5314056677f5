//! Running a transcription for a request: on the blocking pool, within the request's
//! deadline, cancelled when nobody waits for it any more.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

use super::record::ms;
use super::state::AppState;
use crate::{CancelToken, Error, Event, RunOptions, Transcript, TranscriptionRequest};

/// Cancels a transcription when dropped (its answer is no longer wanted).
#[derive(Debug)]
pub(crate) struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Runs `request` on the blocking pool until `deadline`, handing its events to `sink`
/// and its result to `then`; returns `then`'s answer and the guard that cancels the run
/// when dropped (the client went away, or the caller gave up waiting).
///
/// The engine `permits` travel with the work: a client that hangs up does not free its
/// slot before the engine is done, so at most `max_concurrent` transcriptions ever run.
/// It is done soon: the cancellation or the deadline stops the run at the engine's next
/// step.
pub(crate) fn spawn_run<S, T>(
    state: &Arc<AppState>,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    request: TranscriptionRequest,
    deadline: Instant,
    mut sink: S,
    then: impl FnOnce(crate::Result<Transcript>) -> T + Send + 'static,
) -> (JoinHandle<T>, CancelOnDrop)
where
    S: FnMut(&Event) + Send + 'static,
    T: Send + 'static,
{
    let token = CancelToken::new();
    let guard = CancelOnDrop(token.clone());
    let state = Arc::clone(state);
    let work = tokio::task::spawn_blocking(move || {
        let _permits = permits;
        let running = Instant::now();
        let options = RunOptions::new()
            .with_cancel(token)
            .with_timeout(deadline.saturating_duration_since(running))
            .on_event(&mut sink);
        let result = state.transcriber.run(request, options);
        match &result {
            Ok(_) => state.admission.record(running.elapsed()),
            Err(Error::Cancelled) => cancelled(running.elapsed()),
            Err(_) => {}
        }
        then(result)
    });
    (work, guard)
}

/// Logs a transcription stopped by its cancel token: nobody waits for it any more.
fn cancelled(ran: Duration) {
    tracing::info!(
        ran_ms = ms(ran),
        "transcription cancelled: nobody waits for it any more"
    );
}
