//! The web UI's static files (`web/dist`, built from `web/src` and committed so that installing
//! gg needs no Node), embedded in the binary and served by the HTTP transport on the API's
//! origin. The page itself carries no secret: the token arrives in the URL fragment, which the
//! browser never sends, and the page sends it only as an `Authorization` header.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use std::sync::OnceLock;

/// Content-Security-Policy of every response: only this origin's script and style files, no
/// inline script, no `eval`, requests only to this origin, never framed, no forms, no base.
/// Audio plays only from `blob:` URLs the page made itself (the media view's speech).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       media-src blob:; font-src 'self'; connect-src 'self'; base-uri 'none'; \
                       form-action 'none'; frame-ancestors 'none'";

/// How an asset's bytes are embedded.
#[derive(Clone, Copy)]
enum Stored {
    /// As they are (the page itself: a few hundred bytes).
    Plain(&'static [u8]),
    /// As a gzip member made by build.rs, sent as it is to a client that accepts gzip.
    Gzip(&'static [u8]),
}

struct Asset {
    path: &'static str,
    content_type: &'static str,
    stored: Stored,
}

const INDEX: &[u8] = include_bytes!("../../web/dist/index.html");

const ASSETS: [Asset; 3] = [
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        stored: Stored::Plain(INDEX),
    },
    Asset {
        path: "/assets/app.js",
        content_type: "text/javascript; charset=utf-8",
        stored: Stored::Gzip(include_bytes!(concat!(env!("OUT_DIR"), "/app.js.gz"))),
    },
    Asset {
        path: "/assets/style.css",
        content_type: "text/css; charset=utf-8",
        stored: Stored::Gzip(include_bytes!(concat!(env!("OUT_DIR"), "/style.css.gz"))),
    },
];

/// The inflated bytes of each gzipped asset (by its index in [`ASSETS`]), made the first time a
/// client that does not accept gzip asks for it, and kept.
static INFLATED: [OnceLock<Option<Box<[u8]>>>; ASSETS.len()] =
    [const { OnceLock::new() }; ASSETS.len()];

/// Whether `path` is one of the page's files (served without the bearer token).
pub fn is_asset(path: &str) -> bool {
    path == "/index.html" || ASSETS.iter().any(|a| a.path == path)
}

/// The file at `path`, or `None`; gzip-encoded when `accept_encoding` (the request's
/// `Accept-Encoding`) allows it.
pub fn asset(path: &str, accept_encoding: Option<&str>) -> Option<Response> {
    let path = if path == "/index.html" { "/" } else { path };
    let index = ASSETS.iter().position(|a| a.path == path)?;
    let asset = &ASSETS[index];
    let mut response = match asset.stored {
        Stored::Plain(body) => Response::new(Body::from(body)),
        Stored::Gzip(member) if accepts_gzip(accept_encoding) => {
            let mut response = Response::new(Body::from(member));
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            response
        }
        Stored::Gzip(member) => match INFLATED[index].get_or_init(|| inflate(member)) {
            Some(body) => Response::new(Body::from(&body[..])),
            None => {
                tracing::error!(path, "the embedded web asset does not inflate");
                let mut response = Response::new(Body::from("the embedded file is damaged"));
                *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                return Some(response);
            }
        },
    };
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    if matches!(asset.stored, Stored::Gzip(_)) {
        // A cache between must not give the gzip to a client that did not ask for it.
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    Some(response)
}

/// Whether an `Accept-Encoding` value allows gzip (RFC 9110 12.5.3): `gzip` (or `x-gzip`), else
/// `*`, with a non-zero weight. No header means identity only: curl without `--compressed`
/// sends none and gets the plain file.
fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let (mut gzip, mut any) = (None, None);
    for item in accept_encoding.unwrap_or_default().split(',') {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or_default().trim();
        let weight = parts
            .filter_map(|p| p.trim().split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, q)| q.trim().parse::<f32>().ok());
        // A weight that does not parse refuses rather than guesses.
        let allowed = weight.is_some_and(|q| q > 0.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(allowed);
        } else if coding == "*" {
            any = Some(allowed);
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// The deflate stream inside a gzip member made by build.rs (a 10-byte header with no optional
/// fields, and an 8-byte trailer), inflated; `None` if it is damaged.
fn inflate(member: &[u8]) -> Option<Box<[u8]>> {
    let stream = member.get(10..member.len().checked_sub(8)?)?;
    let trailer = member.get(member.len() - 4..)?;
    let size = u32::from_le_bytes(trailer.try_into().ok()?) as usize;
    let body = miniz_oxide::inflate::decompress_to_vec_with_limit(stream, size).ok()?;
    (body.len() == size).then(|| body.into_boxed_slice())
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

    #[test]
    fn the_gzipped_files_inflate_to_the_committed_bundle() {
        let committed: [&[u8]; 2] = [
            include_bytes!("../../web/dist/assets/app.js"),
            include_bytes!("../../web/dist/assets/style.css"),
        ];
        for (asset, committed) in ASSETS[1..].iter().zip(committed) {
            let Stored::Gzip(member) = asset.stored else {
                panic!("{} is not gzipped", asset.path)
            };
            assert!(member.len() * 2 < committed.len(), "{}", asset.path);
            assert_eq!(
                inflate(member).as_deref(),
                Some(committed),
                "{}",
                asset.path
            );
            // A damaged member is refused, not served.
            let mut damaged = member.to_vec();
            let last = damaged.len() - 1;
            damaged[last] ^= 1;
            assert_eq!(inflate(&damaged), None);
            assert_eq!(inflate(&member[..9]), None);
        }
    }

    #[test]
    fn gzip_goes_only_to_clients_that_accept_it() {
        for yes in [
            "gzip",
            "gzip, deflate, br, zstd",
            "br;q=1.0, GZIP;q=0.5",
            "x-gzip",
            "*",
            "identity;q=1, *;q=0.1",
        ] {
            assert!(accepts_gzip(Some(yes)), "{yes}");
        }
        for no in [
            "",
            "identity",
            "br, deflate",
            "gzip;q=0",
            "gzip; q=0.000",
            "*;q=0",
            "gzip;q=0, *",
            "gzip;q=x",
            "gzipx",
        ] {
            assert!(!accepts_gzip(Some(no)), "{no}");
        }
        assert!(!accepts_gzip(None));
    }
}
