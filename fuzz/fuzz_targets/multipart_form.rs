//! The server's multipart request handler: the body of `POST /v1/audio/transcriptions`
//! through `read_form` (multer, streaming, with the server's size limits) and
//! `Form::into_request` (field rules, the audio probe, the library's validators).
//!
//! The server's modules come from the library (`ctxscribe::server`, feature `server`), so
//! this is the code the server runs. Every body must give a checked request or a typed
//! `ApiError` with a 4xx status.
#![no_main]

use ctxscribe::AudioLimits;
use ctxscribe::server::form;

use std::sync::OnceLock;

use bytes::Bytes;
use http_body_util::{Full, StreamBody};
use hyper::body::Frame;
use libfuzzer_sys::fuzz_target;

/// The boundary of every fuzzed body (the seeds use it too).
const BOUNDARY: &str = "ctxscribe-fuzz";

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    // The first byte chooses how the body arrives: whole, or in chunks of 1..=64 bytes
    // (multer's parser must not depend on where the chunks split).
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    // Small limits so that the size errors are reachable.
    let (max_file, max_body) = (64 * 1024, 64 * 1024 + 16 * 1024);
    let result = runtime().block_on(async {
        if mode < 128 {
            let mut whole = Full::new(Bytes::copy_from_slice(body));
            form::read_form(&mut whole, BOUNDARY.to_owned(), max_file, max_body).await
        } else {
            let size = usize::from(mode % 64) + 1;
            let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = body
                .chunks(size)
                .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
                .collect();
            let mut chunked = StreamBody::new(tokio_stream_iter(frames));
            form::read_form(&mut chunked, BOUNDARY.to_owned(), max_file, max_body).await
        }
    });
    let limits = AudioLimits {
        max_file_bytes: max_file,
        ..AudioLimits::default()
    };
    let outcome = result.and_then(|form| form.into_request(&limits));
    match outcome {
        Ok(request) => {
            assert!(request.audio().encoded_len().unwrap_or(0) <= max_file as usize)
        }
        Err(error) => {
            let status = error.status();
            assert!(status.is_client_error(), "{} -> {status}", error.code.as_str());
            assert!(!error.message.is_empty());
        }
    }
});

/// A stream over ready items, without pulling in `futures`.
fn tokio_stream_iter<T: Unpin>(items: Vec<T>) -> IterStream<T> {
    IterStream(items.into_iter())
}

struct IterStream<T>(std::vec::IntoIter<T>);

impl<T: Unpin> futures_core::Stream for IterStream<T> {
    type Item = T;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        std::task::Poll::Ready(self.0.next())
    }
}
