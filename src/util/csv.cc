#include "zeus/util/csv.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "zeus/util/file.h"
#include "zeus/util/strings.h"

namespace zeus {
namespace {

// Splits one line into fields. Returns the 1-based column of a syntax error
// through `error_column` (0 when none).
std::vector<std::string> SplitLine(std::string_view line, size_t* error_column) {
  std::vector<std::string> fields;
  std::string field;
  bool in_quotes = false;
  bool was_quoted = false;
  *error_column = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        field += c;
      }
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '"' && field.empty() && !was_quoted) {
      in_quotes = true;
      was_quoted = true;
    } else if (was_quoted) {
      *error_column = i + 1;
      return fields;
    } else {
      field += c;
    }
  }
  if (in_quotes) *error_column = line.size();
  fields.push_back(std::move(field));
  return fields;
}

}  // namespace

StatusOr<CsvTable> CsvTable::Parse(std::string_view text, std::string source) {
  CsvTable table;
  table.source_ = std::move(source);
  // Spreadsheet programs (Excel's "CSV UTF-8", Python's utf-8-sig) start the
  // file with a byte-order mark, which would otherwise glue onto the first
  // column's name.
  constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
  if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) text.remove_prefix(kUtf8Bom.size());
  if (std::optional<size_t> at = FindNonTextByte(text)) {
    // Line and column of the byte, so a stray byte in a text file is found.
    const size_t line_start = text.rfind('\n', *at == 0 ? 0 : *at - 1);
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + *at, '\n'));
    const size_t column =
        line_start == std::string_view::npos || *at == 0 ? *at + 1 : *at - line_start;
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>(text[*at]));
    return InvalidArgumentError(table.source_ + ":" + std::to_string(line) + ":" +
                                std::to_string(column) + ": byte " + byte +
                                " is not UTF-8 text; expected a CSV text file, this looks binary");
  }
  int line_number = 0;
  bool have_header = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) {
      if (end == text.size()) break;
      continue;
    }
    if (end == text.size()) {
      // Writers end every line with a newline; its absence means the file was
      // cut off (or is still being written), possibly in the middle of a number.
      return InvalidArgumentError(table.source_ + ":" + std::to_string(line_number) + ":" +
                                  std::to_string(line.size() + 1) +
                                  ": the last line does not end with a newline; the file looks "
                                  "truncated (last line: '" +
                                  std::string(line.substr(0, 80)) + "')");
    }
    size_t error_column = 0;
    std::vector<std::string> fields = SplitLine(line, &error_column);
    if (error_column != 0) {
      return InvalidArgumentError(table.source_ + ":" + std::to_string(line_number) + ":" +
                                  std::to_string(error_column) + ": malformed quoted field");
    }
    for (std::string& f : fields) f = std::string(Trim(f));
    if (!have_header) {
      table.header_ = std::move(fields);
      have_header = true;
    } else {
      if (fields.size() != table.header_.size()) {
        return InvalidArgumentError(table.source_ + ":" + std::to_string(line_number) +
                                    ":1: expected " + std::to_string(table.header_.size()) +
                                    " fields as in the header, got " +
                                    std::to_string(fields.size()));
      }
      table.rows_.push_back(Row{line_number, std::move(fields)});
    }
    if (end == text.size()) break;
  }
  if (!have_header) return InvalidArgumentError(table.source_ + ":1:1: empty file, no header");
  return table;
}

StatusOr<CsvTable> CsvTable::ReadFile(const std::string& path) {
  ZEUS_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return Parse(text, path);
}

StatusOr<size_t> CsvTable::ColumnIndex(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return i;
  }
  return InvalidArgumentError(source_ + ":1: missing column '" + std::string(name) +
                              "' (columns: " + Join(header_, ",") + ")");
}

Status CsvTable::ErrorAt(size_t row, size_t column, std::string_view detail) const {
  return InvalidArgumentError(source_ + ":" + std::to_string(rows_[row].line) + ":" +
                              std::to_string(column + 1) + ": column '" + header_[column] +
                              "': " + std::string(detail));
}

StatusOr<double> CsvTable::Double(size_t row, size_t column) const {
  StatusOr<double> v = ParseDouble(Field(row, column));
  if (!v.ok()) return ErrorAt(row, column, v.status().message());
  return v;
}

StatusOr<int64_t> CsvTable::Int(size_t row, size_t column) const {
  StatusOr<int64_t> v = ParseInt64(Field(row, column));
  if (!v.ok()) return ErrorAt(row, column, v.status().message());
  return v;
}

std::string CsvQuote(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string quoted = "\"";
  for (char c : field) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

}  // namespace zeus
