//! Dense retrieval's half: turning text into vectors through an OpenAI-compatible
//! `POST {base}/embeddings` endpoint (OpenAI, llama.cpp's server, vLLM, Ollama's /v1 all speak it).

use std::time::Duration;

use serde::Deserialize;

use crate::KbError;

/// Texts per request: small enough for llama.cpp's default batch, large enough to amortise the
/// round trip.
pub const BATCH: usize = 64;

/// Anything that embeds texts. The index records the model's name and dimension, and a query is
/// only compared with vectors of the same model.
pub trait Embedder: Send + Sync {
    fn model(&self) -> &str;
    /// One vector per text, in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KbError>;
}

/// Where the embeddings come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedConfig {
    /// e.g. `http://127.0.0.1:8080/v1`; `/embeddings` is appended.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
}

/// The HTTP embedder. Blocking: the index is built and searched on a blocking thread anyway
/// (tantivy is synchronous), so an async client would only add a runtime hop.
pub struct HttpEmbedder {
    config: EmbedConfig,
    client: reqwest::blocking::Client,
}

fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed it first; either is fine.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

impl HttpEmbedder {
    pub fn new(config: EmbedConfig) -> Result<HttpEmbedder, KbError> {
        install_crypto_provider();
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(120))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| KbError::Embed(format!("building the HTTP client: {e}")))?;
        Ok(HttpEmbedder { config, client })
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl Embedder for HttpEmbedder {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KbError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let url = format!("{}/embeddings", self.config.base_url.trim_end_matches('/'));
            let mut request = self.client.post(&url).json(&serde_json::json!({
                "model": self.config.model,
                "input": batch,
            }));
            if let Some(key) = &self.config.api_key {
                request = request.bearer_auth(key);
            }
            let response = request
                .send()
                .map_err(|e| KbError::Embed(format!("{url}: {e}")))?;
            let status = response.status();
            if !status.is_success() {
                let body = response.text().unwrap_or_default();
                let body: String = body.chars().take(300).collect();
                return Err(KbError::Embed(format!("{url}: HTTP {status}: {body}")));
            }
            let parsed: Response = response
                .json()
                .map_err(|e| KbError::Embed(format!("{url}: unreadable response: {e}")))?;
            if parsed.data.len() != batch.len() {
                return Err(KbError::Embed(format!(
                    "{url}: {} vectors for {} texts",
                    parsed.data.len(),
                    batch.len()
                )));
            }
            let mut items = parsed.data;
            if items.iter().all(|i| i.index.is_some()) {
                items.sort_by_key(|i| i.index);
            }
            let dim = items.first().map_or(0, |i| i.embedding.len());
            if dim == 0 || items.iter().any(|i| i.embedding.len() != dim) {
                return Err(KbError::Embed(format!("{url}: empty or ragged vectors")));
            }
            out.extend(items.into_iter().map(|i| normalize(i.embedding)));
        }
        Ok(out)
    }
}

/// Unit length, so a dot product is the cosine.
pub fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
