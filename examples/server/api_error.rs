//! Error answers: the OpenAI-style body, and the statuses of the codes, in one place.

use bytes::Bytes;
use ctxscribe::Error as LibError;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

/// An error answer: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) code: &'static str,
    pub(crate) message: String,
    pub(crate) param: Option<String>,
    /// Extra headers (`Retry-After`, `Allow`, `WWW-Authenticate`).
    pub(crate) headers: Vec<(header::HeaderName, String)>,
}

/// The HTTP status of every code the server answers with: the library's
/// (`ctxscribe::Error::code`) and the server's own. The only such mapping.
pub(crate) fn status_for_code(code: &str) -> StatusCode {
    match code {
        "invalid_request"
        | "unsupported_audio_type"
        | "audio_decode_failed"
        | "audio_too_long"
        | "missing_file"
        | "unsupported_response_format"
        | "invalid_multipart" => StatusCode::BAD_REQUEST,
        "invalid_api_key" => StatusCode::UNAUTHORIZED,
        "not_found" => StatusCode::NOT_FOUND,
        "method_not_allowed" => StatusCode::METHOD_NOT_ALLOWED,
        "request_timeout" => StatusCode::REQUEST_TIMEOUT,
        "file_too_large" | "request_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "unsupported_media_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "transcription_failed" => StatusCode::BAD_GATEWAY,
        "server_busy" => StatusCode::SERVICE_UNAVAILABLE,
        // model_unavailable, and any code a newer library adds.
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl ApiError {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            param: None,
            headers: Vec::new(),
        }
    }

    pub(crate) fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub(crate) fn header(mut self, name: header::HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// An `invalid_request` about `field`, with the library's message (for fields that
    /// go through a library parser under another name, such as `language`).
    pub(crate) fn invalid_field(field: &'static str, error: LibError) -> Self {
        match error {
            LibError::InvalidRequest { message, .. } => {
                ApiError::new("invalid_request", message).param(field)
            }
            other => other.into(),
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        status_for_code(self.code)
    }

    pub(crate) fn into_response(self) -> Response<Full<Bytes>> {
        let status = self.status();
        let kind = if status.is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        };
        let body = json!({
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.code,
            }
        });
        let mut response = json_response(status, &body);
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

impl From<LibError> for ApiError {
    fn from(error: LibError) -> Self {
        ApiError {
            code: error.code(),
            message: error.to_string(),
            param: error.param().map(str::to_owned),
            headers: Vec::new(),
        }
    }
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
