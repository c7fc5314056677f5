//! API keys: kept as SHA-256 digests, compared in constant time.

use std::path::Path;

use hyper::header::{self, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use super::api_error::{ApiError, ServerCode};

/// The configured API keys, kept only as SHA-256 digests.
#[derive(Debug, Default)]
pub(crate) struct ApiKeys {
    pub(crate) digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    /// Keys from `CTXSCRIBE_API_KEYS` (comma-separated) and from `file` (one per line,
    /// `#` comments). A key file that cannot be read, or holds no key, is an error: it
    /// means the operator wanted authentication.
    pub(crate) fn load(env_keys: Option<&str>, file: Option<&Path>) -> Result<Self, String> {
        let mut keys: Vec<String> = env_keys
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        if let Some(file) = file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the API key file {}: {e}", file.display()))?;
            let before = keys.len();
            keys.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty() && !line.starts_with('#'))
                    .map(str::to_owned),
            );
            if keys.len() == before {
                return Err(format!("the API key file {} holds no key", file.display()));
            }
        }
        Ok(ApiKeys {
            digests: keys.iter().map(|k| digest(k.as_bytes())).collect(),
        })
    }

    pub(crate) fn is_enabled(&self) -> bool {
        !self.digests.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.digests.len()
    }

    /// Whether `key` is one of the keys: compared with every digest, in constant time.
    pub(crate) fn accepts(&self, key: &[u8]) -> bool {
        let presented = digest(key);
        let mut found = Choice::from(0);
        for known in &self.digests {
            found |= known.as_slice().ct_eq(presented.as_slice());
        }
        found.into()
    }

    /// Checks the request's `Authorization: Bearer` or `X-Api-Key` header.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if !self.is_enabled() {
            return Ok(());
        }
        let presented = presented_keys(headers);
        let unauthorized = |message: &str| {
            ApiError::new(ServerCode::InvalidApiKey, message)
                .header(header::WWW_AUTHENTICATE, "Bearer")
        };
        // One guess per header and request: repeating a header (hyper accepts up to 100)
        // would otherwise test that many keys per request.
        if headers.get_all(header::AUTHORIZATION).iter().count() > 1
            || headers.get_all("x-api-key").iter().count() > 1
        {
            return Err(unauthorized(
                "Send one API key: the Authorization or X-Api-Key header was repeated.",
            ));
        }
        if presented.is_empty() {
            return Err(unauthorized(
                "Missing API key: send it as `Authorization: Bearer <key>` or `X-Api-Key: <key>`.",
            ));
        }
        // Check every presented key, so timing does not say which header was right.
        let mut accepted = false;
        for key in presented {
            accepted |= self.accepts(key);
        }
        if accepted {
            Ok(())
        } else {
            Err(unauthorized("Incorrect API key provided."))
        }
    }
}

pub(crate) fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The keys a request presents: a Bearer token and/or an `X-Api-Key` value.
pub(crate) fn presented_keys(headers: &HeaderMap) -> Vec<&[u8]> {
    let mut keys = Vec::new();
    for value in headers.get_all(header::AUTHORIZATION) {
        let value = value.as_bytes();
        if value.len() > 7 && value[..7].eq_ignore_ascii_case(b"bearer ") {
            let token = value[7..].trim_ascii();
            if !token.is_empty() {
                keys.push(token);
            }
        }
    }
    for value in headers.get_all("x-api-key") {
        let token = value.as_bytes().trim_ascii();
        if !token.is_empty() {
            keys.push(token);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::super::test_headers as headers;
    use super::*;
    use hyper::StatusCode;

    #[test]
    fn api_keys_from_env_and_file() {
        let dir = std::env::temp_dir().join(format!("ctxscribe-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("keys");
        std::fs::write(&file, "# team keys\n\n  file-key  \n").expect("write keys");
        let keys = ApiKeys::load(Some(" env-a, ,env-b "), Some(&file)).expect("keys");
        assert_eq!(keys.len(), 3);
        assert!(keys.accepts(b"env-a") && keys.accepts(b"env-b") && keys.accepts(b"file-key"));
        assert!(!keys.accepts(b"env-") && !keys.accepts(b"") && !keys.accepts(b"env-ab"));

        std::fs::write(&file, "# nothing\n").expect("write keys");
        let error = ApiKeys::load(None, Some(&file)).expect_err("empty key file");
        assert!(error.contains("holds no key"), "{error}");
        let error = ApiKeys::load(None, Some(&dir.join("missing"))).expect_err("no file");
        assert!(error.contains("cannot read"), "{error}");
        std::fs::remove_dir_all(&dir).expect("clean up");

        assert!(
            !ApiKeys::load(Some(" , "), None)
                .expect("no keys")
                .is_enabled()
        );
    }

    #[test]
    fn api_key_headers() {
        let keys = ApiKeys::load(Some("secret"), None).expect("keys");
        assert!(
            keys.check(&headers(&[("authorization", "Bearer secret")]))
                .is_ok()
        );
        assert!(
            keys.check(&headers(&[("authorization", "bearer  secret ")]))
                .is_ok()
        );
        assert!(keys.check(&headers(&[("x-api-key", "secret")])).is_ok());
        assert!(
            keys.check(&headers(&[
                ("authorization", "Bearer wrong"),
                ("x-api-key", "secret")
            ]))
            .is_ok()
        );
        for bad in [
            headers(&[]),
            headers(&[("authorization", "Basic c2VjcmV0")]),
            headers(&[("authorization", "Bearer ")]),
        ] {
            let error = keys.check(&bad).expect_err("no key");
            assert_eq!(error.code, "invalid_api_key");
            assert!(
                error.message.contains("Missing API key"),
                "{}",
                error.message
            );
        }
        // A repeated header is refused, even when one of its values is right.
        for repeated in [
            headers(&[
                ("authorization", "Bearer guess-1"),
                ("authorization", "Bearer secret"),
            ]),
            headers(&[("x-api-key", "secret"), ("x-api-key", "guess-2")]),
        ] {
            let error = keys.check(&repeated).expect_err("repeated header");
            assert_eq!(error.code, "invalid_api_key");
            assert!(error.message.contains("repeated"), "{}", error.message);
        }
        let error = keys
            .check(&headers(&[("authorization", "Bearer secreT")]))
            .expect_err("wrong key");
        assert_eq!(error.code, "invalid_api_key");
        assert_eq!(error.status(), StatusCode::UNAUTHORIZED);
        assert!(!error.message.contains("secreT"));
        assert!(ApiKeys::default().check(&headers(&[])).is_ok());
    }
}
