//! The Google connector: `"connectors": {"google": {…}}` (this file), the sign-in
//! (`oauth.rs`: the installed-app flow with PKCE and a loopback redirect, refresh, revocation),
//! the token file (`token.rs`: `~/.gg/connectors/google.json`, 0600, strict open, atomic
//! writes), the Gmail and Calendar REST subset (`api.rs`) and mail decoding (`mail.rs`).
//!
//! Mail is the most hostile input gg reads (anyone can send the person a message): everything
//! read back is wrapped as untrusted content by the tools, and a turn that read mail is
//! tainted (`agent::runner`): later calls that could carry data out need a person.

pub mod api;
pub mod mail;
pub mod oauth;
pub mod token;

use serde::{Deserialize, Serialize};

pub const SCOPE_GMAIL_READONLY: &str = "https://www.googleapis.com/auth/gmail.readonly";
pub const SCOPE_GMAIL_COMPOSE: &str = "https://www.googleapis.com/auth/gmail.compose";
pub const SCOPE_CALENDAR_READONLY: &str = "https://www.googleapis.com/auth/calendar.readonly";
pub const SCOPE_CALENDAR_EVENTS: &str = "https://www.googleapis.com/auth/calendar.events";

/// `"connectors": {"google": {…}}`. gg ships no OAuth client of its own: the person (or their
/// organisation) creates a "Desktop app" client in the Google Cloud console and names it here.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GoogleConfig {
    /// The OAuth client id (`….apps.googleusercontent.com`).
    pub client_id: Option<String>,
    /// A file holding the client secret: the JSON Google's console downloads
    /// (`{"installed": {"client_secret": …}}`) or the secret alone. It joins the deny-read
    /// policy once read.
    pub client_secret_file: Option<String>,
    pub auth_url: String,
    pub token_url: String,
    pub revoke_url: String,
    /// Where the Gmail (`/gmail/v1/…`) and Calendar (`/calendar/v3/…`) APIs are.
    pub api_base: String,
    /// Offer `gmail_draft` (asks for the `gmail.compose` scope at sign-in).
    pub drafts: bool,
    /// Offer `calendar_create` (asks for `calendar.events` instead of `calendar.readonly`).
    pub events: bool,
}

impl Default for GoogleConfig {
    fn default() -> Self {
        GoogleConfig {
            client_id: None,
            client_secret_file: None,
            auth_url: "https://accounts.google.com/o/oauth2/v2/auth".to_string(),
            token_url: "https://oauth2.googleapis.com/token".to_string(),
            revoke_url: "https://oauth2.googleapis.com/revoke".to_string(),
            api_base: "https://www.googleapis.com".to_string(),
            drafts: false,
            events: false,
        }
    }
}

impl GoogleConfig {
    /// Every endpoint must be HTTPS, or plain HTTP on a loopback address (a test's fake Google,
    /// an organisation's local proxy): tokens and mail never cross a network in clear text.
    pub fn validate(&self) -> Result<(), String> {
        for (key, value) in [
            ("authUrl", &self.auth_url),
            ("tokenUrl", &self.token_url),
            ("revokeUrl", &self.revoke_url),
            ("apiBase", &self.api_base),
        ] {
            endpoint(value).map_err(|e| format!("connectors.google.{key}: {e}"))?;
        }
        if let Some(id) = &self.client_id
            && (id.trim().is_empty() || id.chars().any(char::is_control))
        {
            return Err("connectors.google.clientId: must be a non-empty client id".to_string());
        }
        Ok(())
    }

    /// The scopes a sign-in asks for: the narrowest that serve the enabled tools.
    pub fn scopes(&self) -> Vec<&'static str> {
        let mut scopes = vec![SCOPE_GMAIL_READONLY];
        if self.drafts {
            scopes.push(SCOPE_GMAIL_COMPOSE);
        }
        scopes.push(if self.events {
            SCOPE_CALENDAR_EVENTS
        } else {
            SCOPE_CALENDAR_READONLY
        });
        scopes
    }
}

/// The connector's state as `gg connect status --json` and ggd's `connect.status` give it:
/// signed in or not, the granted scopes, since when, and whether the tools are on. Never a token.
pub fn status(
    home: &std::path::Path,
    config: &GoogleConfig,
    tools_enabled: bool,
) -> Result<serde_json::Value, String> {
    let configured = config.client_id.is_some();
    Ok(match token::load(home)? {
        Some(t) => serde_json::json!({
            "signedIn": true,
            "configured": configured,
            "scopes": t.scopes,
            "signedInAt": t.signed_in_at,
            "expiresAt": t.expires_at,
            "refreshable": t.refresh_token.is_some(),
            "toolsEnabled": tools_enabled,
        }),
        None => serde_json::json!({
            "signedIn": false,
            "configured": configured,
            "toolsEnabled": tools_enabled,
        }),
    })
}

/// What each scope lets gg do, for the list printed before the sign-in URL.
pub fn scope_meaning(scope: &str) -> &'static str {
    match scope {
        SCOPE_GMAIL_READONLY => "read your mail (search and read; never send)",
        SCOPE_GMAIL_COMPOSE => "create drafts (gg never sends them; you do, from Gmail)",
        SCOPE_CALENDAR_READONLY => "read your calendars",
        SCOPE_CALENDAR_EVENTS => "read and create events in your calendars",
        _ => "",
    }
}

/// A configured endpoint as a URL: HTTPS, or HTTP to a loopback address.
pub fn endpoint(value: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(value).map_err(|e| format!("not a URL ({e})"))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err(format!(
            "{value} is plain HTTP to another machine; use https (plain HTTP only on loopback)"
        )),
        other => Err(format!("{value}: scheme {other} is not https")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_https_or_loopback_http() {
        assert!(endpoint("https://oauth2.googleapis.com/token").is_ok());
        assert!(endpoint("http://127.0.0.1:8080/token").is_ok());
        assert!(endpoint("http://[::1]:8080/").is_ok());
        assert!(endpoint("http://localhost/").is_ok());
        assert!(endpoint("http://example.com/token").is_err());
        assert!(endpoint("ftp://127.0.0.1/").is_err());
        assert!(endpoint("not a url").is_err());
    }

    #[test]
    fn scopes_are_the_narrowest_for_the_enabled_tools() {
        let mut config = GoogleConfig::default();
        assert_eq!(
            config.scopes(),
            [SCOPE_GMAIL_READONLY, SCOPE_CALENDAR_READONLY]
        );
        config.drafts = true;
        config.events = true;
        assert_eq!(
            config.scopes(),
            [
                SCOPE_GMAIL_READONLY,
                SCOPE_GMAIL_COMPOSE,
                SCOPE_CALENDAR_EVENTS
            ]
        );
    }
}
