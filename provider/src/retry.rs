//! Retry timing: server `Retry-After` first, else exponential backoff with full jitter.

use std::time::{Duration, SystemTime};

/// Longest `Retry-After` gg honours; a longer request is shortened to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Backoff cap of the jittered delay.
const BACKOFF_CEILING: Duration = Duration::from_secs(8);

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 2, i.e. at most three attempts).
    pub max_retries: u32,
    /// Jitter window of the first retry; doubles for each further retry (default 250 ms).
    pub base_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(250),
        }
    }
}

impl RetryPolicy {
    /// The delay before 0-based retry `retry`: the server's `Retry-After` when valid, else a
    /// uniform random delay in `[0, base·2^retry]` capped at 8 s.
    pub fn delay(&self, retry: u32, retry_after: Option<&str>, now: SystemTime) -> Duration {
        if let Some(delay) = retry_after.and_then(|value| parse_retry_after(value, now)) {
            return delay;
        }
        let window = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(BACKOFF_CEILING);
        let nanos = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// Parses `Retry-After` (delta-seconds or HTTP-date), capped at [`MAX_RETRY_AFTER`]. A date in
/// the past or an unparsable value yields `None` (the caller falls back to jitter).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // All digits but too long for u64 is still "very long": cap it.
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds).min(MAX_RETRY_AFTER));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    let wait = date.duration_since(now).ok()?;
    if wait.is_zero() {
        return None;
    }
    Some(wait.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_table() {
        // 2015-10-21T07:28:00Z
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let cases: &[(&str, Option<Duration>)] = &[
            ("3", Some(Duration::from_secs(3))),
            (" 0 ", Some(Duration::ZERO)),
            ("61", Some(MAX_RETRY_AFTER)),
            ("99999999999999999999999", Some(MAX_RETRY_AFTER)),
            (
                "Wed, 21 Oct 2015 07:28:10 GMT",
                Some(Duration::from_secs(10)),
            ),
            ("Wed, 21 Oct 2015 09:28:00 GMT", Some(MAX_RETRY_AFTER)),
            ("Wed, 21 Oct 2015 07:27:00 GMT", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
            ("-1", None),
            ("1.5", None),
            ("soon", None),
            ("", None),
        ];
        for (value, want) in cases {
            assert_eq!(parse_retry_after(value, now), *want, "{value:?}");
        }
    }

    #[test]
    fn jitter_stays_in_window_and_ceiling() {
        let policy = RetryPolicy::default();
        let now = SystemTime::now();
        for _ in 0..200 {
            assert!(policy.delay(0, None, now) <= Duration::from_millis(250));
            assert!(policy.delay(1, Some("bogus"), now) <= Duration::from_millis(500));
            assert!(policy.delay(10, None, now) <= BACKOFF_CEILING);
        }
        assert_eq!(policy.delay(0, Some("2"), now), Duration::from_secs(2));
    }
}
