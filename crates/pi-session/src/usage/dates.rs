//! Dates given on the command line (`--since`, `--until`) and the calendar of reports:
//! days, ISO weeks and months in a time zone (the system's, or one named with `--timezone`).

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A `--since`/`--until` value: a calendar day, an instant, or a time before now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateArg {
    /// `YYYY-MM-DD` or `YYYYMMDD`: the whole day in the report's time zone.
    Day(Date),
    /// An ISO 8601 timestamp with a time (`2026-01-02T03:04:05Z`; no zone means UTC).
    Instant(i64),
    /// `30m`, `12h`, `7d`, `2w`: that long before now (milliseconds).
    Ago(i64),
}

impl DateArg {
    /// Parses the forms above; the message says what is expected.
    pub fn parse(s: &str) -> Result<DateArg, String> {
        let s = s.trim();
        let expected = || {
            format!(
                "invalid date '{s}': expected YYYY-MM-DD, YYYYMMDD, an ISO 8601 timestamp \
                 or an age such as 12h, 7d, 2w"
            )
        };
        if let Some(ago) = parse_age(s) {
            return Ok(DateArg::Ago(ago));
        }
        let b = s.as_bytes();
        let day = if b.len() == 8 && b.iter().all(u8::is_ascii_digit) {
            Some(format!("{}-{}-{}", &s[..4], &s[4..6], &s[6..]))
        } else if b.len() == 10 {
            Some(s.to_owned())
        } else {
            None
        };
        if let Some(day) = day {
            return day
                .parse::<Date>()
                .map(DateArg::Day)
                .map_err(|_| expected());
        }
        pi_base::clock::parse_iso(s)
            .map(DateArg::Instant)
            .ok_or_else(expected)
    }

    /// The first millisecond this bound lets in, as a lower bound.
    pub fn start_ms(self, tz: &TimeZone, now_ms: i64) -> i64 {
        match self {
            DateArg::Day(d) => day_start_ms(d, tz),
            DateArg::Instant(ms) => ms,
            DateArg::Ago(ago) => now_ms.saturating_sub(ago),
        }
    }

    /// The last millisecond this bound lets in, as an upper bound (a day counts whole).
    pub fn end_ms(self, tz: &TimeZone, now_ms: i64) -> i64 {
        match self {
            DateArg::Day(d) => d
                .tomorrow()
                .map_or(i64::MAX, |n| day_start_ms(n, tz).saturating_sub(1)),
            DateArg::Instant(ms) => ms,
            DateArg::Ago(ago) => now_ms.saturating_sub(ago),
        }
    }

    /// The calendar day of this bound in `tz` (for reports that filter whole days).
    pub fn day(self, tz: &TimeZone, now_ms: i64) -> Option<Date> {
        match self {
            DateArg::Day(d) => Some(d),
            DateArg::Instant(ms) => day_of(ms, tz),
            DateArg::Ago(ago) => day_of(now_ms.saturating_sub(ago), tz),
        }
    }
}

/// `30m`, `12h`, `7d`, `2w` in milliseconds.
pub fn parse_age(s: &str) -> Option<i64> {
    let unit = s.chars().last()?;
    let n: i64 = s[..s.len() - unit.len_utf8()].parse().ok()?;
    let ms = match unit {
        's' => 1000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 7 * 86_400_000,
        _ => return None,
    };
    (n >= 0).then(|| n.saturating_mul(ms))
}

/// The time zone named `name` (IANA, such as `Europe/Berlin`, or `UTC`), or the system's
/// (`TZ`, else `/etc/localtime`) when `None`.
pub fn zone(name: Option<&str>) -> Result<TimeZone, String> {
    match name {
        None => Ok(TimeZone::try_system().unwrap_or(TimeZone::UTC)),
        Some(n) => TimeZone::get(n).map_err(|_| format!("unknown time zone '{n}'")),
    }
}

pub(crate) fn day_start_ms(d: Date, tz: &TimeZone) -> i64 {
    d.to_zoned(tz.clone())
        .map_or(i64::MIN, |z| z.timestamp().as_millisecond())
}

/// The calendar day of the instant `ms` in `tz`.
pub(crate) fn day_of(ms: i64, tz: &TimeZone) -> Option<Date> {
    let t = Timestamp::from_millisecond(ms).ok()?;
    Some(t.to_zoned(tz.clone()).date())
}

/// The Monday that starts the ISO week of `d`.
pub(crate) fn week_start(d: Date) -> Date {
    let back = i64::from(d.weekday().to_monday_zero_offset());
    d.checked_sub(back.days()).unwrap_or(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_days_instants_and_ages() {
        let d = DateArg::parse("2026-01-02").unwrap();
        assert_eq!(d, DateArg::parse("20260102").unwrap());
        assert_eq!(DateArg::parse("7d").unwrap(), DateArg::Ago(7 * 86_400_000));
        assert!(matches!(
            DateArg::parse("2026-01-02T03:04:05Z").unwrap(),
            DateArg::Instant(_)
        ));
        assert!(DateArg::parse("yesterday").is_err());
        assert!(DateArg::parse("2026-13-01").is_err());
        let tz = TimeZone::UTC;
        assert_eq!(d.end_ms(&tz, 0) - d.start_ms(&tz, 0), 86_400_000 - 1);
    }

    #[test]
    fn weeks_start_on_monday() {
        let d: Date = "2026-01-04".parse().unwrap(); // a Sunday
        assert_eq!(week_start(d).to_string(), "2025-12-29");
    }
}
