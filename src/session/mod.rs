//! Append-only JSONL session store.
