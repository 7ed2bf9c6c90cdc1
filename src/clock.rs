//! Time: the clock (overridable with `PI_NOW` for reproducible output) and the
//! millisecond ISO-8601 form JavaScript's `Date.prototype.toISOString` writes.

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

/// Days since 1970-01-01 for a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date (year, month, day) of a day number since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `2025-01-02T03:04:05.678Z`, as `Date.prototype.toISOString` writes it.
pub fn format_iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, frac) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if (0..=9999).contains(&y) {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac:03}Z")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!(
            "{sign}{:06}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac:03}Z",
            y.abs()
        )
    }
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
    let mut ms = days_from_civil(y, mo, d) * 86_400_000;
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

/// A short human age such as `5m ago` or `3d ago`.
/// Parses an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, RFC 9110's preferred form) to
/// Unix milliseconds.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let mut it = s.split_whitespace();
    let _weekday = it.next()?.strip_suffix(',')?;
    let day: i64 = it.next()?.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = it.next()?;
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let year: i64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':');
    let mut part = |max: i64| -> Option<i64> {
        let v: i64 = hms.next()?.parse().ok()?;
        (0..=max).contains(&v).then_some(v)
    };
    let (h, m, sec) = (part(23)?, part(59)?, part(60)?);
    if it.next()? != "GMT" || it.next().is_some() || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + h) * 60 + m) * 60_000 + sec * 1000)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT"),
            parse_iso("2015-10-21T07:28:00.000Z")
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:01 GMT"), Some(1000));
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
    }
}
