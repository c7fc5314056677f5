//! The try-it page at `GET /`: static HTML, JavaScript and CSS compiled into the binary
//! (no CDN, no framework). The page itself needs no API key; the transcriptions it sends
//! do, and the page has a field for one (sent as `Authorization: Bearer`).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Response, Uri};

use super::api_error::{ApiError, ServerCode};

/// The page's paths, and what each serves.
const ASSETS: [(&str, &str, &str); 3] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("page/index.html"),
    ),
    (
        "/page/app.js",
        "text/javascript; charset=utf-8",
        include_str!("page/app.js"),
    ),
    (
        "/page/app.css",
        "text/css; charset=utf-8",
        include_str!("page/app.css"),
    ),
];

/// The longest query string a page request may carry (the page uses none).
pub(crate) const MAX_QUERY_BYTES: usize = 2048;

/// Whether `path` is one of the page's.
pub(crate) fn is_page(path: &str) -> bool {
    ASSETS.iter().any(|(p, _, _)| *p == path)
}

/// The asset at `uri`'s path; `uri_too_long` when its query string is over
/// [`MAX_QUERY_BYTES`], `not_found` for a path that is not the page's.
pub(crate) fn asset(uri: &Uri) -> Result<Response<Full<Bytes>>, ApiError> {
    let query = uri.query().map_or(0, str::len);
    if query > MAX_QUERY_BYTES {
        return Err(ApiError::new(
            ServerCode::UriTooLong,
            format!("The query string is {query} bytes; the limit is {MAX_QUERY_BYTES}."),
        ));
    }
    let (_, content_type, body) = ASSETS
        .iter()
        .find(|(p, _, _)| *p == uri.path())
        .ok_or_else(|| ApiError::new(ServerCode::NotFound, "No such page."))?;
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Everything the page loads is its own: no inline script, no other origin.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; media-src 'self' blob:; \
             connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_page_and_bounds_the_query() {
        let page = asset(&Uri::from_static("/?lang=en")).expect("the page");
        assert_eq!(
            page.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        let script = asset(&Uri::from_static("/page/app.js")).expect("the script");
        assert!(
            script.headers()[header::CONTENT_TYPE]
                .to_str()
                .is_ok_and(|t| t.starts_with("text/javascript"))
        );
        let long: Uri = format!("/?q={}", "a".repeat(MAX_QUERY_BYTES))
            .parse()
            .expect("a uri");
        let error = asset(&long).expect_err("too long");
        assert_eq!(error.code, "uri_too_long");
        assert_eq!(error.status().as_u16(), 414);
        assert_eq!(
            asset(&Uri::from_static("/page/other.js"))
                .expect_err("no such asset")
                .code,
            "not_found"
        );
    }
}
