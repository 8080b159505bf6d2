#include "zeus/util/csv.h"

#include <gtest/gtest.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

TEST(CsvTableTest, ParsesHeaderRowsAndQuotedFields) {
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable t, CsvTable::Parse("a,b\r\n1,\"x,y\"\n\n2,\"q\"\"\"\n", "t"));
  ASSERT_EQ(t.num_rows(), 2u);
  EXPECT_EQ(t.Field(0, 1), "x,y");
  EXPECT_EQ(t.Field(1, 1), "q\"");
  EXPECT_EQ(*t.Int(1, 0), 2);
}

TEST(CsvTableTest, ErrorsNameFileLineAndColumn) {
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable t, CsvTable::Parse("a,b\n1,2\n3,abc\n", "f.csv"));
  StatusOr<double> v = t.Double(1, 1);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "f.csv:3:2: column 'b': expected a number, got 'abc'");
  EXPECT_EQ(t.ColumnIndex("c").status().message(), "f.csv:1: missing column 'c' (columns: a,b)");
}

TEST(CsvTableTest, RejectsRowsWithTheWrongFieldCount) {
  StatusOr<CsvTable> t = CsvTable::Parse("a,b\n1\n", "f.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "f.csv:2:1: expected 2 fields as in the header, got 1");
  EXPECT_FALSE(CsvTable::Parse("", "e.csv").ok());
}

TEST(CsvTableTest, RefusesALastLineWithoutNewlineAsTruncated) {
  // A file cut off inside "5915.57" would otherwise read as 5.
  StatusOr<CsvTable> t = CsvTable::Parse("a,b\n1,2\n3,5", "f.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "f.csv:3:4: the last line does not end with a newline; the file looks truncated "
            "(last line: '3,5')");
  EXPECT_FALSE(CsvTable::Parse("a,b", "f.csv").ok());  // Even a lone header.
  EXPECT_FALSE(CsvTable::Parse("a,b\r\n1,2\r\n3,5\r", "f.csv").ok());
  // Trailing blanks after the last newline are not a line.
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable ok, CsvTable::Parse("a,b\n1,2\n3,5\n  ", "f.csv"));
  EXPECT_EQ(ok.num_rows(), 2u);
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable crlf, CsvTable::Parse("a,b\r\n1,2\r\n", "f.csv"));
  EXPECT_EQ(crlf.num_rows(), 1u);
}

TEST(CsvTableTest, SkipsALeadingUtf8ByteOrderMark) {
  // Excel's "CSV UTF-8" and Python's utf-8-sig write one before the header.
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable t, CsvTable::Parse("\xEF\xBB\xBF"
                                                        "dataset,b\nx,2\n",
                                                        "f.csv"));
  EXPECT_EQ(t.header().front(), "dataset");
  EXPECT_EQ(*t.ColumnIndex("dataset"), 0u);
  EXPECT_EQ(t.Field(0, 0), "x");
  // Only at the very start: elsewhere the bytes are data.
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable later, CsvTable::Parse("a\n\xEF\xBB\xBF"
                                                            "x\n",
                                                            "f.csv"));
  EXPECT_EQ(later.Field(0, 0),
            "\xEF\xBB\xBF"
            "x");
}

TEST(CsvTableTest, BinaryDataIsRefusedAtItsLineAndColumn) {
  StatusOr<CsvTable> t = CsvTable::Parse(std::string("a,b\n1,\0\n", 8), "f.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "f.csv:2:3: byte 0x00 is not UTF-8 text; expected a CSV text file, this looks binary");
  t = CsvTable::Parse("\x89PNG\r\n", "f.csv");
  EXPECT_EQ(t.status().message(),
            "f.csv:1:1: byte 0x89 is not UTF-8 text; expected a CSV text file, this looks binary");
}

TEST(CsvQuoteTest, QuotesOnlyWhatNeedsItAndTheReaderReadsItBack) {
  EXPECT_EQ(CsvQuote("group-0"), "group-0");
  EXPECT_EQ(CsvQuote(""), "");
  EXPECT_EQ(CsvQuote("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvQuote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvQuote("two\nlines"), "\"two\nlines\"");
  // The reader is line-based (no line breaks in fields): the rest round-trip.
  const std::vector<std::string> fields = {"plain", "a,b", "q\"uote", ""};
  std::string text = "a,b,c,d\n";
  for (size_t i = 0; i < fields.size(); ++i) text += (i ? "," : "") + CsvQuote(fields[i]);
  ZEUS_ASSERT_OK_AND_ASSIGN(CsvTable table, CsvTable::Parse(text + "\n", "quoted.csv"));
  ASSERT_EQ(table.num_rows(), 1u);
  for (size_t i = 0; i < fields.size(); ++i) EXPECT_EQ(table.Field(0, i), fields[i]) << i;
}

TEST(FileTest, DirectoryIsNamedAsSuch) {
  testing::TempDir dir;
  StatusOr<std::string> text = ReadFileToString(dir.path());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), dir.path() + ": is a directory, expected a file");
  EXPECT_EQ(CsvTable::ReadFile(dir.path()).status().message(),
            dir.path() + ": is a directory, expected a file");
}

TEST(FileTest, MissingFileIsNotFoundAndAtomicWriteRoundTrips) {
  testing::TempDir dir;
  EXPECT_EQ(ReadFileToString(dir.File("nope")).status().code(), StatusCode::kNotFound);
  ZEUS_ASSERT_OK(WriteFileAtomically(dir.File("x"), "hello"));
  EXPECT_EQ(*ReadFileToString(dir.File("x")), "hello");
}

}  // namespace
}  // namespace zeus
