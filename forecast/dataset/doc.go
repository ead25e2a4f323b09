// Package dataset loads hourly carbon-intensity CSV files into Tables and
// checks them on the way in: every anomaly is reported as an Issue with its
// file and line, and the few that can be repaired are repaired only by the
// rules below. RULES.md in this directory is the same text for the README.
//
// # Layouts
//
// The layout is detected from the header (a UTF-8 byte-order mark is ignored;
// gzip-compressed input is detected by its magic bytes):
//
//   - Layout A, carbongate's own: datetime_utc,ci_direct,ci_lifecycle,
//     then any number of <source>_mwh columns (hourly generation per source
//     in MWh; the Table's Sources key drops the _mwh suffix). The zone is not
//     in the file: it is the file's base name without .csv or .csv.gz (or the
//     folder name, or Loader.Zone). A zone taken from a name must be a valid
//     zone id starting with a letter, so 2021.csv is not taken for a zone.
//   - Layout B, the Electricity Maps hourly CSV export, whose header is
//     exactly "Datetime (UTC),Country,Zone name,Zone id,Carbon intensity
//     gCO₂eq/kWh (direct),Carbon intensity gCO₂eq/kWh (Life cycle),Carbon-free
//     energy percentage (CFE%),Renewable energy percentage (RE%),Data source,
//     Data estimated,Data estimation method". The zone is the Zone id column;
//     a file must hold exactly one zone. Only the two intensities are kept.
//
// Times are RFC 3339 (2020-01-01T00:00:00Z, or with an offset) or
// "2006-01-02 15:04:05" without an offset, which is read as UTC because both
// headers declare UTC. Each row is the hour starting at its time.
//
// # Rules
//
// Errors make the load fail (a *forecast.Error with code EINVALID whose
// message lists the first issues with file:line); warnings are repairs that
// were made and are returned alongside the Table.
//
//   - Malformed CSV (reading stops there), a header of neither layout, a row
//     with the wrong number of fields, an unparseable time, a time not on the
//     hour, a Zone id that changes within a file, or no data row at all:
//     error. Such a row is skipped, so its hour is also reported as missing.
//   - A time with a non-UTC offset: converted to UTC, warning.
//   - Rows out of order: sorted, warning per row that came too early.
//   - Duplicate hours: identical rows (same values after parsing) are dropped
//     with a warning; rows that disagree are an error naming both lines.
//   - A value that is empty, not a number (including NaN and Inf) or
//     negative: warning, and the hour becomes missing for that column.
//   - Missing values and missing hours (no row for an hour between two rows)
//     are gaps. A gap of at most MaxGap (DefaultMaxGap = 6) consecutive hours
//     with a value on both sides is filled by linear interpolation between
//     those two values, with one warning per gap and column. A longer gap,
//     or one at the start or end of the series, is an error.
//   - A column other than the layout's columns (layout A): ignored, warning.
//     A source column that is not in every period of a zone folder is
//     dropped, warning.
//
// # Directories
//
// LoadDir and LoadFS read a directory that holds <zone>.csv or <zone>.csv.gz
// files, or <zone>/ folders whose .csv and .csv.gz files are read in name
// order as consecutive periods of one series (a later period is added as a
// second file). The periods are merged before the rules apply, so an overlap
// between periods follows the duplicate rule and a hole between them the gap
// rule; a period that starts before the previous one is an error. Other
// files, and names starting with "." or "_", are ignored. A zone given both
// as a file and a folder is an error.
package dataset
