//! The date the loop's requests are stamped with.

/// Today's date in UTC, YYYY-MM-DD.
pub fn today() -> String {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string()
}
