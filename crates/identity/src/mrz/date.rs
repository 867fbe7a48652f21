//! Dates: the calendar's, and the zone's six characters (YYMMDD) with the
//! century each kind of date is read in.

use std::fmt;

use super::layout::text;

/// A calendar date.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: i32,
    pub month: u8,
    pub day: u8,
}

impl Date {
    /// `None` when the day does not exist.
    pub fn new(year: i32, month: u8, day: u8) -> Option<Date> {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days)
            .contains(&day)
            .then_some(Date { year, month, day })
    }

    /// The date `days` after 1970-01-01 (negative: before), as the
    /// proleptic Gregorian calendar counts (H. Hinnant's `civil_from_days`).
    pub fn from_unix_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Date {
            year: year as i32,
            month,
            day,
        }
    }

    /// Today in UTC, by the system clock.
    pub fn today_utc() -> Date {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Date::from_unix_days(secs.div_euclid(86_400))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A date as printed (YYMMDD) and the full date it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MrzDate {
    /// The six characters, `<` where the issuer does not know a part.
    pub raw: String,
    /// `None` when a part is unknown or the day does not exist.
    pub date: Option<Date>,
}

impl MrzDate {
    /// A birth date is in the past: the latest century that does not put it
    /// after `today` (a two-digit year of someone born in 1925 or 2025 reads
    /// the same, and nobody is born in the future).
    pub(super) fn birth(raw: &[u8], today: Date) -> MrzDate {
        let date = yymmdd(raw).and_then(|(yy, mm, dd)| {
            Date::new(2000 + yy, mm, dd)
                .filter(|d| *d <= today)
                .or_else(|| Date::new(1900 + yy, mm, dd))
        });
        MrzDate {
            raw: text(raw),
            date,
        }
    }

    /// An expiry date is in the 2000s, unless that would be more than 50
    /// years ahead (no document is valid that long; an old specimen is).
    pub(super) fn expiry(raw: &[u8], today: Date) -> MrzDate {
        let date = yymmdd(raw).and_then(|(yy, mm, dd)| {
            if 2000 + yy > today.year + 50 {
                Date::new(1900 + yy, mm, dd)
            } else {
                Date::new(2000 + yy, mm, dd)
            }
        });
        MrzDate {
            raw: text(raw),
            date,
        }
    }
}

fn yymmdd(raw: &[u8]) -> Option<(i32, u8, u8)> {
    if raw.len() != 6 || !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let two = |i: usize| (raw[i] - b'0') * 10 + (raw[i + 1] - b'0');
    Some((i32::from(two(0)), two(2), two(4)))
}
