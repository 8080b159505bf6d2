// A strict CSV reader for the trace and profile files Zeus consumes, and
// the field quoting its writers share.
//
// Every error names the file, the 1-based line and column, and what was
// expected: "traces/summary_power_a40.csv:12:6: column 'time_per_epoch':
// expected a number, got 'abc'". Nothing is guessed: a row with the wrong
// number of fields is an error, not padded.

#ifndef ZEUS_UTIL_CSV_H_
#define ZEUS_UTIL_CSV_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zeus/status.h"

namespace zeus {

class CsvTable {
 public:
  // Parses `text`; `source` names it in errors (usually the file path).
  // Fields may be double-quoted ("a,b" and "a""b"); a quoted field cannot span
  // lines. A leading UTF-8 byte-order mark is skipped (columns are then
  // counted after it). A byte that cannot be in UTF-8 text (NUL, another
  // control byte, malformed UTF-8; see FindNonTextByte) is refused at its
  // line:col as binary data. Blank lines are skipped; a trailing '\r' is dropped. Every
  // non-blank line must end with a newline: a last line without one is
  // refused as truncated, since a file cut off mid-write can end inside a
  // number ("...,5" for "5915.57") that would otherwise parse as valid.
  static StatusOr<CsvTable> Parse(std::string_view text, std::string source);
  // Reads and parses the file at `path`. kNotFound / kIoError when unreadable.
  static StatusOr<CsvTable> ReadFile(const std::string& path);

  const std::string& source() const { return source_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t num_rows() const { return rows_.size(); }

  // Index of column `name`, or kInvalidArgument naming the file and the
  // columns it does have.
  StatusOr<size_t> ColumnIndex(std::string_view name) const;

  // Raw field. REQUIRES: row < num_rows(), column < header().size().
  const std::string& Field(size_t row, size_t column) const { return rows_[row].fields[column]; }

  // Typed fields; errors carry "file:line:col: column 'name': ...".
  StatusOr<double> Double(size_t row, size_t column) const;
  StatusOr<int64_t> Int(size_t row, size_t column) const;
  // An error located at (row, column) with `detail`, for checks done by callers.
  Status ErrorAt(size_t row, size_t column, std::string_view detail) const;

 private:
  struct Row {
    int line = 0;  // 1-based line number in the source.
    std::vector<std::string> fields;
  };
  std::string source_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
};

// `field` as one CSV field (RFC 4180): as is, or quoted with its quotes
// doubled when it holds a comma, a quote or a line break.
std::string CsvQuote(std::string_view field);

}  // namespace zeus

#endif  // ZEUS_UTIL_CSV_H_
