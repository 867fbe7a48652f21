//! The `time` field: form A's `YYYY-MM-DD HH:MM:SS` and ISO 8601 / RFC 3339
//! date-times, parsed by hand (the `time` crate is used for its types only)
//! into a [`Timestamp`] that keeps the client's offset.

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

use super::MIN_YEAR;

/// The time of a transaction, keeping the UTC offset the client wrote (form A and
/// zone-less times: UTC).
///
/// Equality is on the instant *and* the offset, because the offset changes the
/// wall-clock hour the night-time signal looks at.
#[derive(Debug, Clone, Copy)]
pub struct Timestamp(OffsetDateTime);

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 && self.0.offset() == other.0.offset()
    }
}

impl Timestamp {
    /// Parses form A (`YYYY-MM-DD HH:MM:SS`) or an ISO 8601 / RFC 3339 date-time (see the
    /// module docs). `None` when it is not one.
    pub fn parse(text: &str) -> Option<Timestamp> {
        parse_datetime(text.trim().as_bytes())
    }

    /// The underlying date-time, at the client's offset.
    pub fn datetime(&self) -> OffsetDateTime {
        self.0
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> i64 {
        self.0.unix_timestamp()
    }

    /// Microseconds since the Unix epoch (saturating: parsed years are 4 digits).
    pub fn unix_micros(&self) -> i64 {
        i64::try_from(self.0.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX)
    }

    /// The hour of the day as the client wrote it (0..=23): local wall-clock for
    /// form A, UTC for `Z`, the given offset's wall-clock otherwise.
    pub fn hour(&self) -> u8 {
        self.0.hour()
    }

    /// RFC 3339 with the client's offset (`Z` for UTC), fraction only when non-zero.
    pub fn to_rfc3339(&self) -> String {
        let d = self.0;
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            d.year(),
            u8::from(d.month()),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        );
        let nanos = d.nanosecond();
        if nanos != 0 {
            let frac = format!("{nanos:09}");
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        let off = d.offset();
        if off.is_utc() {
            s.push('Z');
        } else {
            let total = off.whole_seconds();
            let sign = if total < 0 { '-' } else { '+' };
            let abs = total.unsigned_abs();
            s.push_str(&format!("{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60));
        }
        s
    }
}

/// Reads `n` ASCII digits at `*pos` as a number, advancing `pos`.
fn digits(b: &[u8], pos: &mut usize, n: usize) -> Option<u32> {
    let end = pos.checked_add(n)?;
    let part = b.get(*pos..end)?;
    let mut v: u32 = 0;
    for &c in part {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    *pos = end;
    Some(v)
}

fn expect(b: &[u8], pos: &mut usize, c: u8) -> Option<()> {
    if b.get(*pos) == Some(&c) {
        *pos += 1;
        Some(())
    } else {
        None
    }
}

/// Date, `T`/`t`/space, `HH:MM[:SS[.fraction]]`, then `Z`/`z`/offset/nothing.
/// A date alone is refused: a midnight guessed from it would look like a night purchase.
fn parse_datetime(b: &[u8]) -> Option<Timestamp> {
    let mut p = 0;
    let year = digits(b, &mut p, 4)?;
    if year < MIN_YEAR {
        return None;
    }
    expect(b, &mut p, b'-')?;
    let month = digits(b, &mut p, 2)?;
    expect(b, &mut p, b'-')?;
    let day = digits(b, &mut p, 2)?;
    match b.get(p) {
        Some(b'T' | b't' | b' ') => p += 1,
        _ => return None,
    }
    let hour = digits(b, &mut p, 2)?;
    expect(b, &mut p, b':')?;
    let minute = digits(b, &mut p, 2)?;
    let mut second = 0;
    let mut nanos: u32 = 0;
    if b.get(p) == Some(&b':') {
        p += 1;
        second = digits(b, &mut p, 2)?;
        if matches!(b.get(p), Some(b'.' | b',')) {
            p += 1;
            let start = p;
            let mut scale = 100_000_000u32;
            while let Some(c) = b.get(p).filter(|c| c.is_ascii_digit()) {
                nanos += u32::from(c - b'0') * scale;
                scale /= 10;
                p += 1;
            }
            // 1 to 9 digits: finer than a nanosecond is not a real clock.
            if p == start || p - start > 9 {
                return None;
            }
        }
    }
    let offset_seconds: i32 = match b.get(p) {
        None => 0,
        Some(b'Z' | b'z') => {
            p += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            p += 1;
            let oh = digits(b, &mut p, 2)?;
            let om = if p == b.len() {
                0
            } else {
                if b.get(p) == Some(&b':') {
                    p += 1;
                }
                digits(b, &mut p, 2)?
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let total = i32::try_from(oh * 3600 + om * 60).ok()?;
            if sign == b'-' {
                -total
            } else {
                total
            }
        }
        Some(_) => return None,
    };
    if p != b.len() {
        return None;
    }
    let month = Month::try_from(u8::try_from(month).ok()?).ok()?;
    let date =
        Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?).ok()?;
    let time = Time::from_hms_nano(
        u8::try_from(hour).ok()?,
        u8::try_from(minute).ok()?,
        u8::try_from(second).ok()?,
        nanos,
    )
    .ok()?;
    let offset = UtcOffset::from_whole_seconds(offset_seconds).ok()?;
    Some(Timestamp(
        PrimitiveDateTime::new(date, time).assume_offset(offset),
    ))
}
