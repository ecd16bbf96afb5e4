//! Dates without a date crate: the proleptic Gregorian calendar date of a day
//! counted from the Unix epoch (Howard Hinnant's `civil_from_days`), for the few
//! places rwb writes a date (a chat template's `strftime_now`, the day `rwb check`
//! ran).

/// (year, month 1-12, day 1-31) of day `days` since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn days_are_the_dates_python_gives() {
        // datetime.date.fromordinal(date(1970, 1, 1).toordinal() + n)
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_793), (2026, 12, 6));
    }
}
