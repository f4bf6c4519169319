//! The columns an expression may name — the row id (always) and the attribute columns of a
//! schema ([`Schema`], stored with the index: `format/attribute_columns.rs`) — and the
//! timestamp literals a `timestamp` column is compared with.

pub use crate::format::attribute_columns::{ColumnType, ID_COLUMN, Schema};
use crate::search::error::FilterError;

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds since 1970-01-01T00:00:00Z of an ISO-8601 date (`2010-01-31`) or UTC date-time
/// (`2010-01-31T12:00`, `…:05`, `…:05.250`, a trailing `Z`; a space may replace the `T`).
/// Time zones other than `Z` are refused rather than guessed.
pub fn parse_timestamp(s: &str, column: usize) -> Result<i64, FilterError> {
    let bad = |why: &str| FilterError::Type {
        column,
        detail: format!(
            "timestamp '{s}': {why} (write 'YYYY-MM-DD' or 'YYYY-MM-DDTHH:MM[:SS[.ffffff]]', UTC, \
             optionally ending in Z)"
        ),
    };
    let t = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (t, None),
    };
    let num = |p: &str, lo: i64, hi: i64, what: &str| -> Result<i64, FilterError> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 4 {
            return Err(bad(&format!("{what} {p:?} is not a number")));
        }
        let v: i64 = p.parse().map_err(|_| bad(what))?;
        if v < lo || v > hi {
            return Err(bad(&format!("{what} {v} is outside {lo}..={hi}")));
        }
        Ok(v)
    };
    let parts: Vec<&str> = date.split('-').collect();
    let [y, mo, d] = parts.as_slice() else {
        return Err(bad("the date is not YYYY-MM-DD"));
    };
    let (y, mo) = (num(y, 0, 9999, "year")?, num(mo, 1, 12, "month")?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let d = num(d, 1, month_days[(mo - 1) as usize], "day")?;
    let mut us = days_from_civil(y, mo, d) * 86_400_000_000;
    if let Some(time) = time {
        let (hms, frac) = match time.split_once('.') {
            Some((a, f)) => (a, Some(f)),
            None => (time, None),
        };
        let parts: Vec<&str> = hms.split(':').collect();
        let (h, mi, sec) = match parts.as_slice() {
            [h, m] => (h, m, None),
            [h, m, s] => (h, m, Some(*s)),
            _ => return Err(bad("the time is not HH:MM[:SS]")),
        };
        let h = num(h, 0, 23, "hour")?;
        let mi = num(mi, 0, 59, "minute")?;
        let sec = sec.map_or(Ok(0), |x| num(x, 0, 59, "second"))?;
        us += ((h * 60 + mi) * 60 + sec) * 1_000_000;
        if let Some(f) = frac {
            if f.is_empty() || f.len() > 6 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("the fraction of a second has 1 to 6 digits"));
            }
            let v: i64 = f.parse().map_err(|_| bad("fraction"))?;
            us += v * 10i64.pow(6 - f.len() as u32);
        }
    }
    Ok(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_match_known_epochs() {
        assert_eq!(parse_timestamp("1970-01-01", 1).unwrap(), 0);
        // 2010-01-01T00:00:00Z = 1262304000 s (date -u -d 2010-01-01 +%s).
        assert_eq!(
            parse_timestamp("2010-01-01", 1).unwrap(),
            1_262_304_000_000_000
        );
        assert_eq!(
            parse_timestamp("2000-02-29T12:30:15.5Z", 1).unwrap(),
            (951_782_400 + 12 * 3600 + 30 * 60 + 15) * 1_000_000 + 500_000
        );
        assert_eq!(
            parse_timestamp("1969-12-31 23:59", 1).unwrap(),
            -60 * 1_000_000
        );
        for bad in [
            "2001-02-29",
            "2010-13-01",
            "2010-1",
            "2010-01-01T25:00",
            "2010-01-01T10:00+02:00",
            "",
            "2010-01-01T10:00:00.1234567",
        ] {
            assert!(
                matches!(
                    parse_timestamp(bad, 7),
                    Err(FilterError::Type { column: 7, .. })
                ),
                "{bad}"
            );
        }
    }
}
