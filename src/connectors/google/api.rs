//! The Gmail and Calendar REST subset the tools use, with the signed-in account's access token
//! (refreshed first when it has expired: [`oauth::current`]). The token goes in the
//! `Authorization` header of requests to `apiBase` and nowhere else.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::GoogleConfig;
use super::mail;
use super::oauth;

/// One message found by a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub id: String,
    pub from: String,
    pub subject: String,
    pub date: String,
    pub snippet: String,
}

/// One calendar event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub summary: String,
    pub start: String,
    pub end: String,
    pub location: String,
    pub organizer: String,
    pub description: String,
}

/// An event to create (already checked by the tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub summary: String,
    /// RFC 3339.
    pub start: String,
    pub end: String,
    pub location: Option<String>,
    pub description: Option<String>,
    pub attendees: Vec<String>,
}

/// The person's Google account, as the tools reach it.
#[derive(Clone)]
pub struct Google {
    home: PathBuf,
    config: GoogleConfig,
    base: url::Url,
    http: reqwest::Client,
}

impl Google {
    pub fn new(home: PathBuf, config: GoogleConfig) -> Result<Google, String> {
        let base = super::endpoint(&config.api_base)
            .map_err(|e| format!("connectors.google.apiBase: {e}"))?;
        Ok(Google {
            home,
            config,
            base,
            http: oauth::http_client()?,
        })
    }

    /// `apiBase` + the path segments (each percent-encoded: a model-given id cannot add a
    /// segment or a query) + the query pairs.
    fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<url::Url, String> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| "connectors.google.apiBase cannot take a path".to_string())?
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let tokens = oauth::current(&self.home, &self.config)
            .await?
            .ok_or_else(|| "not signed in to Google: run `gg connect google`".to_string())?;
        let response = request
            .bearer_auth(&tokens.access_token)
            .send()
            .await
            .map_err(|e| format!("Google could not be reached: {}", oauth::without_url(&e)))?;
        let status = response.status();
        let body = oauth::read_body(response).await?;
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            let message = json["error"]["message"]
                .as_str()
                .or_else(|| json["error_description"].as_str())
                .unwrap_or("");
            let hint = if status.as_u16() == 401 {
                " (run `gg connect google` to sign in again)"
            } else {
                ""
            };
            return Err(format!(
                "Google answered HTTP {status}{}{hint}",
                if message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", crate::display::visible_inline(message))
                }
            ));
        }
        if json.is_null() {
            return Err("Google's answer was not JSON".to_string());
        }
        Ok(json)
    }

    async fn get(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Value, String> {
        let url = self.url(segments, query)?;
        self.call(self.http.get(url)).await
    }

    async fn post(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
        body: &Value,
    ) -> Result<Value, String> {
        let url = self.url(segments, query)?;
        self.call(
            self.http
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
        .await
    }

    /// `users.messages.list` with Gmail's search syntax, then each message's metadata.
    pub async fn search(&self, query: &str, max: u32) -> Result<Vec<Found>, String> {
        let max = max.to_string();
        let list = self
            .get(
                &["gmail", "v1", "users", "me", "messages"],
                &[("q", query), ("maxResults", &max)],
            )
            .await?;
        let mut found = Vec::new();
        for id in list["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str())
        {
            let message = self
                .get(
                    &["gmail", "v1", "users", "me", "messages", id],
                    &[
                        ("format", "metadata"),
                        ("metadataHeaders", "From"),
                        ("metadataHeaders", "Subject"),
                        ("metadataHeaders", "Date"),
                    ],
                )
                .await?;
            let payload = &message["payload"];
            found.push(Found {
                id: id.to_string(),
                from: mail::header(payload, "From").unwrap_or_default(),
                subject: mail::header(payload, "Subject").unwrap_or_default(),
                date: mail::header(payload, "Date").unwrap_or_default(),
                snippet: message["snippet"].as_str().unwrap_or_default().to_string(),
            });
        }
        Ok(found)
    }

    /// `users.messages.get` (`format=full`), rendered as text.
    pub async fn read(&self, id: &str) -> Result<mail::Rendered, String> {
        let message = self
            .get(
                &["gmail", "v1", "users", "me", "messages", id],
                &[("format", "full")],
            )
            .await?;
        Ok(mail::render(&message))
    }

    /// `users.drafts.create`: the draft's id. Nothing is sent.
    pub async fn draft(&self, to: &str, subject: &str, body: &str) -> Result<String, String> {
        let raw = mail::draft_raw(to, subject, body);
        let created = self
            .post(
                &["gmail", "v1", "users", "me", "drafts"],
                &[],
                &json!({"message": {"raw": raw}}),
            )
            .await?;
        Ok(created["id"].as_str().unwrap_or_default().to_string())
    }

    /// `events.list` of the primary calendar between two RFC 3339 times, recurring events
    /// expanded, in start order.
    pub async fn events(&self, from: &str, to: &str) -> Result<Vec<Event>, String> {
        let list = self
            .get(
                &["calendar", "v3", "calendars", "primary", "events"],
                &[
                    ("timeMin", from),
                    ("timeMax", to),
                    ("singleEvents", "true"),
                    ("orderBy", "startTime"),
                    ("maxResults", "250"),
                ],
            )
            .await?;
        let when = |v: &Value| {
            v["dateTime"]
                .as_str()
                .or_else(|| v["date"].as_str())
                .unwrap_or_default()
                .to_string()
        };
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Ok(list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| Event {
                id: text(&item["id"]),
                summary: text(&item["summary"]),
                start: when(&item["start"]),
                end: when(&item["end"]),
                location: text(&item["location"]),
                organizer: text(&item["organizer"]["email"]),
                description: text(&item["description"]),
            })
            .collect())
    }

    /// `events.insert` into the primary calendar, guests not notified (`sendUpdates=none`):
    /// the event's id and link.
    pub async fn create_event(&self, event: &NewEvent) -> Result<(String, String), String> {
        let mut body = json!({
            "summary": event.summary,
            "start": {"dateTime": event.start},
            "end": {"dateTime": event.end},
        });
        if let Some(location) = &event.location {
            body["location"] = json!(location);
        }
        if let Some(description) = &event.description {
            body["description"] = json!(description);
        }
        if !event.attendees.is_empty() {
            body["attendees"] = event
                .attendees
                .iter()
                .map(|email| json!({"email": email}))
                .collect();
        }
        let created = self
            .post(
                &["calendar", "v3", "calendars", "primary", "events"],
                &[("sendUpdates", "none")],
                &body,
            )
            .await?;
        Ok((
            created["id"].as_str().unwrap_or_default().to_string(),
            created["htmlLink"].as_str().unwrap_or_default().to_string(),
        ))
    }
}
