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

TEST(FileTest, MissingFileIsNotFoundAndAtomicWriteRoundTrips) {
  testing::TempDir dir;
  EXPECT_EQ(ReadFileToString(dir.File("nope")).status().code(), StatusCode::kNotFound);
  ZEUS_ASSERT_OK(WriteFileAtomically(dir.File("x"), "hello"));
  EXPECT_EQ(*ReadFileToString(dir.File("x")), "hello");
}

}  // namespace
}  // namespace zeus
