//! When a job fires: cron expressions (5 fields or `@daily`-style descriptors) evaluated in an
//! IANA time zone, one-shot times (`--at`, `--in`), and the durations of `--in` and `--timeout`.

use std::str::FromStr;
use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// Parses a 5-field cron expression or a descriptor (`@yearly`, `@annually`, `@monthly`,
/// `@weekly`, `@daily`, `@midnight`, `@hourly`).
pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    let trimmed = expr.trim();
    // croner knows every descriptor except `@midnight`; `@reboot` has no meaning for a daemon
    // that is not the init system, so it is refused rather than guessed.
    let pattern = if trimmed.eq_ignore_ascii_case("@midnight") {
        "@daily"
    } else {
        trimmed
    };
    if pattern.starts_with('@') {
        let known = [
            "@yearly",
            "@annually",
            "@monthly",
            "@weekly",
            "@daily",
            "@hourly",
        ];
        if !known.iter().any(|k| k.eq_ignore_ascii_case(pattern)) {
            return Err(format!(
                "invalid cron expression {expr:?}: unknown descriptor"
            ));
        }
    } else if pattern.split_whitespace().count() != 5 {
        return Err(format!(
            "invalid cron expression {expr:?}: expected 5 fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily"
        ));
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(pattern)
        .map_err(|e| format!("invalid cron expression {expr:?}: {e}"))
}

/// Looks up an IANA time zone name.
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    TimeZone::get(name).map_err(|_| {
        // The database is the system's (gg does not bundle one on Linux or macOS: 207 KB of the
        // installed size); say so when it is the database, not the name, that is missing.
        if name != "UTC" && jiff::tz::db().is_definitively_empty() {
            format!(
                "unknown time zone {name:?}: this machine has no time zone database \
                 (/usr/share/zoneinfo; install the tzdata package)"
            )
        } else {
            format!("unknown time zone {name:?} (use an IANA name such as Europe/Berlin)")
        }
    })
}

/// The zone a job gets without `--timezone`: the system's IANA zone, else UTC.
pub fn default_time_zone_name() -> String {
    TimeZone::try_system()
        .ok()
        .and_then(|tz| tz.iana_name().map(str::to_string))
        .unwrap_or_else(|| "UTC".to_string())
}

/// The first firing of `cron` strictly after `after`, on the wall clock of `tz`.
///
/// Daylight saving time follows croner (the Open Cron Pattern Specification): a wall-clock time
/// that does not exist (spring-forward gap) fires at the first instant after the gap; a time that
/// occurs twice (fall-back overlap) fires once, at its first occurrence.
pub fn next_cron(cron: &Cron, tz: &TimeZone, after: Timestamp) -> Result<Timestamp, String> {
    let zoned = after.to_zoned(tz.clone());
    cron.find_next_occurrence(&zoned, false)
        .map(|z: Zoned| z.timestamp())
        .map_err(|e| {
            format!(
                "cannot compute the next run of {:?}: {e}",
                cron.pattern.to_string()
            )
        })
}

/// Parses `--at`: RFC 3339 (`2026-12-01T09:00:00+01:00`), or a local time in the job's zone as
/// `YYYY-MM-DDTHH:MM`, `YYYY-MM-DD HH:MM` or `YYYY-MM-DD` (midnight).
///
/// A local time in a spring-forward gap resolves to the instant after the gap, one in a
/// fall-back overlap to its first occurrence (jiff's "compatible" disambiguation, as in
/// RFC 5545).
pub fn parse_at(text: &str, tz: &TimeZone) -> Result<Timestamp, String> {
    let text = text.trim();
    if let Ok(ts) = Timestamp::from_str(text) {
        return Ok(ts);
    }
    let bad = || {
        format!(
            "invalid --at time {text:?}: use RFC 3339, \"YYYY-MM-DD HH:MM\", \"YYYY-MM-DDTHH:MM\" or \"YYYY-MM-DD\""
        )
    };
    let civil = match text.len() {
        10 => jiff::civil::Date::strptime("%Y-%m-%d", text)
            .map(|d| d.to_datetime(jiff::civil::Time::midnight())),
        16 if text.as_bytes().get(10) == Some(&b'T') => DateTime::strptime("%Y-%m-%dT%H:%M", text),
        16 => DateTime::strptime("%Y-%m-%d %H:%M", text),
        _ => return Err(bad()),
    }
    .map_err(|_| bad())?;
    tz.to_ambiguous_zoned(civil)
        .compatible()
        .map(|z| z.timestamp())
        .map_err(|e| format!("invalid --at time {text:?}: {e}"))
}

/// Parses a duration such as `90s`, `10m`, `2h`, `1d` or `1h30m`. Zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let grammar = tools::duration::Grammar {
        trim: true,
        days: true,
        ..Default::default()
    };
    let total = match tools::duration::parse(text, grammar) {
        Ok(total) => total,
        Err(tools::duration::ParseError::Syntax) => {
            return Err(format!(
                "invalid duration {text:?}: use a number with a unit, e.g. 90s, 10m, 2h, 1d or 1h30m"
            ));
        }
        Err(tools::duration::ParseError::TooLarge) => {
            return Err(format!("invalid duration {text:?}: too large"));
        }
        Err(tools::duration::ParseError::Zero) => Duration::ZERO,
    };
    // Beyond ~100 years every timestamp computation would overflow; no job needs that.
    if total.is_zero() || total.as_secs() > 100 * 365 * 86_400 {
        return Err(format!(
            "invalid duration {text:?}: must be greater than 0 and at most 100 years"
        ));
    }
    Ok(total)
}

/// Formats a duration the way [`parse_duration`] reads it (`1h30m`, `10m`, `45s`).
pub use tools::duration::compact as format_duration;
