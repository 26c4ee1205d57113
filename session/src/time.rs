//! Timestamps in the exact shapes the Go implementation wrote.
//!
//! Hand-written instead of a date crate: the store only needs UTC formatting (RFC 3339 with Go's
//! `RFC3339Nano` trailing-zero trimming, and the fixed-width fork-file stamp) and parsing of the
//! same shape for sorting, which is a few dozen lines.

use std::time::{SystemTime, UNIX_EPOCH};

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// `(unix seconds, nanoseconds)` of `time`; times before 1970 clamp to the epoch because no
/// session can have been written then.
fn unix_parts(time: SystemTime) -> (i64, u32) {
    match time.duration_since(UNIX_EPOCH) {
        Ok(elapsed) => (
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
            elapsed.subsec_nanos(),
        ),
        Err(_) => (0, 0),
    }
}

/// Current time as Go's `time.RFC3339Nano` in UTC (`2026-01-02T03:04:05.123Z`).
pub fn now_rfc3339() -> String {
    format_rfc3339(SystemTime::now())
}

/// Current time in unix milliseconds (the `timestamp` field of a message).
pub fn now_unix_millis() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// Formats `time` like Go's `time.RFC3339Nano` in UTC: trailing zeros of the fraction are dropped
/// and a whole second has no fraction at all.
pub fn format_rfc3339(time: SystemTime) -> String {
    let (secs, nanos) = unix_parts(time);
    let (year, month, day, hour, minute, second) = civil(secs);
    let mut out = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    if nanos > 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Fixed-width UTC stamp used in fork file names (Go layout `20060102T150405.000000000Z`).
pub fn fork_stamp(time: SystemTime) -> String {
    let (secs, nanos) = unix_parts(time);
    let (year, month, day, hour, minute, second) = civil(secs);
    format!("{year:04}{month:02}{day:02}T{hour:02}{minute:02}{second:02}.{nanos:09}Z")
}

/// Nanoseconds since the unix epoch of `time`, saturating.
pub fn unix_nanos(time: SystemTime) -> i128 {
    let (secs, nanos) = unix_parts(time);
    i128::from(secs) * NANOS_PER_SECOND + i128::from(nanos)
}

/// Parses an RFC 3339 timestamp (`Z` or a `±hh:mm` offset, optional 1–9 digit fraction) into
/// nanoseconds since the unix epoch. `None` for anything else.
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = bytes.get(range)?;
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        digits
            .iter()
            .try_fold(0i64, |acc, digit| Some(acc * 10 + i64::from(digit - b'0')))
    };
    let separators_ok = bytes[4] == b'-'
        && bytes[7] == b'-'
        && matches!(bytes[10], b'T' | b't' | b' ')
        && bytes[13] == b':'
        && bytes[16] == b':';
    if !separators_ok {
        return None;
    }
    let year = number(0..4)?;
    let month = number(5..7)?;
    let day = number(8..10)?;
    let hour = number(11..13)?;
    let minute = number(14..16)?;
    let second = number(17..19)?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut position = 19;
    let mut nanos: i64 = 0;
    if bytes.get(position) == Some(&b'.') {
        let start = position + 1;
        let mut end = start;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let digits = end - start;
        if digits == 0 || digits > 9 {
            return None;
        }
        nanos = number(start..end)? * 10i64.pow(u32::try_from(9 - digits).ok()?);
        position = end;
    }
    let offset_seconds = match bytes.get(position)? {
        b'Z' | b'z' if position + 1 == bytes.len() => 0,
        sign @ (b'+' | b'-') if position + 6 == bytes.len() && bytes[position + 3] == b':' => {
            let hours = number(position + 1..position + 3)?;
            let minutes = number(position + 4..position + 6)?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let magnitude = hours * 3600 + minutes * 60;
            if *sign == b'+' { magnitude } else { -magnitude }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos))
}

/// Splits unix seconds into the UTC civil date and time of day.
fn civil(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    (
        year,
        month,
        day,
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
    )
}

// Howard Hinnant's days <-> civil algorithms (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_like_go_rfc3339nano() {
        let cases = [
            (
                0u64,
                0u32,
                "1970-01-01T00:00:00Z",
                "19700101T000000.000000000Z",
            ),
            (
                1_700_000_000,
                120_000_000,
                "2023-11-14T22:13:20.12Z",
                "20231114T221320.120000000Z",
            ),
            (
                951_782_400,
                1,
                "2000-02-29T00:00:00.000000001Z",
                "20000229T000000.000000001Z",
            ),
            (
                4_102_444_799,
                999_999_999,
                "2099-12-31T23:59:59.999999999Z",
                "20991231T235959.999999999Z",
            ),
        ];
        for (secs, nanos, rfc, stamp) in cases {
            let time = UNIX_EPOCH + Duration::new(secs, nanos);
            assert_eq!(format_rfc3339(time), rfc);
            assert_eq!(fork_stamp(time), stamp);
            assert_eq!(
                parse_rfc3339(rfc),
                Some(i128::from(secs) * NANOS_PER_SECOND + i128::from(nanos))
            );
        }
    }

    #[test]
    fn parses_offsets_and_rejects_garbage() {
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(
            parse_rfc3339("1970-01-01T00:00:00.5-00:30"),
            Some(1_800_500_000_000)
        );
        for bad in [
            "",
            "yesterday",
            "1970-01-01T00:00:00",
            "1970-13-01T00:00:00Z",
            "1970-01-01T00:00:00.Z",
            "1970-01-01T00:00:00.1234567891Z",
            "1970-01-01T00:00:00Zjunk",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
