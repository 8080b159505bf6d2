// Query decoding, the Status-to-HTTP table and the route table of the HTTP
// layer, without a transport.

#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "zeus/http/message.h"
#include "zeus/http/query.h"
#include "zeus/http/router.h"
#include "zeus/http/status_map.h"

namespace zeus {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(QueryTest, DecodesEscapesAndPlusInOrderAndSkipsEmptyItems) {
  StatusOr<HttpFields> params = ParseQuery("b=0%2C1&a=x+y&&flag&empty=&b=2");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  EXPECT_THAT(*params, ElementsAre(Pair("b", "0,1"), Pair("a", "x y"), Pair("flag", ""),
                                   Pair("empty", ""), Pair("b", "2")));
  EXPECT_EQ(RepeatedParam(*params), "b");
  EXPECT_EQ(RepeatedParam(HttpFields{{"a", "1"}, {"b", "2"}}), std::nullopt);
}

TEST(QueryTest, BadEscapesAreKeptOrRefusedByName) {
  StatusOr<HttpFields> kept = ParseQuery("a=%zz&b=%4&c=100%");
  ASSERT_TRUE(kept.ok());
  EXPECT_THAT(*kept, ElementsAre(Pair("a", "%zz"), Pair("b", "%4"), Pair("c", "100%")));
  for (const char* query : {"a=%zz", "a=%4", "a=100%", "%g0=1"}) {
    StatusOr<HttpFields> refused = ParseQuery(query, BadEscape::kRefuse);
    ASSERT_FALSE(refused.ok()) << query;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(), HasSubstr("query: bad %-escape in \"")) << query;
  }
  EXPECT_THAT(ParseQuery("a=%zz", BadEscape::kRefuse).status().message(), HasSubstr("\"%zz\""));
}

TEST(QueryTest, RepeatsAreRefusedAtTheSecondOccurrenceWhenAsked) {
  EXPECT_TRUE(ParseQuery("a=1&a=2").ok());
  StatusOr<HttpFields> refused = ParseQuery("a=1&b=2&a=3&c=%zz", BadEscape::kRefuse, true);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "query: parameter a given twice");
  // In order: the bad escape comes first here.
  EXPECT_THAT(ParseQuery("c=%zz&a=1&a=2", BadEscape::kRefuse, true).status().message(),
              HasSubstr("bad %-escape"));
}

TEST(QueryTest, PathsKeepPlus) {
  EXPECT_EQ(PercentDecode("/a+b%2Fc", false, BadEscape::kKeep).value(), "/a+b/c");
}

TEST(QueryTest, PercentEncodeKeepsOnlyUnreservedBytesAndRoundTrips) {
  EXPECT_EQ(PercentEncode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(PercentEncode("a b+c&d=e/\xC3\xA9%"), "a%20b%2Bc%26d%3De%2F%C3%A9%25");
  EXPECT_EQ(PercentEncode(std::string("\0\x7f", 2)), "%00%7F");
  const std::string text = "job 1+2&x=\xff";
  EXPECT_EQ(PercentDecode(PercentEncode(text), true, BadEscape::kRefuse).value(), text);
}

TEST(HttpStatusMapTest, DefaultsAndOverrides) {
  const HttpStatusMap defaults;
  EXPECT_EQ(defaults(StatusCode::kOk), 200);
  EXPECT_EQ(defaults(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(defaults(StatusCode::kNotFound), 404);
  EXPECT_EQ(defaults(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(defaults(StatusCode::kFailedPrecondition), 409);
  EXPECT_EQ(defaults(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(defaults(StatusCode::kAborted), 409);
  EXPECT_EQ(defaults(StatusCode::kUnavailable), 503);
  EXPECT_EQ(defaults(StatusCode::kInternal), 500);
  EXPECT_EQ(defaults(StatusCode::kIoError), 500);
  HttpStatusMap custom{{StatusCode::kInvalidArgument, 422}};
  custom.Set(StatusCode::kNotFound, 400);
  EXPECT_EQ(custom(StatusCode::kInvalidArgument), 422);
  EXPECT_EQ(custom(StatusCode::kNotFound), 400);
  EXPECT_EQ(custom(StatusCode::kUnavailable), 503);
}

HttpRequest Request(const std::string& method, const std::string& path, HttpFields params = {}) {
  HttpRequest request;
  request.method = method;
  request.path = path;
  request.params = std::move(params);
  return request;
}

HttpHandler Answer(const std::string& body) {
  return [body](const HttpRequest&) { return HttpResponse(200, body, "text/plain"); };
}

TEST(HttpRouterTest, ExactBeatsPrefixAndLongerPrefixBeatsShorter) {
  HttpRouter router;
  ASSERT_TRUE(router
                  .Add({{"GET", "/", Answer("root"), HttpRoute::Match::kPrefix},
                        {"GET", "/static/", Answer("static"), HttpRoute::Match::kPrefix},
                        {"GET", "/static/app.js", Answer("exact")}})
                  .ok());
  std::string pattern;
  EXPECT_EQ(router.Route(Request("GET", "/static/app.js"), &pattern).body, "exact");
  EXPECT_EQ(pattern, "/static/app.js");
  EXPECT_EQ(router.Route(Request("GET", "/static/x.css"), &pattern).body, "static");
  EXPECT_EQ(pattern, "/static/");
  EXPECT_EQ(router.Route(Request("GET", "/other"), &pattern).body, "root");
  EXPECT_EQ(pattern, "/");
}

TEST(HttpRouterTest, UnknownPathIs404AndOtherMethodIs405WithAllow) {
  HttpRouter router;
  ASSERT_TRUE(
      router.Add({{"POST", "/jobs", Answer("post")}, {"GET", "/jobs", Answer("get")}}).ok());
  std::string pattern;
  HttpResponse missing = router.Route(Request("GET", "/nowhere"), &pattern);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "{\"message\":\"no such route\"}");
  EXPECT_EQ(pattern, HttpRouter::kUnmatched);
  HttpResponse wrong = router.Route(Request("DELETE", "/jobs"), &pattern);
  EXPECT_EQ(wrong.status, 405);
  EXPECT_THAT(wrong.headers, ElementsAre(Pair("Allow", "GET, HEAD, POST")));
  EXPECT_EQ(wrong.body,
            "{\"message\":\"method DELETE not allowed on /jobs; allowed: GET, HEAD, POST\"}");
  EXPECT_EQ(router.Route(Request("HEAD", "/jobs"), &pattern).body, "get");
}

TEST(HttpRouterTest, NotFoundHandlerAnswersUnmatchedPathsAndMayThrow) {
  HttpRouterOptions options;
  options.not_found = [](const HttpRequest& req) -> HttpResponse {
    if (req.path == "/throw") throw std::runtime_error("boom");
    return HttpResponse(404, "no route " + req.path);
  };
  HttpRouter router(options);
  ASSERT_TRUE(router.Add({{"GET", "/x", Answer("x")}}).ok());
  std::string pattern;
  EXPECT_EQ(router.Route(Request("GET", "http://host/x"), &pattern).body, "no route http://host/x");
  EXPECT_EQ(pattern, HttpRouter::kUnmatched);
  EXPECT_EQ(router.Route(Request("GET", "/throw"), &pattern).status, 500);
  EXPECT_EQ(router.Route(Request("GET", "/x"), &pattern).body, "x");
}

TEST(HttpRouterTest, RouteWithoutMethodTakesEveryMethodLeftOver) {
  HttpRouter router;
  ASSERT_TRUE(router.Add({{"GET", "/x", Answer("get")}, {"", "/x", Answer("any")}}).ok());
  std::string pattern;
  EXPECT_EQ(router.Route(Request("GET", "/x"), &pattern).body, "get");
  EXPECT_EQ(router.Route(Request("PATCH", "/x"), &pattern).body, "any");
}

TEST(HttpRouterTest, AccessHookGuardsTokenRoutesOnlyThenRepeatsAreRefused) {
  HttpRouterOptions options;
  int asked = 0;
  options.access = [&asked](const HttpRequest& req,
                            const HttpRoute&) -> std::optional<HttpResponse> {
    ++asked;
    if (req.Header("Authorization") == "Bearer s") return std::nullopt;
    return HttpResponse(401, "{}");
  };
  HttpRouter router(options);
  ASSERT_TRUE(router
                  .Add({{"GET", "/private", Answer("private")},
                        {"GET", "/health", Answer("ok"), HttpRoute::Match::kExact,
                         HttpRoute::Access::kPublic}})
                  .ok());
  std::string pattern;
  EXPECT_EQ(router.Route(Request("GET", "/health"), &pattern).status, 200);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(router.Route(Request("GET", "/private"), &pattern).status, 401);
  HttpRequest authorised = Request("GET", "/private", {{"a", "1"}, {"a", "2"}});
  authorised.headers = {{"authorization", "Bearer s"}};
  HttpResponse repeated = router.Route(authorised, &pattern);
  EXPECT_EQ(repeated.status, 400);
  EXPECT_EQ(repeated.body, "{\"message\":\"query: parameter 'a' given twice\"}");
  authorised.params.pop_back();
  EXPECT_EQ(router.Route(authorised, &pattern).body, "private");
  EXPECT_EQ(asked, 3);
}

TEST(HttpRouterTest, ThrowingHandlerIs500AndTheExceptionHookMayWordIt) {
  const HttpHandler thrower = [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("boom");
  };
  HttpRouter plain;
  ASSERT_TRUE(plain.Add({{"GET", "/t", thrower}}).ok());
  std::string pattern;
  HttpResponse response = plain.Route(Request("GET", "/t"), &pattern);
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(response.body, "{\"message\":\"internal error while handling the request\"}");
  HttpRouterOptions options;
  options.on_exception = [](const std::exception* e) {
    return HttpResponse(500, std::string("internal error: ") + (e ? e->what() : "unknown"));
  };
  HttpRouter worded(options);
  ASSERT_TRUE(worded.Add({{"GET", "/t", thrower}}).ok());
  EXPECT_EQ(worded.Route(Request("GET", "/t"), &pattern).body, "internal error: boom");
}

TEST(HttpRouterTest, AddRefusesDuplicatesAndBadRoutesAndAddsNothingThen) {
  HttpRouter router;
  ASSERT_TRUE(router.Add({{"GET", "/a", Answer("a")}}).ok());
  Status duplicate = router.Add({{"GET", "/b", Answer("b")}, {"GET", "/a", Answer("a2")}});
  EXPECT_EQ(duplicate.code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(duplicate.message(), HasSubstr("GET /a"));
  std::string pattern;
  EXPECT_EQ(router.Route(Request("GET", "/b"), &pattern).status, 404);
  EXPECT_EQ(router.Add({{"GET", "relative", Answer("x")}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(router.Add({{"GET", "/nohandler", nullptr}}).code(), StatusCode::kInvalidArgument);
  // The same path with another match kind is another route.
  EXPECT_TRUE(router.Add({{"GET", "/a", Answer("prefix"), HttpRoute::Match::kPrefix}}).ok());
}

TEST(HttpMessageTest, ParamIsTheLastValueAndHeadersAreCaseInsensitive) {
  HttpRequest request = Request("GET", "/", {{"a", "1"}, {"a", "2"}});
  request.headers = {{"Content-Type", "text/plain"}};
  EXPECT_EQ(request.Param("a"), "2");
  EXPECT_EQ(request.Param("b"), std::nullopt);
  EXPECT_EQ(request.Header("content-type"), "text/plain");
  EXPECT_EQ(request.Header("Accept"), "");
  EXPECT_EQ(EscapeControl("a\nb\\c\x7f"), "a\\x0ab\\x5cc\\x7f");
}

}  // namespace
}  // namespace zeus
