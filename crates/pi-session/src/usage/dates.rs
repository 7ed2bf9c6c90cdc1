//! Dates given on the command line (`--since`, `--until`) and the calendar of reports:
//! days, ISO weeks and months in a time zone (the system's, or one named with `--timezone`).

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveTime, TimeZone as _};

/// A calendar day.
pub type Date = NaiveDate;

/// The time zone of a report: the system's (`TZ`, else `/etc/localtime`), UTC, or one named,
/// read from the system's time zone database.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeZone {
    Local,
    Utc,
    Named(Arc<tz::TimeZone>),
}

impl TimeZone {
    /// Coordinated Universal Time.
    pub const UTC: TimeZone = TimeZone::Utc;

    /// The zone named `name` (IANA, such as `Europe/Berlin`, or `UTC`), from the database in
    /// `$TZDIR` or `/usr/share/zoneinfo`. Only names: not paths, not POSIX rule strings.
    pub fn get(name: &str) -> Option<TimeZone> {
        if name == "UTC" {
            return Some(TimeZone::Utc);
        }
        let plain = |part: &str| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-+".contains(&b))
        };
        if !name.split('/').all(plain) {
            return None;
        }
        let dirs = std::env::var_os("TZDIR")
            .map(PathBuf::from)
            .into_iter()
            .chain(
                [
                    "/usr/share/zoneinfo",
                    "/usr/share/lib/zoneinfo",
                    "/etc/zoneinfo",
                ]
                .map(PathBuf::from),
            );
        dirs.filter_map(|d| std::fs::read(d.join(name)).ok())
            .find_map(|bytes| tz::TimeZone::from_tz_data(&bytes).ok())
            .map(|z| TimeZone::Named(Arc::new(z)))
    }
}

/// The offset from UTC of `z` at the Unix time `secs`, in seconds (0 when out of its range).
fn offset_at(z: &tz::TimeZone, secs: i64) -> i64 {
    z.find_local_time_type(secs)
        .map_or(0, |t| i64::from(t.ut_offset()))
}

/// The instants (Unix seconds) whose local time in `z` is `local` (the local time read as
/// if it were UTC): none in a gap, two in an overlap, earliest first.
fn instants_of_local(z: &tz::TimeZone, local: i64) -> Vec<i64> {
    let mut out: Vec<i64> = [-86_400, 0, 86_400]
        .iter()
        .map(|d| offset_at(z, local + d))
        .map(|off| local - off)
        .filter(|&utc| utc + offset_at(z, utc) == local)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
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
    // A gap is at most a day long; the first minute after it is its end.
    for minute in 0..24 * 60 {
        let t =
            NaiveTime::from_num_seconds_from_midnight_opt(minute * 60, 0).unwrap_or(NaiveTime::MIN);
        let local = d.and_time(t);
        let first = match tz {
            TimeZone::Local => match chrono::Local.from_local_datetime(&local) {
                LocalResult::Single(x) | LocalResult::Ambiguous(x, _) => Some(x.timestamp()),
                LocalResult::None => None,
            },
            TimeZone::Utc => Some(local.and_utc().timestamp()),
            TimeZone::Named(z) => instants_of_local(z, local.and_utc().timestamp())
                .first()
                .copied(),
        };
        if let Some(secs) = first {
            return secs.saturating_mul(1000);
        }
    }
    i64::MIN
}

/// The calendar day of the instant `ms` in `tz`.
pub fn day_of(ms: i64, tz: &TimeZone) -> Option<Date> {
    let t = DateTime::from_timestamp_millis(ms)?;
    Some(match tz {
        TimeZone::Local => t.with_timezone(&chrono::Local).date_naive(),
        TimeZone::Utc => t.date_naive(),
        TimeZone::Named(z) => {
            let off = offset_at(z, ms.div_euclid(1000));
            DateTime::from_timestamp_millis(ms.checked_add(off.checked_mul(1000)?)?)?.date_naive()
        }
    })
}

/// The local time of the instant `ms` in `tz`, as `YYYY-MM-DD HH:MM`.
pub fn local_minute(ms: i64, tz: &TimeZone) -> Option<String> {
    let t = DateTime::from_timestamp_millis(ms)?;
    let naive = match tz {
        TimeZone::Local => t.with_timezone(&chrono::Local).naive_local(),
        TimeZone::Utc => t.naive_utc(),
        TimeZone::Named(z) => {
            let off = offset_at(z, ms.div_euclid(1000));
            DateTime::from_timestamp_millis(ms.checked_add(off.checked_mul(1000)?)?)?.naive_utc()
        }
    };
    Some(naive.format("%Y-%m-%d %H:%M").to_string())
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
        // The day before lasts 24 hours, the day of the gap 23.
        let before = day_start_ms("2018-11-03".parse().unwrap(), &tz);
        let after = day_start_ms("2018-11-05".parse().unwrap(), &tz);
        assert_eq!(start - before, 24 * 3_600_000);
        assert_eq!(after - start, 23 * 3_600_000);
        // An overlap: New York's clocks went back from 02:00 to 01:00 on 2026-11-01; the
        // day starts at its (single) midnight and is 25 hours long.
        let ny = TimeZone::get("America/New_York").unwrap();
        let nov1 = day_start_ms("2026-11-01".parse().unwrap(), &ny);
        let nov2 = day_start_ms("2026-11-02".parse().unwrap(), &ny);
        assert_eq!(nov2 - nov1, 25 * 3_600_000);
        assert_eq!(
            nov1,
            DateTime::parse_from_rfc3339("2026-11-01T04:00:00Z")
                .unwrap()
                .timestamp_millis()
        );
        assert_eq!(TimeZone::get("UTC"), Some(TimeZone::UTC));
        for bad in [
            "Mars/Base",
            "../etc/passwd",
            "/etc/localtime",
            "EST5EDT,M3.2.0,M11.1.0",
            "",
        ] {
            assert!(TimeZone::get(bad).is_none(), "{bad}");
        }
        assert_eq!(
            zone(Some("Mars/Base")).unwrap_err(),
            "unknown time zone 'Mars/Base'"
        );
    }
}
