//! Time: the clock (overridable with `PI_NOW` for reproducible output) and the
//! millisecond ISO-8601 form JavaScript's `Date.prototype.toISOString` writes. Calendar
//! arithmetic and time zones are chrono's; what is left here are the shims for JavaScript's
//! formats (`toISOString`, the `Date.parse` leniency for `PI_NOW` and timestamps).

use chrono::{DateTime, Datelike, Local, NaiveDate, NaiveDateTime, Utc};

/// Current time in Unix milliseconds. `PI_NOW` (an ISO timestamp or Unix milliseconds) fixes
/// the clock, so scripted and tested output is reproducible.
pub fn now_ms() -> i64 {
    if let Some(v) = std::env::var_os("PI_NOW") {
        let v = v.to_string_lossy();
        if let Some(ms) = v.trim().parse::<i64>().ok().or_else(|| parse_iso(v.trim())) {
            return ms;
        }
    }
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// Measures how long something took; with `PI_NOW` set (a fixed clock) it always reads 0,
/// so output that shows a duration is reproducible too.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(Option<std::time::Instant>);

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch(
            std::env::var_os("PI_NOW")
                .is_none()
                .then(std::time::Instant::now),
        )
    }

    pub fn elapsed(&self) -> std::time::Duration {
        self.0.map(|t| t.elapsed()).unwrap_or_default()
    }
}

/// 400 Gregorian years in milliseconds: the calendar repeats after them.
const ERA_MS: i64 = 146_097 * 86_400_000;

/// `ms` as a chrono date-time, moved by whole 400-year eras when outside chrono's ±262,143
/// years (JavaScript's `Date` reaches ±275,760; callers pass any `i64`), plus the years to
/// add back. Moved times land about 200,000 years from 1970 on the same side, past every
/// time zone transition, so local offsets stay those of the far future or past.
fn in_range(ms: i64) -> (DateTime<Utc>, i64) {
    if let Some(t) = DateTime::from_timestamp_millis(ms) {
        return (t, 0);
    }
    let base = ERA_MS * 500 * ms.signum();
    let moved = base + (ms - base).rem_euclid(ERA_MS);
    let t = DateTime::from_timestamp_millis(moved).unwrap_or_default();
    (t, (ms - base).div_euclid(ERA_MS) * 400)
}

/// `2025-01-02T03:04:05.678Z`, as `Date.prototype.toISOString` writes it (years outside
/// 0–9999 as `+YYYYYY`/`-YYYYYY`).
pub fn format_iso(ms: i64) -> String {
    let (t, years) = in_range(ms);
    let y = i64::from(t.year()) + years;
    let rest = t.format("-%m-%dT%H:%M:%S%.3fZ");
    if (0..=9999).contains(&y) {
        format!("{y:04}{rest}")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!("{sign}{:06}{rest}", y.abs())
    }
}

/// Appends [`format_iso`]`(ms)` to `out`; years 0–9999 without chrono (the tree views
/// write one per entry).
pub fn write_iso(out: &mut Vec<u8>, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Civil date from days since 1970-01-01 (proleptic Gregorian, eras of 400 years).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    if !(0..=9999).contains(&y) {
        out.extend_from_slice(format_iso(ms).as_bytes());
        return;
    }
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: i64| {
        for k in (at..at + width).rev() {
            b[k] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, in_day / 3_600_000);
    put(14, 2, in_day / 60_000 % 60);
    put(17, 2, in_day / 1000 % 60);
    put(20, 3, in_day % 1000);
    out.extend_from_slice(&b);
}

/// `YYYY-MM-DD` in the local time zone (chrono's `Local`: `TZ` as a zone name, a file or a
/// POSIX rule, else `/etc/localtime`), for the system prompt's date line.
pub fn local_date(ms: i64) -> String {
    let (t, years) = in_range(ms);
    let d = t.with_timezone(&Local).date_naive();
    let y = i64::from(d.year()) + years;
    format!("{y:04}-{:02}-{:02}", d.month(), d.day())
}

/// The file-name form of a timestamp: `:` and `.` replaced by `-`.
pub fn file_stamp(ms: i64) -> String {
    format_iso(ms).replace([':', '.'], "-")
}

fn digits(s: &[u8], n: usize) -> Option<i64> {
    if s.len() < n || !s[..n].iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s[..n].iter().fold(0, |a, &c| a * 10 + i64::from(c - b'0')))
}

/// Parses the ISO-8601 forms `Date.parse` accepts for session timestamps:
/// `YYYY-MM-DD`, optionally `THH:MM`, `:SS`, `.fraction`, and `Z` or `±HH:MM`.
/// A date-time without a zone is taken as UTC.
pub fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let y = digits(b, 4)?;
    if b.get(4) != Some(&b'-') {
        return None;
    }
    let mo = digits(&b[5..], 2)?;
    if b.get(7) != Some(&b'-') {
        return None;
    }
    let d = digits(&b[8..], 2)?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    // Like V8, a day past the end of the month runs into the next (`02-31` is March 3).
    let first = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, u32::try_from(mo).ok()?, 1)?;
    let mut ms = first
        .and_time(chrono::NaiveTime::MIN)
        .and_utc()
        .timestamp_millis()
        + (d - 1) * 86_400_000;
    let mut i = 10;
    if i == b.len() {
        return Some(ms);
    }
    if !matches!(b[i], b'T' | b't' | b' ') {
        return None;
    }
    i += 1;
    let h = digits(&b[i..], 2)?;
    if b.get(i + 2) != Some(&b':') {
        return None;
    }
    let mi = digits(&b[i + 3..], 2)?;
    i += 5;
    let mut sec = 0;
    if b.get(i) == Some(&b':') {
        sec = digits(&b[i + 1..], 2)?;
        i += 3;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return None;
            }
            let frac = &b[start..i.min(start + 3)];
            let mut f = frac.iter().fold(0, |a, &c| a * 10 + i64::from(c - b'0'));
            for _ in frac.len()..3 {
                f *= 10;
            }
            ms += f;
        }
    }
    if h > 24 || mi > 59 || sec > 59 {
        return None;
    }
    ms += ((h * 60 + mi) * 60 + sec) * 1000;
    match b.get(i) {
        None => Some(ms),
        Some(b'Z' | b'z') if i + 1 == b.len() => Some(ms),
        Some(&sign @ (b'+' | b'-')) => {
            let oh = digits(&b[i + 1..], 2)?;
            let rest = &b[i + 3..];
            let om = match rest {
                [] => 0,
                [b':', m @ ..] if m.len() == 2 => digits(m, 2)?,
                m if m.len() == 2 => digits(m, 2)?,
                _ => return None,
            };
            let off = (oh * 60 + om) * 60_000;
            Some(if sign == b'+' { ms - off } else { ms + off })
        }
        _ => None,
    }
}

/// Parses an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, RFC 9110's preferred form) to
/// Unix milliseconds. The weekday is not checked against the date.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let (weekday, rest) = s.trim_start().split_once(char::is_whitespace)?;
    weekday.strip_suffix(',')?;
    let t = NaiveDateTime::parse_from_str(rest.trim(), "%d %b %Y %H:%M:%S GMT").ok()?;
    Some(t.and_utc().timestamp_millis())
}

/// A short human age such as `5m ago` or `3d ago`.
pub fn age(now_ms: i64, then_ms: i64) -> String {
    let secs = (now_ms - then_ms).max(0) / 1000;
    match secs {
        0..=59 => "just now".to_owned(),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        86_400..=2_591_999 => format!("{}d ago", secs / 86_400),
        _ => format_iso(then_ms)[..10].to_owned(),
    }
}

/// The span a `--since`/`--until` value names, as (first ms, last ms): a calendar day
/// `YYYY-MM-DD` (or `YYYYMMDD`) in the local time zone, whole, or an ISO-8601 timestamp
/// (see [`parse_iso`]), that instant.
pub fn parse_bound(s: &str) -> Option<(i64, i64)> {
    use chrono::TimeZone;
    let s = s.trim();
    let day = match s.len() {
        10 => NaiveDate::parse_from_str(s, "%Y-%m-%d").ok(),
        8 if s.bytes().all(|c| c.is_ascii_digit()) => NaiveDate::parse_from_str(s, "%Y%m%d").ok(),
        _ => None,
    };
    let Some(day) = day else {
        let ms = parse_iso(s).filter(|_| s.len() > 10)?;
        return Some((ms, ms));
    };
    let start = |d: NaiveDate| {
        let t = d.and_time(chrono::NaiveTime::MIN);
        Local
            .from_local_datetime(&t)
            .earliest()
            .map_or_else(|| t.and_utc().timestamp_millis(), |t| t.timestamp_millis())
    };
    let next = day.succ_opt()?;
    Some((start(day), start(next) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_iso_is_format_iso() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut cases: Vec<i64> = vec![
            0,
            -1,
            1,
            86_399_999,
            -86_400_000,
            951_782_400_000,     // 2000-02-29
            -62_167_219_200_000, // 0000-01-01
            -62_167_219_200_001,
            253_402_300_799_999, // 9999-12-31T23:59:59.999
            253_402_300_800_000,
            i64::MIN,
            i64::MAX,
        ];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push((x % 600_000_000_000_000) as i64 - 300_000_000_000_000);
        }
        for ms in cases {
            let mut b = Vec::new();
            super::write_iso(&mut b, ms);
            assert_eq!(String::from_utf8_lossy(&b), super::format_iso(ms), "{ms}");
        }
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT"),
            parse_iso("2015-10-21T07:28:00.000Z")
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:01 GMT"), Some(1000));
        // Extra spaces, and a leap second (the next minute).
        assert_eq!(
            parse_http_date("  Thu,  01 Jan 1970   00:00:01 GMT "),
            Some(1000)
        );
        assert_eq!(parse_http_date("Wed, 31 Dec 1969 23:59:60 GMT"), Some(0));
        for bad in [
            "",
            "21 Oct 2015 07:28:00 GMT",
            "Wed, 21 Foo 2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 25:28:00 GMT",
            "Wed, 21 Oct 2015 07:28:00 PST",
            "Wed, 21 Oct 2015 07:28:00 GMT extra",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn iso_round_trip() {
        assert_eq!(format_iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_iso(1_765_241_609_825), "2025-12-09T00:53:29.825Z");
        for ms in [0, 1, 951_782_400_000, 1_765_241_609_825, -86_400_001] {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms));
        }
        assert_eq!(file_stamp(1_765_241_609_825), "2025-12-09T00-53-29-825Z");
    }

    /// Years outside 0–9999 as JavaScript writes them, up to `Date`'s limits (±8.64e15 ms,
    /// past chrono's range).
    #[test]
    fn iso_extended_years() {
        for (ms, iso) in [
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
            (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
            (-62_167_219_200_000, "0000-01-01T00:00:00.000Z"),
            (-62_167_219_200_001, "-000001-12-31T23:59:59.999Z"),
            (8_640_000_000_000_000, "+275760-09-13T00:00:00.000Z"),
            (-8_640_000_000_000_000, "-271821-04-20T00:00:00.000Z"),
        ] {
            assert_eq!(format_iso(ms), iso, "{ms}");
        }
        // Noon UTC, so the local date is within a day of it in any zone.
        assert!(local_date(8_640_000_043_200_000).starts_with("275760-09-1"));
        assert!(local_date(-8_639_999_956_800_000).starts_with("-271821-04-2"));
        // Any i64 formats without panicking.
        for ms in [i64::MIN, i64::MAX] {
            assert!(format_iso(ms).ends_with('Z'));
        }
    }

    #[test]
    fn parses_js_forms() {
        assert_eq!(parse_iso("2025-01-01T00:00:00Z"), Some(1_735_689_600_000));
        assert_eq!(parse_iso("2025-01-01"), Some(1_735_689_600_000));
        assert_eq!(
            parse_iso("2025-01-01T01:00:00+01:00"),
            Some(1_735_689_600_000)
        );
        assert_eq!(parse_iso("2025-01-01T00:00:00.5Z"), Some(1_735_689_600_500));
        assert_eq!(parse_iso("nope"), None);
        assert_eq!(parse_iso("2025-13-01"), None);
        // V8 runs a day past the month's end into the next month.
        assert_eq!(parse_iso("2025-02-31"), parse_iso("2025-03-03"));
        assert_eq!(parse_iso("2025-02-28T24:00"), parse_iso("2025-03-01"));
    }
}
