//! Signing in to Google: OAuth 2.0 for installed apps (RFC 8252), the authorization-code flow
//! with PKCE (S256) and a loopback redirect on `127.0.0.1:<ephemeral port>`, done by the
//! `oauth2` crate; refreshing the access token; revoking at Google.
//!
//! The crate's HTTP goes through gg's own reqwest client ([`send`]), so no second HTTP stack is
//! built. Revocation is one form POST written here: the crate refuses a revocation endpoint that
//! is not HTTPS, and the tests' fake Google is plain HTTP on loopback (which
//! [`super::endpoint`] allows, and nothing else).

use std::path::Path;
use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, Scope,
    TokenResponse, TokenUrl,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::GoogleConfig;
use super::token::{self, Tokens};

type OAuthClient =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// An HTTP failure of the token endpoint's transport, as the `oauth2` crate wants it.
#[derive(Debug)]
pub struct HttpError(String);

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpError {}

/// The HTTP client every Google call uses: rustls with ring (as the rest of gg), no redirects
/// (a token must not follow one elsewhere), bounded waits.
pub fn http_client() -> Result<reqwest::Client, String> {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// At most this much of a response body is read (a token response is a few hundred bytes, a
/// message a few megabytes).
pub const MAX_BODY: usize = 16 << 20;

/// Reads a response body, refusing more than [`MAX_BODY`].
pub async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading the response: {}", without_url(&e)))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err("the response is larger than 16 MiB".to_string());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A reqwest error without its URL, which may carry a query (a search, a code).
pub fn without_url(error: &reqwest::Error) -> String {
    crate::provider::error_chain(error)
}

/// The `oauth2` crate's requests, sent with gg's reqwest client.
async fn send(
    client: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, HttpError> {
    let (parts, body) = request.into_parts();
    let response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(|e| HttpError(without_url(&e)))?;
    let mut builder = oauth2::http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = read_body(response).await.map_err(HttpError)?;
    builder.body(body).map_err(|e| HttpError(e.to_string()))
}

/// The client id and, when configured, the client secret (read from its file, which then joins
/// the deny-read policy).
fn credentials(config: &GoogleConfig) -> Result<(String, Option<String>), String> {
    let id = config
        .client_id
        .clone()
        .filter(|id| !id.trim().is_empty())
        .ok_or_else(|| {
            "no Google OAuth client configured: create a \"Desktop app\" client in the Google \
             Cloud console and set connectors.google.clientId (and clientSecretFile) in \
             ~/.gg/config.json"
                .to_string()
        })?;
    let Some(file) = &config.client_secret_file else {
        return Ok((id, None));
    };
    let home = tools::security::home_dir();
    let path = tools::store::expand_dir(file, &home);
    let bytes = tools::store::read_regular(&path, 64 * 1024)
        .map_err(|e| format!("connectors.google.clientSecretFile {}: {e}", path.display()))?;
    tools::secrets::add_secret_file(&path);
    let text = String::from_utf8(bytes).map_err(|_| {
        format!(
            "connectors.google.clientSecretFile {} is not text",
            path.display()
        )
    })?;
    // The JSON Google's console downloads, or the secret alone.
    let secret = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(json) => ["installed", "web"]
            .iter()
            .find_map(|k| json[k]["client_secret"].as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                format!(
                    "connectors.google.clientSecretFile {}: no installed.client_secret in it",
                    path.display()
                )
            })?,
        Err(_) => text.trim().to_string(),
    };
    if secret.is_empty() {
        return Err(format!(
            "connectors.google.clientSecretFile {} is empty",
            path.display()
        ));
    }
    Ok((id, Some(secret)))
}

fn oauth_client(
    config: &GoogleConfig,
    id: &str,
    secret: Option<String>,
) -> Result<OAuthClient, String> {
    let auth = AuthUrl::new(config.auth_url.clone())
        .map_err(|e| format!("connectors.google.authUrl: {e}"))?;
    let token = TokenUrl::new(config.token_url.clone())
        .map_err(|e| format!("connectors.google.tokenUrl: {e}"))?;
    let client = BasicClient::new(ClientId::new(id.to_string()))
        .set_auth_uri(auth)
        .set_token_uri(token)
        // Google documents the client credentials in the request body for installed apps.
        .set_auth_type(AuthType::RequestBody);
    Ok(match secret {
        Some(secret) => client.set_client_secret(ClientSecret::new(secret)),
        None => client,
    })
}

/// A sign-in under way: the loopback listener is bound, the URL made.
pub struct SignIn {
    listener: tokio::net::TcpListener,
    url: url::Url,
    state: CsrfToken,
    verifier: PkceCodeVerifier,
    scopes: Vec<&'static str>,
    client: OAuthClient,
    client_id: String,
    http: reqwest::Client,
}

impl SignIn {
    /// Binds `127.0.0.1:0` and builds the authorization URL (PKCE S256, a random `state`,
    /// offline access for a refresh token).
    pub async fn begin(config: &GoogleConfig) -> Result<SignIn, String> {
        config.validate()?;
        let (client_id, secret) = credentials(config)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1 for the redirect: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on 127.0.0.1 for the redirect: {e}"))?
            .port();
        let redirect =
            RedirectUrl::new(format!("http://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
        let client = oauth_client(config, &client_id, secret)?.set_redirect_uri(redirect);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let scopes = config.scopes();
        let (url, state) = client
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().map(|s| Scope::new(s.to_string())))
            .add_extra_param("access_type", "offline")
            // Google returns a refresh token only on consent; ask every time a person signs in.
            .add_extra_param("prompt", "consent")
            .set_pkce_challenge(challenge)
            .url();
        Ok(SignIn {
            listener,
            url,
            state,
            verifier,
            scopes,
            client,
            client_id,
            http: http_client()?,
        })
    }

    pub fn url(&self) -> &url::Url {
        &self.url
    }

    pub fn scopes(&self) -> &[&'static str] {
        &self.scopes
    }

    /// Waits (up to `timeout`) for the browser to come back to the loopback address, checks
    /// `state`, exchanges the code (with the PKCE verifier) and stores the tokens.
    pub async fn finish(self, home: &Path, timeout: Duration) -> Result<Tokens, String> {
        let code = tokio::time::timeout(timeout, self.redirected())
            .await
            .map_err(|_| {
                format!(
                    "no answer from the browser within {} s; nothing was saved",
                    timeout.as_secs()
                )
            })??;
        let response = self
            .client
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(self.verifier)
            .request_async(&|request| send(self.http.clone(), request))
            .await
            .map_err(|e| format!("Google refused the sign-in: {}", token_error(&e)))?;
        let now = token::now();
        let granted: Vec<String> = match response.scopes() {
            Some(scopes) => scopes.iter().map(|s| s.to_string()).collect(),
            None => self.scopes.iter().map(|s| s.to_string()).collect(),
        };
        let tokens = Tokens {
            client_id: self.client_id.clone(),
            scopes: granted,
            access_token: response.access_token().secret().clone(),
            refresh_token: response.refresh_token().map(|t| t.secret().clone()),
            expires_at: response
                .expires_in()
                .map(|d| now.saturating_add(d.as_secs())),
            signed_in_at: tools::store::now_rfc3339(),
        };
        // The lock may wait for another gg's refresh: not on the runtime's workers.
        let home = home.to_path_buf();
        let stored = tokens.clone();
        tokio::task::spawn_blocking(move || {
            let _lock = token::lock(&home)?;
            token::save(&home, &stored)
        })
        .await
        .map_err(|e| e.to_string())??;
        Ok(tokens)
    }

    /// The redirect's code, once a request to `/` arrives with the right `state`. Other paths
    /// (a browser's `/favicon.ico`) get a 404 and the wait goes on; a wrong `state` ends the
    /// sign-in (it is not the browser this sign-in sent).
    async fn redirected(&self) -> Result<String, String> {
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| format!("waiting for the redirect: {e}"))?;
            let Some(target) = read_request_target(&mut stream).await else {
                continue;
            };
            let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
                respond(&mut stream, "400 Bad Request", "Not a sign-in redirect.").await;
                continue;
            };
            if url.path() != "/" {
                respond(&mut stream, "404 Not Found", "Not found.").await;
                continue;
            }
            let query = |name: &str| {
                url.query_pairs()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
            };
            if query("state").as_deref() != Some(self.state.secret().as_str()) {
                respond(
                    &mut stream,
                    "400 Bad Request",
                    "The sign-in was refused: its state did not match. Close this page.",
                )
                .await;
                return Err(
                    "the redirect's state did not match this sign-in (another page or program \
                     answered); refused, nothing was saved"
                        .to_string(),
                );
            }
            if let Some(error) = query("error") {
                respond(&mut stream, "200 OK", "The sign-in did not complete.").await;
                return Err(format!(
                    "Google did not sign you in: {}",
                    crate::display::visible_inline(&error)
                ));
            }
            let Some(code) = query("code").filter(|c| !c.is_empty()) else {
                respond(&mut stream, "400 Bad Request", "No code in the redirect.").await;
                return Err("the redirect carried no code; nothing was saved".to_string());
            };
            respond(
                &mut stream,
                "200 OK",
                "Signed in. You can close this page and go back to gg.",
            )
            .await;
            return Ok(code);
        }
    }
}

/// The request target of an HTTP/1 request line, read with a bound on size and time.
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let read = async {
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()??;
    let line = buf.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut words = line.split(' ');
    let method = words.next()?;
    let target = words.next()?;
    (method == "GET" && target.starts_with('/')).then(|| target.to_string())
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><meta charset=utf-8><title>gg</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// An `oauth2` request error in words: Google's error code and description, never the body.
fn token_error<RE: std::error::Error + 'static, T: oauth2::ErrorResponse + 'static>(
    error: &oauth2::RequestTokenError<RE, T>,
) -> String {
    match error {
        oauth2::RequestTokenError::ServerResponse(response) => {
            crate::display::visible_inline(&response.to_string()).into_owned()
        }
        oauth2::RequestTokenError::Request(e) => e.to_string(),
        oauth2::RequestTokenError::Parse(e, _body) => {
            format!("the token endpoint's answer did not parse ({e})")
        }
        oauth2::RequestTokenError::Other(e) => e.clone(),
    }
}

/// The signed-in tokens with a current access token: refreshed (and stored) first when it has
/// expired. `None` when nobody signed in.
pub async fn current(home: &Path, config: &GoogleConfig) -> Result<Option<Tokens>, String> {
    let home_owned = home.to_path_buf();
    // The lock may wait for another gg's refresh: not on the runtime's workers.
    let lock = tokio::task::spawn_blocking(move || token::lock(&home_owned))
        .await
        .map_err(|e| e.to_string())??;
    let Some(tokens) = token::load(home)? else {
        return Ok(None);
    };
    if !tokens.expired(token::now()) {
        return Ok(Some(tokens));
    }
    let refreshed = refresh(home, config, tokens).await?;
    drop(lock);
    Ok(Some(refreshed))
}

/// Exchanges the refresh token for a new access token and stores it. The caller holds the lock.
async fn refresh(home: &Path, config: &GoogleConfig, tokens: Tokens) -> Result<Tokens, String> {
    let Some(refresh_token) = tokens.refresh_token.clone() else {
        return Err(
            "the Google access token expired and there is no refresh token: run \
                    `gg connect google` again"
                .to_string(),
        );
    };
    let (id, secret) = credentials(config)?;
    if id != tokens.client_id {
        return Err("the Google tokens belong to another OAuth client than \
                    connectors.google.clientId: run `gg connect google` again"
            .to_string());
    }
    let client = oauth_client(config, &id, secret)?;
    let http = http_client()?;
    let response = client
        .exchange_refresh_token(&RefreshToken::new(refresh_token))
        .request_async(&|request| send(http.clone(), request))
        .await
        .map_err(|e| {
            format!(
                "refreshing the Google access token failed: {} (run `gg connect google` to \
                 sign in again)",
                token_error(&e)
            )
        })?;
    let now = token::now();
    let mut fresh = tokens;
    fresh.access_token = response.access_token().secret().clone();
    if let Some(rotated) = response.refresh_token() {
        fresh.refresh_token = Some(rotated.secret().clone());
    }
    fresh.expires_at = response
        .expires_in()
        .map(|d| now.saturating_add(d.as_secs()));
    token::save(home, &fresh)?;
    Ok(fresh)
}

/// What `gg connect revoke google` did.
pub enum Revoked {
    /// Google revoked the grant; the file is deleted.
    AtGoogle,
    /// Google no longer knew the token (already revoked or expired); the file is deleted.
    AlreadyInvalid,
    /// There was nothing to revoke.
    NotSignedIn,
}

/// Revokes the grant at Google (the refresh token, which revokes the access token with it),
/// then deletes the token file. If Google cannot be reached the file is kept and the error said.
pub async fn revoke(home: &Path, config: &GoogleConfig) -> Result<Revoked, String> {
    config.validate()?;
    let home_owned = home.to_path_buf();
    let _lock = tokio::task::spawn_blocking(move || token::lock(&home_owned))
        .await
        .map_err(|e| e.to_string())??;
    let Some(tokens) = token::load(home)? else {
        return Ok(Revoked::NotSignedIn);
    };
    let token = tokens
        .refresh_token
        .as_deref()
        .unwrap_or(&tokens.access_token);
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", token)
        .finish();
    let response = http_client()?
        .post(&config.revoke_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| {
            format!(
                "could not reach Google to revoke ({}); the tokens are kept in {}",
                without_url(&e),
                token::path(home).display()
            )
        })?;
    let status = response.status();
    let answer = read_body(response).await.unwrap_or_default();
    let outcome = if status.is_success() {
        Revoked::AtGoogle
    } else if status.as_u16() == 400 && String::from_utf8_lossy(&answer).contains("invalid_token") {
        Revoked::AlreadyInvalid
    } else {
        return Err(format!(
            "Google answered the revocation with HTTP {status}; the tokens are kept in {}",
            token::path(home).display()
        ));
    };
    token::remove(home)?;
    Ok(outcome)
}
