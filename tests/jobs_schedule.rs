//! Next-run computation: cron in IANA zones across DST changes, `--at` parsing, durations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use gg::jobs::schedule::{
    format_duration, next_cron, parse_at, parse_cron, parse_duration, time_zone,
};
use jiff::Timestamp;
use proptest::prelude::*;

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn next(expr: &str, zone: &str, after: &str) -> Timestamp {
    next_cron(
        &parse_cron(expr).unwrap(),
        &time_zone(zone).unwrap(),
        ts(after),
    )
    .unwrap()
}

fn chain(expr: &str, zone: &str, after: &str, n: usize) -> Vec<String> {
    let cron = parse_cron(expr).unwrap();
    let tz = time_zone(zone).unwrap();
    let mut at = ts(after);
    (0..n)
        .map(|_| {
            at = next_cron(&cron, &tz, at).unwrap();
            at.to_string()
        })
        .collect()
}

#[test]
fn next_run_across_dst_changes() {
    // (expression, zone, after, expected next firing in UTC)
    let cases = [
        // Ordinary days: local wall clock, converted with the offset of that day.
        (
            "0 9 * * *",
            "America/New_York",
            "2026-01-15T12:00:00Z",
            "2026-01-15T14:00:00Z",
        ),
        (
            "0 9 * * *",
            "America/New_York",
            "2026-07-15T12:00:00Z",
            "2026-07-15T13:00:00Z",
        ),
        (
            "0 9 * * *",
            "Europe/Berlin",
            "2026-01-15T12:00:00Z",
            "2026-01-16T08:00:00Z",
        ),
        (
            "@daily",
            "Europe/Berlin",
            "2026-07-15T12:00:00Z",
            "2026-07-15T22:00:00Z",
        ),
        (
            "@midnight",
            "UTC",
            "2026-07-15T12:00:00Z",
            "2026-07-16T00:00:00Z",
        ),
        // Spring forward, New York 2026-03-08 02:00 EST -> 03:00 EDT: 02:30 does not exist; the
        // firing is not dropped but happens at the first instant after the gap.
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-08T05:00:00Z",
            "2026-03-08T07:00:00Z",
        ),
        // ...and the day after is back to 02:30 EDT.
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z",
        ),
        // Spring forward, Berlin 2026-03-29 02:00 CET -> 03:00 CEST.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-03-28T23:00:00Z",
            "2026-03-29T01:00:00Z",
        ),
        // Fall back, New York 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice; the job
        // fires once, at the first (EDT) occurrence, and next on the following day.
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T04:00:00Z",
            "2026-11-01T05:30:00Z",
        ),
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T05:30:00Z",
            "2026-11-02T06:30:00Z",
        ),
        // Fall back, Berlin 2026-10-25 03:00 CEST -> 02:00 CET.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-10-24T23:00:00Z",
            "2026-10-25T00:30:00Z",
        ),
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-10-25T00:30:00Z",
            "2026-10-26T01:30:00Z",
        ),
    ];
    for (expr, zone, after, want) in cases {
        assert_eq!(
            next(expr, zone, after),
            ts(want),
            "{expr} in {zone} after {after}"
        );
    }
}

#[test]
fn hourly_jobs_across_dst_changes() {
    // Fall back: the repeated local hour 01:00 fires on both of its real occurrences, because
    // the hourly pattern matches each; no real hour is skipped.
    assert_eq!(
        chain("0 * * * *", "America/New_York", "2026-11-01T04:30:00Z", 3),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T06:00:00Z",
            "2026-11-01T07:00:00Z"
        ]
    );
    // Spring forward: the local hour 02:00 does not exist; the hour after the gap fires once.
    assert_eq!(
        chain("0 * * * *", "Europe/Berlin", "2026-03-28T23:30:00Z", 3),
        [
            "2026-03-29T00:00:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T02:00:00Z"
        ]
    );
}

#[test]
fn cron_expressions_are_validated() {
    for good in [
        "*/5 * * * *",
        "0 9 * * MON-FRI",
        "@hourly",
        "@DAILY",
        "@weekly",
        "@monthly",
        "@yearly",
        "@annually",
        "@midnight",
        "0 0 1 1 *",
    ] {
        assert!(parse_cron(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "* * * *",
        "0 * * * * *",
        "0 0 * * * * 2026",
        "@reboot",
        "@every 5m",
        "61 * * * *",
        "hello",
    ] {
        let err = parse_cron(bad)
            .err()
            .unwrap_or_else(|| panic!("{bad:?} accepted"));
        assert!(err.starts_with("invalid cron expression"), "{bad:?}: {err}");
    }
}

#[test]
fn at_times_in_the_job_zone() {
    let ny = time_zone("America/New_York").unwrap();
    let cases = [
        ("2026-12-01T09:00:00+01:00", "2026-12-01T08:00:00Z"),
        ("2026-12-01T09:00:00Z", "2026-12-01T09:00:00Z"),
        ("2026-12-01 09:00", "2026-12-01T14:00:00Z"),
        ("2026-12-01T09:00", "2026-12-01T14:00:00Z"),
        ("2026-12-01", "2026-12-01T05:00:00Z"),
        // In the spring-forward gap: the instant after the gap.
        ("2026-03-08 02:30", "2026-03-08T07:30:00Z"),
        // In the fall-back overlap: the first occurrence (EDT).
        ("2026-11-01 01:30", "2026-11-01T05:30:00Z"),
    ];
    for (text, want) in cases {
        assert_eq!(parse_at(text, &ny).unwrap(), ts(want), "{text}");
    }
    for bad in [
        "tomorrow",
        "2026-13-01 09:00",
        "2026-12-01 25:00",
        "2026/12/01",
        "",
    ] {
        assert!(parse_at(bad, &ny).is_err(), "{bad:?} accepted");
    }
    assert!(
        time_zone("Mars/Olympus")
            .unwrap_err()
            .contains("unknown time zone")
    );
}

#[test]
fn durations() {
    let cases = [
        ("90s", 90),
        ("10m", 600),
        ("2h", 7200),
        ("1d", 86_400),
        ("1h30m", 5400),
        ("1d2h3m4s", 93_784),
    ];
    for (text, secs) in cases {
        assert_eq!(parse_duration(text).unwrap().as_secs(), secs, "{text}");
        assert_eq!(
            parse_duration(&format_duration(parse_duration(text).unwrap()))
                .unwrap()
                .as_secs(),
            secs
        );
    }
    for bad in [
        "",
        "0s",
        "10",
        "m",
        "5x",
        "-5m",
        "1.5h",
        "99999999999999999999d",
        "40000d",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The next run is strictly later, matches the pattern on the zone's wall clock, and no
    /// matching minute lies between the start and it (nothing skipped outside DST gaps).
    #[test]
    fn next_run_is_the_first_later_match(
        secs in 1_700_000_000i64..1_900_000_000,
        zone in prop::sample::select(vec!["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"]),
        expr in prop::sample::select(vec!["*/7 * * * *", "0 3 * * *", "30 2 * * 0", "15 */5 * * *", "0 0 29 2 *"]),
    ) {
        let cron = parse_cron(expr).unwrap();
        let tz = time_zone(zone).unwrap();
        let after = Timestamp::from_second(secs).unwrap();
        let got = next_cron(&cron, &tz, after).unwrap();
        prop_assert!(got > after);
        let local = got.to_zoned(tz.clone());
        let matches = cron.is_time_matching(&local).unwrap();
        // A firing moved out of a spring-forward gap lands on a minute that the pattern does not
        // name; it must then sit right after a gap (offset changed in the previous minute).
        if !matches {
            let before = got.checked_sub(jiff::SignedDuration::from_secs(60)).unwrap().to_zoned(tz.clone());
            prop_assert!(before.offset() != local.offset(), "{expr} {zone} {after} -> {got}");
        }
        if got.duration_since(after) < jiff::SignedDuration::from_hours(30) {
            let mut t = after.checked_add(jiff::SignedDuration::from_secs(60 - after.as_second().rem_euclid(60))).unwrap();
            while t < got {
                prop_assert!(!cron.is_time_matching(&t.to_zoned(tz.clone())).unwrap(), "{expr} {zone}: {t} matched before {got}");
                t = t.checked_add(jiff::SignedDuration::from_secs(60)).unwrap();
            }
        }
    }
}

proptest! {
    /// User-typed schedule text never panics a parser: it parses or returns an error.
    #[test]
    fn schedule_parsers_never_panic(text in "\\PC{0,40}", fields in "[0-9*/,A-Z@-]{0,6}( [0-9*/,A-Z-]{0,6}){0,6}") {
        let tz = time_zone("Europe/Berlin").unwrap();
        for input in [&text, &fields] {
            let _ = parse_cron(input);
            let _ = parse_at(input, &tz);
            let _ = parse_duration(input);
            if let Ok(cron) = parse_cron(input) {
                let _ = next_cron(&cron, &tz, Timestamp::from_second(1_800_000_000).unwrap());
            }
        }
    }
}
