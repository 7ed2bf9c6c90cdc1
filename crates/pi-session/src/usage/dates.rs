//! Dates given on the command line (`--since`, `--until`) and the calendar of reports:
//! days, ISO weeks and months in a time zone (the system's, or one named with `--timezone`).

use chrono::{DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveTime};

/// A calendar day.
pub type Date = NaiveDate;

/// The time zone of a report: the system's (`TZ`, else `/etc/localtime`) or one named.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeZone {
    Local,
    Named(chrono_tz::Tz),
}

impl TimeZone {
    /// Coordinated Universal Time.
    pub const UTC: TimeZone = TimeZone::Named(chrono_tz::UTC);

    /// The zone named `name` (IANA, such as `Europe/Berlin`, or `UTC`).
    pub fn get(name: &str) -> Option<TimeZone> {
        name.parse::<chrono_tz::Tz>().ok().map(TimeZone::Named)
    }
}

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
            return NaiveDate::parse_from_str(&day, "%Y-%m-%d")
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
                .succ_opt()
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
        None => Ok(TimeZone::Local),
        Some(n) => TimeZone::get(n).ok_or_else(|| format!("unknown time zone '{n}'")),
    }
}

/// The first instant of the day `d` in `tz` (in milliseconds): its midnight, or where
/// midnight falls in a gap (a clock moved forward over it), the end of the gap.
pub fn day_start_ms(d: Date, tz: &TimeZone) -> i64 {
    fn first<Z: chrono::TimeZone>(z: &Z, d: Date) -> i64 {
        // A gap is at most a day long; the first minute after it is its end.
        for minute in 0..24 * 60 {
            let t = NaiveTime::from_num_seconds_from_midnight_opt(minute * 60, 0)
                .unwrap_or(NaiveTime::MIN);
            match z.from_local_datetime(&d.and_time(t)) {
                LocalResult::Single(x) | LocalResult::Ambiguous(x, _) => {
                    return x.timestamp_millis();
                }
                LocalResult::None => {}
            }
        }
        i64::MIN
    }
    match tz {
        TimeZone::Local => first(&chrono::Local, d),
        TimeZone::Named(z) => first(z, d),
    }
}

/// The calendar day of the instant `ms` in `tz`.
pub fn day_of(ms: i64, tz: &TimeZone) -> Option<Date> {
    let t = DateTime::from_timestamp_millis(ms)?;
    Some(match tz {
        TimeZone::Local => t.with_timezone(&chrono::Local).date_naive(),
        TimeZone::Named(z) => t.with_timezone(z).date_naive(),
    })
}

/// The Monday that starts the ISO week of `d`.
pub fn week_start(d: Date) -> Date {
    let back = u64::from(d.weekday().num_days_from_monday());
    d.checked_sub_days(Days::new(back)).unwrap_or(d)
}

/// The first day of the month of `d`.
pub fn month_start(d: Date) -> Date {
    d.with_day(1).unwrap_or(d)
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

    #[test]
    fn a_day_whose_midnight_is_skipped_starts_after_the_gap() {
        // São Paulo moved its clocks from 00:00 to 01:00 on 2018-11-04 (UTC-3 to UTC-2).
        let tz = TimeZone::get("America/Sao_Paulo").unwrap();
        let d: Date = "2018-11-04".parse().unwrap();
        let start = day_start_ms(d, &tz);
        assert_eq!(
            start,
            DateTime::parse_from_rfc3339("2018-11-04T03:00:00Z")
                .unwrap()
                .timestamp_millis()
        );
        assert_eq!(day_of(start, &tz), Some(d));
        assert_eq!(day_of(start - 1, &tz), d.pred_opt());
        assert!(TimeZone::get("Mars/Base").is_none());
        assert_eq!(
            zone(Some("Mars/Base")).unwrap_err(),
            "unknown time zone 'Mars/Base'"
        );
    }
}
