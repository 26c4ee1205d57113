//! OpenAI-compatible streaming chat-completions provider.
