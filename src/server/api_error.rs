//! Error answers: the OpenAI-style body, and the statuses of the codes, in one place.

use crate::{Error as LibError, ErrorCode};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

/// An error answer: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ApiCode,
    pub message: String,
    pub param: Option<String>,
    /// Extra headers (`Retry-After`, `Allow`, `WWW-Authenticate`).
    pub headers: Vec<(header::HeaderName, String)>,
}

/// The codes only the server answers with (the library's are [`ErrorCode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerCode {
    MissingFile,
    UnsupportedResponseFormat,
    InvalidMultipart,
    InvalidApiKey,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    RequestTooLarge,
    UnsupportedMediaType,
    ServerBusy,
    UriTooLong,
}

impl ServerCode {
    #[cfg(test)]
    pub const ALL: [ServerCode; 11] = [
        ServerCode::MissingFile,
        ServerCode::UnsupportedResponseFormat,
        ServerCode::InvalidMultipart,
        ServerCode::InvalidApiKey,
        ServerCode::NotFound,
        ServerCode::MethodNotAllowed,
        ServerCode::RequestTimeout,
        ServerCode::RequestTooLarge,
        ServerCode::UnsupportedMediaType,
        ServerCode::ServerBusy,
        ServerCode::UriTooLong,
    ];

    /// The code string and the HTTP status: one exhaustive `match`.
    const fn face(self) -> (&'static str, StatusCode) {
        match self {
            ServerCode::MissingFile => ("missing_file", StatusCode::BAD_REQUEST),
            ServerCode::UnsupportedResponseFormat => {
                ("unsupported_response_format", StatusCode::BAD_REQUEST)
            }
            ServerCode::InvalidMultipart => ("invalid_multipart", StatusCode::BAD_REQUEST),
            ServerCode::InvalidApiKey => ("invalid_api_key", StatusCode::UNAUTHORIZED),
            ServerCode::NotFound => ("not_found", StatusCode::NOT_FOUND),
            ServerCode::MethodNotAllowed => ("method_not_allowed", StatusCode::METHOD_NOT_ALLOWED),
            ServerCode::RequestTimeout => ("request_timeout", StatusCode::REQUEST_TIMEOUT),
            ServerCode::RequestTooLarge => ("request_too_large", StatusCode::PAYLOAD_TOO_LARGE),
            ServerCode::UnsupportedMediaType => {
                ("unsupported_media_type", StatusCode::UNSUPPORTED_MEDIA_TYPE)
            }
            ServerCode::ServerBusy => ("server_busy", StatusCode::SERVICE_UNAVAILABLE),
            ServerCode::UriTooLong => ("uri_too_long", StatusCode::URI_TOO_LONG),
        }
    }
}

/// Every code the server answers with: the library's and its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiCode {
    Library(ErrorCode),
    Server(ServerCode),
}

impl ApiCode {
    /// The code string of the error body.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiCode::Library(code) => code.as_str(),
            ApiCode::Server(code) => code.face().0,
        }
    }

    /// The HTTP status of the code. The only such mapping.
    pub fn status(self) -> StatusCode {
        match self {
            ApiCode::Library(code) => StatusCode::from_u16(code.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            ApiCode::Server(code) => code.face().1,
        }
    }

    /// The code of a code string, `None` for a string that is no code.
    #[cfg(test)]
    pub fn from_name(name: &str) -> Option<Self> {
        let library = ErrorCode::ALL.into_iter().map(ApiCode::from);
        let server = ServerCode::ALL.into_iter().map(ApiCode::Server);
        library.chain(server).find(|code| code.as_str() == name)
    }
}

impl From<ErrorCode> for ApiCode {
    /// The HTTP contract's code ([`ErrorCode::http_code`]: a cancelled run or one past
    /// its deadline is `transcription_failed`).
    fn from(code: ErrorCode) -> Self {
        ApiCode::Library(code.http_code())
    }
}

impl From<ServerCode> for ApiCode {
    fn from(code: ServerCode) -> Self {
        ApiCode::Server(code)
    }
}

impl PartialEq<&str> for ApiCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl ApiError {
    pub fn new(code: impl Into<ApiCode>, message: impl Into<String>) -> Self {
        ApiError {
            code: code.into(),
            message: message.into(),
            param: None,
            headers: Vec::new(),
        }
    }

    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub fn header(mut self, name: header::HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// An `invalid_request` about `field`, with the library's message (for fields that
    /// go through a library parser under another name, such as `language`).
    pub fn invalid_field(field: &'static str, error: LibError) -> Self {
        match error {
            LibError::InvalidRequest { message, .. } => {
                ApiError::new(ErrorCode::InvalidRequest, message).param(field)
            }
            other => other.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// `{"error": {"message", "type", "param", "code"}}`.
    pub fn body(&self) -> Value {
        let kind = if self.status().is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        };
        json!({
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.code.as_str(),
            }
        })
    }

    pub fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = json_response(self.status(), &self.body());
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
            code: error.code().into(),
            message: error.to_string(),
            param: error.param().map(str::to_owned),
            headers: Vec::new(),
        }
    }
}

pub fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::parse_dictionary;
    use http_body_util::BodyExt;

    #[test]
    fn every_code_has_its_status() {
        for (code, status) in [
            ("invalid_request", 400),
            ("unsupported_audio_type", 400),
            ("audio_decode_failed", 400),
            ("audio_too_long", 400),
            ("missing_file", 400),
            ("unsupported_response_format", 400),
            ("invalid_multipart", 400),
            ("invalid_api_key", 401),
            ("not_found", 404),
            ("method_not_allowed", 405),
            ("request_timeout", 408),
            ("uri_too_long", 414),
            ("file_too_large", 413),
            ("request_too_large", 413),
            ("unsupported_media_type", 415),
            ("model_unavailable", 500),
            ("transcription_failed", 502),
            ("server_busy", 503),
        ] {
            let known = ApiCode::from_name(code).expect("a known code");
            assert_eq!(known.status().as_u16(), status, "{code}");
        }
    }

    #[test]
    fn library_errors_keep_code_and_param() {
        let error = ApiError::from(parse_dictionary("[1]").expect_err("a number is not a term"));
        assert_eq!(error.code, "invalid_request");
        assert_eq!(error.param.as_deref(), Some("dictionary"));
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
    }

    #[tokio::test]
    async fn error_bodies_have_all_four_keys() {
        let response = ApiError::new(ServerCode::ServerBusy, "busy").into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let body: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(
            body,
            json!({"error": {"message": "busy", "type": "server_error", "param": null,
                             "code": "server_busy"}})
        );
    }
}
