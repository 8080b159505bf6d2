#include "zeus/util/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text, const JsonLimits& limits = JsonLimits()) {
  StatusOr<json> parsed = ParseJson(text, "doc", limits);
  EXPECT_FALSE(parsed.ok()) << text.substr(0, 80);
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().message();
}

TEST(ParseJsonTest, ParsesAWellFormedDocument) {
  ZEUS_ASSERT_OK_AND_ASSIGN(
      json j,
      ParseJson(R"({"a": [1, -2, 3.5, "x", true, null, {"b": {}}], "c": 18446744073709551615})",
                "doc"));
  EXPECT_EQ(j["a"].size(), 7u);
  EXPECT_EQ(j["a"][1].get<int64_t>(), -2);
  EXPECT_DOUBLE_EQ(j["a"][2].get<double>(), 3.5);
  EXPECT_TRUE(j["a"][6]["b"].is_object());
  EXPECT_EQ(j["c"].get<uint64_t>(), 18446744073709551615ull);
  ZEUS_ASSERT_OK_AND_ASSIGN(json scalar, ParseJson(" 42 ", "doc"));
  EXPECT_EQ(scalar.get<int>(), 42);
}

TEST(ParseJsonTest, RefusesDeepBalancedNestingWithoutRecursing) {
  // The body of issue 14: 100,000 balanced brackets (200 KB).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string message = ErrorOf(deep);
  EXPECT_THAT(message, HasSubstr("doc: nesting deeper than 64 levels at $[0][0]"));
  // Objects count as levels too.
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"k\":";
  objects += "1" + std::string(100000, '}');
  EXPECT_THAT(ErrorOf(objects), HasSubstr("nesting deeper than 64 levels at $.k.k.k"));
}

TEST(ParseJsonTest, RefusesDeepUnclosedNesting) {
  EXPECT_THAT(ErrorOf(std::string(100000, '[')), HasSubstr("nesting deeper than 64 levels"));
  // Within the depth limit, an unclosed document is a syntax error with its position.
  std::string message = ErrorOf("[[[1]");
  EXPECT_THAT(message, HasSubstr("doc: not valid JSON"));
  EXPECT_THAT(message, HasSubstr("line 1, column 6"));
}

TEST(ParseJsonTest, DepthLimitIsExact) {
  JsonLimits limits;
  limits.max_depth = 3;
  ZEUS_EXPECT_OK(ParseJson("[[[1]]]", "doc", limits).status());
  ZEUS_EXPECT_OK(ParseJson("{\"a\":{\"b\":[]}}", "doc", limits).status());
  EXPECT_THAT(ErrorOf("[[[[1]]]]", limits),
              HasSubstr("nesting deeper than 3 levels at $[0][0][0]"));
  EXPECT_THAT(ErrorOf("{\"a\":[0,{\"b\":{}}]}", limits),
              HasSubstr("nesting deeper than 3 levels at $.a[1].b"));
  limits.max_depth = 0;
  ZEUS_EXPECT_OK(ParseJson("\"scalar\"", "doc", limits).status());
  EXPECT_THAT(ErrorOf("[]", limits), HasSubstr("nesting deeper than 0 levels at $"));
}

TEST(ParseJsonTest, RefusesTextOverTheSizeLimitBeforeParsing) {
  JsonLimits limits;
  limits.max_bytes = 16;
  ZEUS_EXPECT_OK(ParseJson("[1,2,3,4,5,6,77]", "doc", limits).status());  // 16 bytes.
  EXPECT_EQ(ErrorOf("[1,2,3,4,5,6,7,8]", limits), "doc: 17 bytes exceeds the limit of 16 bytes");
  // Not even a syntax error is looked for beyond the limit.
  const std::string huge(JsonLimits().max_bytes + 1, '{');
  EXPECT_THAT(ErrorOf(huge), HasSubstr("bytes exceeds the limit of 16777216 bytes"));
}

TEST(ParseJsonTest, RefusesDuplicateKeysNamingThem) {
  EXPECT_EQ(ErrorOf(R"({"a": 1, "a": 2})"), "doc: duplicate key 'a' in the object at $");
  EXPECT_EQ(ErrorOf(R"({"x": [0, {"b": 1, "c": 2, "b": 3}]})"),
            "doc: duplicate key 'b' in the object at $.x[1]");
  // The same key in sibling objects is fine.
  ZEUS_EXPECT_OK(ParseJson(R"([{"a": 1}, {"a": 2}])", "doc").status());
}

TEST(ParseJsonTest, RefusesNanInfinityAndOverflowingNumbers) {
  for (const char* text : {"{\"e\": NaN}", "{\"e\": Infinity}", "{\"e\": -Infinity}", "[nan]"}) {
    std::string message = ErrorOf(text);
    EXPECT_THAT(message, HasSubstr("doc: not valid JSON")) << text;
    EXPECT_THAT(message, HasSubstr("line 1, column")) << text;
  }
  std::string message = ErrorOf("{\"e\": 1e400}");
  EXPECT_THAT(message, HasSubstr("1e400"));
  EXPECT_THAT(message, HasSubstr("outside the range of a double"));
  EXPECT_THAT(ErrorOf("[-1e400]"), HasSubstr("outside the range of a double"));
  EXPECT_THAT(ErrorOf("[1" + std::string(400, '0') + "]"), HasSubstr("outside the range"));
  // Tiny numbers underflow to zero, which is finite.
  ZEUS_ASSERT_OK_AND_ASSIGN(json tiny, ParseJson("[1e-400]", "doc"));
  EXPECT_EQ(tiny[0].get<double>(), 0.0);
}

TEST(ParseJsonTest, RefusesSyntaxErrorsWithTheirPosition) {
  std::string message = ErrorOf("{\"a\": 1,\n \"b\": }");
  EXPECT_THAT(message, HasSubstr("doc: not valid JSON"));
  EXPECT_THAT(message, HasSubstr("line 2, column 7"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("doc: not valid JSON"));
  EXPECT_THAT(ErrorOf("[1] [2]"), HasSubstr("not valid JSON"));   // Trailing data.
  EXPECT_THAT(ErrorOf("\"\xff\""), HasSubstr("not valid JSON"));  // Invalid UTF-8.
}

json Sample() {
  return json::parse(R"({"n": 5, "big": 18446744073709551615, "neg": -3, "d": 2.5,
    "b": true, "s": "text", "nil": null, "ints": [1, 2, 3], "doubles": [0.5, 1],
    "obj": {"inner": "x", "list": [{"v": 1}, {"v": "bad"}]}})");
}

TEST(JsonFieldsTest, OfRefusesNonObjectsAndUnknownFields) {
  const json array = json::array({1});
  EXPECT_EQ(JsonFields::Of(array, "ctx").status().message(),
            "ctx: expected a JSON object, got [1]");
  const json j = Sample();
  EXPECT_EQ(JsonFields::Of(j, "ctx", {"n"}).status().message(), "ctx: field 'b': unknown field");
  ZEUS_EXPECT_OK(JsonFields::Of(j, "ctx").status());
}

TEST(JsonFieldsTest, ReadsTypedFieldsAndRanges) {
  const json j = Sample();
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields f, JsonFields::Of(j, "ctx"));
  EXPECT_EQ(*f.Int("n", 0, 10), 5);
  EXPECT_EQ(*f.Int("neg"), -3);
  EXPECT_EQ(**f.OptionalUint64("big"), 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(*f.Double("d", 0, 3), 2.5);
  EXPECT_DOUBLE_EQ(*f.Double("n"), 5.0);  // An integer is a number.
  EXPECT_TRUE(*f.Bool("b"));
  EXPECT_EQ(*f.String("s"), "text");
  EXPECT_EQ(*f.IntArray("ints", 1, 3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(*f.DoubleArray("doubles"), (std::vector<double>{0.5, 1.0}));
  EXPECT_FALSE(f.OptionalInt("missing")->has_value());
  EXPECT_FALSE(f.OptionalDouble("nil")->has_value());  // null reads as absent.
  EXPECT_FALSE(f.OptionalString("nil")->has_value());
  EXPECT_FALSE(f.OptionalBool("missing")->has_value());
  EXPECT_TRUE(f.Has("n"));
  EXPECT_FALSE(f.Has("nil"));
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields obj, f.Object("obj"));
  EXPECT_EQ(*obj.String("inner"), "x");
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields element, obj.Element("list", 0));
  EXPECT_EQ(*element.Int("v"), 1);
}

TEST(JsonFieldsTest, BoolArrayReadsBooleansOnly) {
  const json j = json::parse(R"({"flags": [true, false], "mixed": [true, 1], "nil": null})");
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields f, JsonFields::Of(j, "ctx"));
  EXPECT_EQ(*f.BoolArray("flags"), (std::vector<bool>{true, false}));
  EXPECT_EQ(f.BoolArray("mixed").status().message(),
            "ctx: field 'mixed[1]': expected a boolean, got 1");
  EXPECT_EQ(f.BoolArray("nil").status().message(), "ctx: field 'nil': required");
}

TEST(JsonFieldsTest, EveryErrorNamesTheFieldAndTheValue) {
  const json j = Sample();
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields f, JsonFields::Of(j, "ctx"));
  EXPECT_EQ(f.Int("n", 6, 10).status().message(),
            "ctx: field 'n': expected an integer in [6, 10], got 5");
  EXPECT_EQ(f.Int("neg", 0).status().message(),
            "ctx: field 'neg': expected an integer >= 0, got -3");
  EXPECT_EQ(f.Int("big").status().message(),
            "ctx: field 'big': expected an integer, got 18446744073709551615");
  EXPECT_EQ(f.Int("d").status().message(), "ctx: field 'd': expected an integer, got 2.5");
  EXPECT_EQ(f.OptionalUint64("neg").status().message(),
            "ctx: field 'neg': expected a non-negative integer, got -3");
  EXPECT_EQ(f.Double("s").status().message(), "ctx: field 's': expected a number, got \"text\"");
  EXPECT_EQ(f.Double("d", 0, 1).status().message(),
            "ctx: field 'd': expected a number in [0.0, 1.0], got 2.5");
  EXPECT_EQ(f.Double("d", 3).status().message(),
            "ctx: field 'd': expected a number >= 3.0, got 2.5");
  EXPECT_EQ(f.Bool("s").status().message(), "ctx: field 's': expected a boolean, got \"text\"");
  EXPECT_EQ(f.String("n").status().message(), "ctx: field 'n': expected a string, got 5");
  EXPECT_EQ(f.String("nil").status().message(), "ctx: field 'nil': required");
  EXPECT_EQ(f.Int("missing").status().message(), "ctx: field 'missing': required");
  EXPECT_EQ(f.Array("s").status().message(), "ctx: field 's': expected an array, got \"text\"");
  EXPECT_EQ(f.IntArray("ints", 2).status().message(),
            "ctx: field 'ints[0]': expected an integer >= 2, got 1");
  EXPECT_EQ(f.DoubleArray("doubles", 1).status().message(),
            "ctx: field 'doubles[0]': expected a number >= 1.0, got 0.5");
  EXPECT_EQ(f.Object("ints").status().message(),
            "ctx: field 'ints': expected an object, got [1,2,3]");
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields obj, f.Object("obj"));
  EXPECT_EQ(obj.Int("inner").status().message(), "ctx: obj.inner: expected an integer, got \"x\"");
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields bad, obj.Element("list", 1));
  EXPECT_EQ(bad.Int("v").status().message(),
            "ctx: obj.list[1].v: expected an integer, got \"bad\"");
  EXPECT_EQ(f.Error("eta", "must be in [0, 1]").message(), "ctx: field 'eta': must be in [0, 1]");
  // A long value is shortened.
  const json long_value = {{"s", std::string(500, 'x')}};
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields l, JsonFields::Of(long_value, ""));
  EXPECT_EQ(l.Int("s").status().message().size(),
            std::string("field 's': expected an integer, got ").size() + 64);
}

TEST(JsonFieldsTest, NonFiniteValuesBuiltInMemoryAreRefused) {
  // ParseJson cannot produce these; a document built in code can.
  const json j = {{"nan", std::nan("")}, {"inf", HUGE_VAL}, {"list", {1.0, -HUGE_VAL}}};
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields f, JsonFields::Of(j, "ctx"));
  EXPECT_THAT(f.Double("nan").status().message(),
              HasSubstr("field 'nan': expected a finite number, got NaN"));
  EXPECT_THAT(f.OptionalDouble("inf").status().message(),
              HasSubstr("field 'inf': expected a finite number, got Infinity"));
  EXPECT_THAT(f.DoubleArray("list").status().message(),
              HasSubstr("field 'list[1]': expected a finite number, got -Infinity"));
}

TEST(JsonFieldsTest, SetIfPresentKeepsTheDefaultWhenAbsent) {
  const json j = {{"n", 7}, {"nil", nullptr}, {"s", "x"}};
  ZEUS_ASSERT_OK_AND_ASSIGN(JsonFields f, JsonFields::Of(j, "ctx"));
  int n = 1;
  ZEUS_ASSERT_OK(SetIfPresent(f.OptionalInt("n", 0, 10), &n));
  EXPECT_EQ(n, 7);
  int kept = 3;
  ZEUS_ASSERT_OK(SetIfPresent(f.OptionalInt("nil"), &kept));
  ZEUS_ASSERT_OK(SetIfPresent(f.OptionalInt("missing"), &kept));
  EXPECT_EQ(kept, 3);
  EXPECT_EQ(SetIfPresent(f.OptionalInt("s"), &kept).message(),
            "ctx: field 's': expected an integer, got \"x\"");
  EXPECT_EQ(kept, 3);
}

}  // namespace
}  // namespace zeus
