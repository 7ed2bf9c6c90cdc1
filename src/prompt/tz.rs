//! The local calendar date, for the system prompt's date line (upstream uses the local date).
//!
//! The standard library has no time zones, so this reads them the way the C library does:
//! `TZ` unset → `/etc/localtime`; `TZ=""` → UTC; `TZ=Area/City` or `TZ=:path` → a TZif file
//! (under `$TZDIR` or `/usr/share/zoneinfo`); otherwise `TZ` is a POSIX rule such as
//! `CET-1CEST,M3.5.0,M10.5.0/3`. Anything unreadable falls back to UTC.

use std::path::{Path, PathBuf};

use crate::clock::{civil_from_days, days_from_civil};

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DD` in the local time zone for a Unix time in milliseconds.
pub fn local_date(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let local = secs + offset_at(secs);
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Seconds east of UTC at the Unix time `t`.
pub fn offset_at(t: i64) -> i64 {
    zone().map_or(0, |z| z.offset_at(t))
}

fn zone() -> Option<Zone> {
    match std::env::var("TZ") {
        Err(_) => read_tzif(Path::new("/etc/localtime")),
        Ok(v) if v.is_empty() => None,
        Ok(v) => {
            let name = v.strip_prefix(':').unwrap_or(&v);
            let file = if name.starts_with('/') {
                Some(PathBuf::from(name))
            } else if name.split('/').any(|s| s == "..") {
                None
            } else {
                let dir = std::env::var_os("TZDIR")
                    .map_or_else(|| PathBuf::from("/usr/share/zoneinfo"), PathBuf::from);
                Some(dir.join(name))
            };
            file.and_then(|f| read_tzif(&f))
                .or_else(|| Rule::parse(name).map(Zone::Rule))
        }
    }
}

enum Zone {
    Rule(Rule),
    Table {
        transitions: Vec<(i64, usize)>,
        offsets: Vec<i64>,
        footer: Option<Rule>,
    },
}

impl Zone {
    fn offset_at(&self, t: i64) -> i64 {
        match self {
            Zone::Rule(r) => r.offset_at(t),
            Zone::Table {
                transitions,
                offsets,
                footer,
            } => {
                let after_last = transitions.last().is_none_or(|&(at, _)| t >= at);
                if after_last && let Some(r) = footer {
                    return r.offset_at(t);
                }
                let idx = match transitions.partition_point(|&(at, _)| at <= t) {
                    0 => 0,
                    n => transitions[n - 1].1,
                };
                offsets.get(idx).copied().unwrap_or(0)
            }
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.i..self.i.checked_add(n)?)?;
        self.i += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<usize> {
        let s = self.take(4)?;
        usize::try_from(u32::from_be_bytes([s[0], s[1], s[2], s[3]])).ok()
    }
    fn i32(&mut self) -> Option<i64> {
        let s = self.take(4)?;
        Some(i64::from(i32::from_be_bytes([s[0], s[1], s[2], s[3]])))
    }
    fn i64(&mut self) -> Option<i64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(i64::from_be_bytes(a))
    }
}

fn read_tzif(path: &Path) -> Option<Zone> {
    let b = std::fs::read(path).ok()?;
    parse_tzif(&b)
}

fn parse_tzif(b: &[u8]) -> Option<Zone> {
    let mut r = Reader { b, i: 0 };
    let header = |r: &mut Reader| -> Option<(u8, [usize; 6])> {
        if r.take(4)? != b"TZif" {
            return None;
        }
        let version = r.take(1)?[0];
        r.take(15)?;
        let mut c = [0; 6];
        for x in &mut c {
            *x = r.u32()?;
        }
        Some((version, c))
    };
    let (version, c) = header(&mut r)?;
    let [isut, isstd, leap, time, typ, chars] = c;
    let v2 = version >= b'2';
    if v2 {
        // Skip the 32-bit block.
        let skip = time * 5 + typ * 6 + chars + leap * 8 + isstd + isut;
        r.take(skip)?;
        let (_, c2) = header(&mut r)?;
        return read_block(&mut r, c2, 8);
    }
    read_block(&mut r, [isut, isstd, leap, time, typ, chars], 4)
}

fn read_block(r: &mut Reader, c: [usize; 6], width: usize) -> Option<Zone> {
    let [isut, isstd, leap, time, typ, chars] = c;
    let mut times = Vec::with_capacity(time.min(4096));
    for _ in 0..time {
        times.push(if width == 8 { r.i64()? } else { r.i32()? });
    }
    let idx = r.take(time)?.to_vec();
    let mut offsets = Vec::with_capacity(typ.min(256));
    for _ in 0..typ {
        offsets.push(r.i32()?);
        r.take(2)?;
    }
    r.take(chars + leap * (width + 4) + isstd + isut)?;
    let footer = if width == 8 {
        let rest = r.b.get(r.i..).unwrap_or_default();
        let text = String::from_utf8_lossy(rest);
        let line = text.trim_matches('\n');
        if line.is_empty() {
            None
        } else {
            Rule::parse(line)
        }
    } else {
        None
    };
    let transitions = times
        .into_iter()
        .zip(idx)
        .map(|(t, i)| (t, usize::from(i)))
        .collect();
    Some(Zone::Table {
        transitions,
        offsets,
        footer,
    })
}

/// A POSIX `TZ` rule.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    /// Seconds east of UTC in standard time.
    std: i64,
    /// Daylight saving time: offset east of UTC and the two transitions.
    dst: Option<(i64, When, When)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Day {
    /// `Jn`: 1–365, February 29 never counted.
    Julian1(i64),
    /// `n`: 0–365, February 29 counted.
    Julian0(i64),
    /// `Mm.w.d`.
    Month(i64, i64, i64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct When {
    day: Day,
    /// Seconds after local midnight.
    time: i64,
}

impl When {
    /// Seconds since the epoch of the local wall-clock moment in year `y`.
    fn local(&self, y: i64) -> i64 {
        let days = match self.day {
            Day::Julian1(n) => {
                let n = n.clamp(1, 365);
                days_from_civil(y, 1, 1) + n - 1 + i64::from(is_leap(y) && n >= 60)
            }
            Day::Julian0(n) => days_from_civil(y, 1, 1) + n.clamp(0, 365),
            Day::Month(m, w, d) => {
                let m = m.clamp(1, 12);
                let first = days_from_civil(y, m, 1);
                let dow = (first + 4).rem_euclid(7);
                let mut day = 1 + (d - dow).rem_euclid(7) + (w.clamp(1, 5) - 1) * 7;
                while day > days_in_month(y, m) {
                    day -= 7;
                }
                first + day - 1
            }
        };
        days * 86_400 + self.time
    }
}

impl Rule {
    fn offset_at(&self, t: i64) -> i64 {
        let Some((dst, start, end)) = self.dst else {
            return self.std;
        };
        let (y, _, _) = civil_from_days((t + self.std).div_euclid(86_400));
        let s = start.local(y) - self.std;
        let e = end.local(y) - dst;
        let in_dst = if s < e {
            s <= t && t < e
        } else {
            !(e <= t && t < s)
        };
        if in_dst { dst } else { self.std }
    }

    fn parse(s: &str) -> Option<Rule> {
        let mut p = Parser {
            c: s.chars().collect(),
            i: 0,
        };
        p.name()?;
        let std = -p.offset()?;
        if p.done() {
            return Some(Rule { std, dst: None });
        }
        p.name()?;
        let dst = if p.done() || p.peek() == Some(',') {
            std + 3600
        } else {
            -p.offset()?
        };
        let (start, end) = if p.done() {
            (
                When {
                    day: Day::Month(3, 2, 0),
                    time: 7200,
                },
                When {
                    day: Day::Month(11, 1, 0),
                    time: 7200,
                },
            )
        } else {
            p.eat(',')?;
            let a = p.when()?;
            p.eat(',')?;
            let b = p.when()?;
            (a, b)
        };
        p.done().then_some(Rule {
            std,
            dst: Some((dst, start, end)),
        })
    }
}

struct Parser {
    c: Vec<char>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }
    fn done(&self) -> bool {
        self.i >= self.c.len()
    }
    fn eat(&mut self, ch: char) -> Option<()> {
        (self.peek() == Some(ch)).then(|| self.i += 1)
    }
    fn name(&mut self) -> Option<()> {
        if self.eat('<').is_some() {
            while self.peek()? != '>' {
                self.i += 1;
            }
            self.i += 1;
            return Some(());
        }
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.i += 1;
        }
        (self.i - start >= 3).then_some(())
    }
    fn number(&mut self) -> Option<i64> {
        let start = self.i;
        let mut n: i64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.checked_mul(10)?.checked_add(i64::from(d))?;
            self.i += 1;
        }
        (self.i > start).then_some(n)
    }
    /// `[+-]hh[:mm[:ss]]` in seconds.
    fn offset(&mut self) -> Option<i64> {
        let sign = if self.eat('-').is_some() {
            -1
        } else {
            self.eat('+');
            1
        };
        let mut secs = self.number()?.min(167) * 3600;
        if self.eat(':').is_some() {
            secs += self.number()?.min(59) * 60;
            if self.eat(':').is_some() {
                secs += self.number()?.min(59);
            }
        }
        Some(sign * secs)
    }
    fn when(&mut self) -> Option<When> {
        let day = if self.eat('J').is_some() {
            Day::Julian1(self.number()?)
        } else if self.eat('M').is_some() {
            let m = self.number()?;
            self.eat('.')?;
            let w = self.number()?;
            self.eat('.')?;
            let d = self.number()?;
            Day::Month(m, w, d.min(6))
        } else {
            Day::Julian0(self.number()?)
        };
        let time = if self.eat('/').is_some() {
            self.offset()?
        } else {
            7200
        };
        Some(When { day, time })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn at(rule: &str, iso: &str) -> i64 {
        let ms = crate::clock::parse_iso(iso).unwrap();
        Rule::parse(rule).unwrap().offset_at(ms / 1000)
    }

    #[test]
    fn posix_rules() {
        assert_eq!(at("UTC0", "2026-01-02T03:04:05Z"), 0);
        assert_eq!(at("JST-9", "2026-01-02T20:00:00Z"), 9 * 3600);
        assert_eq!(at("<+0530>-5:30", "2026-01-02T20:00:00Z"), 19_800);
        let ny = "EST5EDT,M3.2.0,M11.1.0";
        assert_eq!(at(ny, "2026-01-15T12:00:00Z"), -5 * 3600);
        assert_eq!(at(ny, "2026-07-15T12:00:00Z"), -4 * 3600);
        // 2026-03-08 02:00 EST = 07:00 UTC.
        assert_eq!(at(ny, "2026-03-08T06:59:59Z"), -5 * 3600);
        assert_eq!(at(ny, "2026-03-08T07:00:00Z"), -4 * 3600);
        let syd = "AEST-10AEDT,M10.1.0,M4.1.0/3";
        assert_eq!(at(syd, "2026-01-15T00:00:00Z"), 11 * 3600);
        assert_eq!(at(syd, "2026-06-15T00:00:00Z"), 10 * 3600);
        assert_eq!(at("EST5EDT", "2026-07-15T12:00:00Z"), -4 * 3600);
        assert!(Rule::parse("").is_none());
        assert!(Rule::parse("X").is_none());
        assert!(Rule::parse("ABC+99999999999999999999").is_none());
    }

    #[test]
    fn tzif_does_not_panic_on_garbage() {
        assert!(parse_tzif(b"").is_none());
        assert!(parse_tzif(b"TZif2\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\xff\xff\xff\xff").is_none());
        let _ = parse_tzif(b"TZif\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01\0\0\0\x01\0\0\0\0");
    }

    #[test]
    fn reads_system_zones_when_present() {
        if let Some(Zone::Table { .. }) = read_tzif(Path::new("/usr/share/zoneinfo/Asia/Tokyo")) {
            let z = read_tzif(Path::new("/usr/share/zoneinfo/Asia/Tokyo")).unwrap();
            assert_eq!(z.offset_at(1_767_300_000), 9 * 3600);
        }
    }
}
