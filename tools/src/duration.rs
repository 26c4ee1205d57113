//! Durations as users type and read them: one parser (with the few grammar options the
//! command lines differ in) and one formatter per established output style. Messages that name
//! a duration use these, so `gg job`, ggd and the bash tool cannot drift apart silently.
//!
//! The provider crate keeps its own `format_duration` (the [`unit`] style, except that zero
//! reads `0s`): it depends on nothing of gg, and a separate crate for a dozen lines would cost
//! more than it saves.

use std::time::Duration;

/// What a parser accepts besides `<number><unit>` pairs (`s`, `m`, `h`), e.g. `1h30m`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grammar {
    /// Surrounding whitespace is ignored.
    pub trim: bool,
    /// A bare number is seconds (and may be zero).
    pub bare_seconds: bool,
    /// The `ms` unit.
    pub millis: bool,
    /// The `d` unit.
    pub days: bool,
    /// A sum beyond `Duration::MAX` saturates instead of failing with [`ParseError::TooLarge`].
    pub saturate: bool,
}

/// Why a text is not a duration; callers turn it into their own message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not `<number><unit>…` in the grammar.
    Syntax,
    /// The sum does not fit a `Duration`.
    TooLarge,
    /// Well-formed, but zero (a bare `0` under `bare_seconds` is not refused).
    Zero,
}

/// Parses `90s`, `10m`, `1h30m` (and `500ms`, `1d`, `90` as the grammar allows).
pub fn parse(text: &str, grammar: Grammar) -> Result<Duration, ParseError> {
    let text = if grammar.trim { text.trim() } else { text };
    if grammar.bare_seconds
        && let Ok(seconds) = text.parse::<u64>()
    {
        return Ok(Duration::from_secs(seconds));
    }
    if text.is_empty() {
        return Err(ParseError::Syntax);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(ParseError::Syntax);
        }
        let value: u64 = rest[..digits].parse().map_err(|_| ParseError::Syntax)?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (per_unit, millis) = match &rest[..unit_len] {
            "ms" if grammar.millis => (1, true),
            "s" => (1, false),
            "m" => (60, false),
            "h" => (3600, false),
            "d" if grammar.days => (86_400, false),
            _ => return Err(ParseError::Syntax),
        };
        rest = &rest[unit_len..];
        let part = match value.checked_mul(per_unit) {
            Some(n) if millis => Some(Duration::from_millis(n)),
            Some(n) => Some(Duration::from_secs(n)),
            None => None,
        };
        total = match (part.and_then(|p| total.checked_add(p)), grammar.saturate) {
            (Some(sum), _) => sum,
            (None, true) => Duration::MAX,
            (None, false) => return Err(ParseError::TooLarge),
        };
    }
    if total.is_zero() {
        return Err(ParseError::Zero);
    }
    Ok(total)
}

/// `1d2h`, `1h30m`, `45s`: every non-zero unit from days down, as [`parse`] with `days` reads
/// it back; under a second, milliseconds (`0ms`, `300ms`).
pub fn compact(duration: Duration) -> String {
    let mut secs = duration.as_secs();
    if secs == 0 {
        return format!("{}ms", duration.as_millis());
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

/// `30m0s`, `1h0m5s`, `45s`: a clock-like reading (hours, then minutes and seconds always once a
/// larger unit is shown); under a minute with a fraction, milliseconds (`1500ms`).
pub fn clock(duration: Duration) -> String {
    let total = duration.as_secs();
    let millis = duration.subsec_millis();
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60);
    let mut text = String::new();
    if h > 0 {
        text.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        text.push_str(&format!("{m}m"));
    }
    if millis > 0 && total < 60 {
        text.push_str(&format!("{}ms", total * 1000 + u64::from(millis)));
        return text;
    }
    text.push_str(&format!("{s}s"));
    text
}

/// `300ms`, `30s`, `5m`: one unit, the largest that is exact; zero is `0ms`.
pub fn unit(duration: Duration) -> String {
    let secs = duration.as_secs();
    if duration.subsec_millis() != 0 || secs == 0 {
        format!("{}ms", duration.as_millis())
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_style_keeps_its_established_strings() {
        let d = Duration::from_secs;
        assert_eq!(compact(d(5400)), "1h30m");
        assert_eq!(compact(d(90_000)), "1d1h");
        assert_eq!(compact(Duration::from_millis(300)), "300ms");
        assert_eq!(clock(d(1800)), "30m0s");
        assert_eq!(clock(d(3605)), "1h0m5s");
        assert_eq!(clock(Duration::from_millis(1500)), "1500ms");
        assert_eq!(unit(d(300)), "5m");
        assert_eq!(unit(d(30)), "30s");
        assert_eq!(unit(Duration::ZERO), "0ms");
        assert_eq!(unit(Duration::from_millis(2500)), "2500ms");
    }

    #[test]
    fn the_grammar_options_decide_what_is_accepted() {
        let plain = Grammar::default();
        assert_eq!(parse("1h30m", plain), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("90", plain), Err(ParseError::Syntax));
        assert_eq!(parse("1d", plain), Err(ParseError::Syntax));
        assert_eq!(parse("500ms", plain), Err(ParseError::Syntax));
        assert_eq!(parse(" 1m ", plain), Err(ParseError::Syntax));
        assert_eq!(parse("0s", plain), Err(ParseError::Zero));
        let all = Grammar {
            trim: true,
            bare_seconds: true,
            millis: true,
            days: true,
            saturate: false,
        };
        assert_eq!(parse(" 1m ", all), Ok(Duration::from_secs(60)));
        assert_eq!(parse("0", all), Ok(Duration::ZERO));
        assert_eq!(parse("1d500ms", all), Ok(Duration::from_millis(86_400_500)));
        let huge = "18446744073709551615h";
        assert_eq!(parse(huge, all), Err(ParseError::TooLarge));
        let saturating = Grammar {
            saturate: true,
            ..all
        };
        assert_eq!(parse(huge, saturating), Ok(Duration::MAX));
    }
}
