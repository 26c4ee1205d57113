//! The web UI's static files (`web/dist`, built from `web/src` and committed so that installing
//! gg needs no Node), embedded in the binary and served by the HTTP transport on the API's
//! origin. The page itself carries no secret: the token arrives in the URL fragment, which the
//! browser never sends, and the page sends it only as an `Authorization` header.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// Content-Security-Policy of every response: only this origin's script and style files, no
/// inline script, no `eval`, requests only to this origin, never framed, no forms, no base.
/// Audio plays only from `blob:` URLs the page made itself (the media view's speech).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       media-src blob:; font-src 'self'; connect-src 'self'; base-uri 'none'; \
                       form-action 'none'; frame-ancestors 'none'";

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const INDEX: &[u8] = include_bytes!("../../web/dist/index.html");

const ASSETS: [Asset; 3] = [
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: INDEX,
    },
    Asset {
        path: "/assets/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/dist/assets/app.js"),
    },
    Asset {
        path: "/assets/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../web/dist/assets/style.css"),
    },
];

/// Whether `path` is one of the page's files (served without the bearer token).
pub fn is_asset(path: &str) -> bool {
    path == "/index.html" || ASSETS.iter().any(|a| a.path == path)
}

/// The file at `path`, or `None`.
pub fn asset(path: &str) -> Option<Response> {
    let path = if path == "/index.html" { "/" } else { path };
    let asset = ASSETS.iter().find(|a| a.path == path)?;
    let mut response = Response::new(Body::from(asset.body));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_external_files() {
        let index = std::str::from_utf8(INDEX).unwrap_or_default();
        assert!(index.contains("src=\"/assets/app.js\""), "{index}");
        assert!(index.contains("href=\"/assets/style.css\""), "{index}");
        // An inline script would be refused by the CSP: the page would stay blank.
        for (at, _) in index.match_indices("<script") {
            let tag_end = index[at..].find('>').map_or(index.len(), |e| at + e);
            assert!(
                index[at..tag_end].contains(" src="),
                "inline script in index.html"
            );
        }
        assert!(!index.contains(" style="), "inline style in index.html");
        assert!(is_asset("/") && is_asset("/index.html") && is_asset("/assets/app.js"));
        assert!(!is_asset("/rpc") && !is_asset("/assets/") && !is_asset("/assets/../rpc"));
    }
}
