// The wire of `zeus serve` (the batch-size service, its dashboard and
// metrics) against its recorded transcripts (tests/http/wire_replay.h).

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "zeus/util/file.h"

#include "tests/http/wire_replay.h"
#include "tests/server/server_test_util.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

// ---------------------------------------------------------------------------
// zeus serve.

std::string JobJson(const std::string& job_id, const std::string& extra = "") {
  std::string body = JobBody(job_id).dump();
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

// In order: each exchange sees the state the ones before it left (jobs
// wire-a and wire-b, trials 1 and 2 of wire-a).
std::vector<Exchange> ServeExchanges() {
  const std::string job = JobJson("wire-a", R"("an_unknown_field":{"x":[1,2]})");
  const std::string report =
      R"({"job_id":"wire-a","batch_size":128,"trial_number":1,"time":10.5,"energy":1000.0,"metric":0.3,"current_epoch":1})";
  std::vector<Exchange> x;
  x.push_back(Ex("health", Req("GET", "/health")));
  x.push_back(Ex("register_created_with_unknown_field", Req("POST", "/jobs", kJson, job)));
  x.push_back(Ex("register_identical", Req("POST", "/jobs", kJson, job)));
  x.push_back(Ex("register_conflicting",
                 Req("POST", "/jobs", kJson,
                     JobJson("wire-a").replace(JobJson("wire-a").find("[32,64,128,256]"), 15,
                                               "[32,64,128]"))));
  x.push_back(Ex("register_malformed_json", Req("POST", "/jobs", kJson, "{\"job_id\": ")));
  x.push_back(Ex("register_invalid_field",
                 Req("POST", "/jobs", kJson,
                     JobJson("wire-b").replace(JobJson("wire-b").find("\"eta_knob\":0.5"), 14,
                                               "\"eta_knob\":5.0"))));
  x.push_back(Ex("register_text_plain",
                 Req("POST", "/jobs", "Content-Type: text/plain\r\n", JobJson("wire-b"))));
  x.push_back(Ex("register_no_body", Req("POST", "/jobs", kJson)));
  x.push_back(Ex("next_batch_size", Req("GET", "/jobs/batch_size?job_id=wire-a")));
  x.push_back(Ex("next_batch_size_unknown_job", Req("GET", "/jobs/batch_size?job_id=nope")));
  x.push_back(Ex("next_batch_size_no_job_id", Req("GET", "/jobs/batch_size")));
  x.push_back(Ex("report", Req("POST", "/report", kJson, report)));
  x.push_back(Ex("report_invalid", Req("POST", "/report", kJson, R"({"job_id":"wire-a"})")));
  x.push_back(Ex("next_batch_size_second", Req("GET", "/jobs/batch_size?job_id=wire-a")));
  x.push_back(Ex("end_trial_without_batch_size",
                 Req("PATCH", "/trials", kJson, R"({"job_id":"wire-a","trial_number":2})")));
  x.push_back(Ex("end_trial", Req("PATCH", "/trials", kJson,
                                  R"({"job_id":"wire-a","batch_size":128,"trial_number":2})")));
  x.push_back(Ex(
      "end_trial_unknown",
      Req("PATCH", "/trials", kJson, R"({"job_id":"wire-a","batch_size":128,"trial_number":99})")));
  x.push_back(Ex("trials_page_1", Req("GET", "/trials?job_id=wire-a&limit=1")));
  x.push_back(Ex("trials_page_2", Req("GET", "/trials?job_id=wire-a&limit=1&after=1")));
  x.push_back(Ex("trials_bad_limit", Req("GET", "/trials?job_id=wire-a&limit=zero")));
  x.push_back(Ex("jobs_list", Req("GET", "/jobs")));
  x.push_back(Ex("jobs_list_limit", Req("GET", "/jobs?limit=1")));
  x.push_back(Ex("jobs_list_after", Req("GET", "/jobs?limit=1&after=wire-a")));
  x.push_back(Ex("job_one", Req("GET", "/jobs?job_id=wire-a")));
  x.push_back(Ex("job_percent_encoded", Req("GET", "/jobs?job_id=%77ire-a")));
  x.push_back(Ex("job_bad_percent_encoding", Req("GET", "/jobs?job_id=wire%2")));
  x.push_back(Ex("job_repeated_parameter", Req("GET", "/jobs?job_id=wire-a&job_id=wire-b")));
  x.push_back(Ex("arms", Req("GET", "/jobs/arms?job_id=wire-a")));
  x.push_back(Ex("delete_job", Req("DELETE", "/jobs?job_id=wire-b")));
  x.push_back(Ex("delete_job_again", Req("DELETE", "/jobs?job_id=wire-b")));
  x.push_back(Ex("unknown_route", Req("GET", "/nope")));
  x.push_back(Ex("method_not_allowed", Req("PUT", "/jobs", kJson, "{}")));
  x.push_back(Ex("method_not_allowed_health", Req("DELETE", "/health")));
  x.push_back(Ex("lowercase_method", Req("get", "/health")));
  x.push_back(Head("head_health", "/health"));
  x.push_back(Head("head_unknown_route", "/nope"));
  x.push_back(Ex("percent_encoded_path", Req("GET", "/heal%74h")));
  x.push_back(Ex("dashboard_page", Req("GET", "/")));
  x.push_back(Ex("dashboard_page_unknown_job", Req("GET", "/?job=nope")));
  x.push_back(Ex("dashboard_alias", Req("GET", "/dashboard")));
  x.push_back(Ex("dashboard_js", Req("GET", "/dashboard/static/dashboard.js")));
  x.push_back(Ex("dashboard_css", Req("GET", "/dashboard/static/dashboard.css")));
  x.push_back(Ex("dashboard_chartjs", Req("GET", "/dashboard/static/chart.js")));
  x.push_back(Ex("dashboard_static_missing", Req("GET", "/dashboard/static/nope.js")));
  x.push_back(Ex("dashboard_template_refused", Req("GET", "/dashboard/static/index.html")));
  x.push_back(Ex("dashboard_api_jobs", Req("GET", "/dashboard/api/jobs")));
  x.push_back(Ex("dashboard_api_job", Req("GET", "/dashboard/api/jobs/wire-a")));
  x.push_back(Ex("dashboard_api_unknown", Req("GET", "/dashboard/api/nope")));
  x.push_back(Ex("dashboard_post", Req("POST", "/dashboard", kJson, "{}")));
  x.push_back(Ex("dashboard_sign_in_without_token", Req("GET", "/?token=anything&job=wire-a")));
  x.push_back(Ex("expect_100_continue",
                 Req("POST", "/jobs", std::string(kJson) + "Expect: 100-continue\r\n", job)));
  // Req would add a Content-Length: the head is written out.
  x.push_back(
      Ex("chunked_request_body", "POST /jobs HTTP/1.1\r\nHost: zeus\r\n" + std::string(kJson) +
                                     "Transfer-Encoding: chunked\r\n\r\n" +
                                     fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", job.size(), job)));
  Exchange pipelined =
      Ex("keep_alive_two_requests", Req("GET", "/health") + Req("GET", "/jobs?job_id=wire-a"));
  pipelined.responses = 2;
  pipelined.watch_close = true;
  x.push_back(pipelined);
  x.push_back(Closing("connection_close", Req("GET", "/health", "Connection: close\r\n")));
  x.push_back(Closing("http_1_0", "GET /health HTTP/1.0\r\n\r\n"));
  x.push_back(
      Closing("http_1_0_keep_alive", "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  x.push_back(Closing("malformed_request_line", "GARBAGE\r\n\r\n"));
  x.push_back(Closing("bad_http_version", "GET /health HTTP/2.7\r\n\r\n"));
  x.push_back(Closing("bad_header_line", "GET /health HTTP/1.1\r\nNo colon here\r\n\r\n"));
  x.push_back(Closing("oversized_headers",
                      Req("GET", "/health", "X-Padding: " + std::string(20 * 1024, 'a') + "\r\n")));
  x.push_back(Closing("oversized_body",
                      Req("POST", "/jobs", std::string(kJson) + "Content-Length: 2000000\r\n")));
  // The body is sent all the same: the answer still arrives (the server
  // reads and drops what follows; the connection's end is not watched, as
  // it depends on how long the server drains).
  x.push_back(Ex("oversized_body_sent",
                 Req("POST", "/jobs", kJson, "[" + std::string((1 << 20) + 16, ' ') + "]")));
  x.push_back(Closing("bad_content_length", Req("POST", "/jobs", "Content-Length: twelve\r\n")));
  x.push_back(Ex("delete_job_without_job_id", Req("DELETE", "/jobs")));
  x.push_back(Ex("jobs_list_bad_limit", Req("GET", "/jobs?limit=0")));
  x.push_back(Ex(
      "report_unknown_job",
      Req("POST", "/report", kJson,
          R"({"job_id":"nope","batch_size":128,"trial_number":1,"time":1.0,"energy":1.0,"metric":0.1,"current_epoch":1})")));
  x.push_back(Ex("report_malformed_json", Req("POST", "/report", kJson, "[1,2")));
  x.push_back(Ex("report_duplicate_key",
                 Req("POST", "/report", kJson, R"({"job_id":"wire-a","job_id":"wire-b"})")));
  x.push_back(Ex("job_id_plus_as_space", Req("GET", "/jobs?job_id=wire+a")));
  x.push_back(Ex("job_id_not_printable", Req("GET", "/jobs?job_id=%01")));
  x.push_back(Ex("nul_in_path", Req("GET", "/%00")));
  x.push_back(Ex("absolute_form_target", Req("GET", "http://zeus/health")));
  x.push_back(Ex("no_host_header", "GET /health HTTP/1.1\r\n\r\n"));
  x.push_back(Ex("body_on_get", Req("GET", "/health", "", "hello")));
  x.push_back(Head("head_dashboard_page", "/"));
  x.push_back(Ex("dashboard_dot_dot", Req("GET", "/dashboard/static/../api/jobs")));
  x.push_back(Closing("conflicting_content_lengths",
                      Req("POST", "/jobs", "Content-Length: 2\r\nContent-Length: 3\r\n", "")));
  x.push_back(Closing("content_length_and_chunked",
                      "POST /jobs HTTP/1.1\r\nHost: zeus\r\nContent-Length: 5\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  Exchange then_bad =
      Closing("pipelined_good_then_malformed", Req("GET", "/health") + "GARBAGE\r\n\r\n");
  then_bad.responses = 2;
  x.push_back(then_bad);
  x.push_back(Closing("request_never_finished", "GET /health HTTP/1.1\r\nHost: zeus\r\n"));
  x.push_back(Ex("metrics", Req("GET", "/metrics")));
  return x;
}

// With a bearer token configured: what needs it, what does not.
std::vector<Exchange> ServeTokenExchanges() {
  const std::string bearer = "Authorization: Bearer wire-secret\r\n";
  std::vector<Exchange> x;
  x.push_back(Ex("health_without_token", Req("GET", "/health")));
  x.push_back(Ex("jobs_without_token", Req("GET", "/jobs")));
  x.push_back(Ex("jobs_wrong_token", Req("GET", "/jobs", "Authorization: Bearer wrong\r\n")));
  x.push_back(Ex("jobs_not_bearer", Req("GET", "/jobs", "Authorization: Basic d2lyZQ==\r\n")));
  x.push_back(Ex("jobs_with_token", Req("GET", "/jobs", bearer)));
  x.push_back(Ex("register_without_token", Req("POST", "/jobs", kJson, JobJson("wire-t"))));
  x.push_back(Ex("register_with_token",
                 Req("POST", "/jobs", std::string(kJson) + bearer, JobJson("wire-t"))));
  x.push_back(Ex("metrics_without_token", Req("GET", "/metrics")));
  x.push_back(Ex("unknown_route_without_token", Req("GET", "/nope")));
  x.push_back(Ex("method_not_allowed_without_token", Req("PUT", "/jobs")));
  x.push_back(Ex("repeated_parameter_without_token", Req("GET", "/jobs?job_id=a&job_id=b")));
  x.push_back(Ex("dashboard_without_token", Req("GET", "/")));
  x.push_back(Ex("dashboard_wrong_token", Req("GET", "/?token=wrong&job=wire-t")));
  x.push_back(Ex("dashboard_sign_in", Req("GET", "/?token=wire-secret&job=wire-t")));
  x.push_back(Ex("dashboard_with_cookie",
                 Req("GET", "/", "Cookie: zeus_token=776972652d736563726574\r\n")));
  x.push_back(Ex("dashboard_api_without_token", Req("GET", "/dashboard/api/jobs")));
  x.push_back(Ex(
      "dashboard_api_with_cookie",
      Req("GET", "/dashboard/api/jobs", "Cookie: other=1; zeus_token=776972652d736563726574\r\n")));
  x.push_back(Ex("dashboard_api_with_bearer", Req("GET", "/dashboard/api/jobs/wire-t", bearer)));
  x.push_back(Ex("dashboard_static_without_token", Req("GET", "/dashboard/static/dashboard.css")));
  return x;
}

TEST_F(WireReplayTest, ServeAnswersAsRecorded) {
  // A small stand-in for Chart.js: the static route serves the file as is.
  const std::string chartjs = dir_.WriteFile("chart.min.js", "/* chart.js stand-in */\n");
  ServeProcess serve;
  // A request must be complete within 2 s (request_never_finished: the
  // connection is closed then).
  ZEUS_ASSERT_OK(serve.Start({"--db", "sqlite:" + dir_.File("serve.db"), "--listen", "127.0.0.1:0",
                              "--chartjs", chartjs, "--threads", "2", "--read-timeout-s", "2"},
                             dir_.File("serve.log")));
  Normaliser normalise = BaseNormaliser(dir_.path());
  Replay("serve", Endpoint{"", serve.port(), "/health"}, ServeExchanges(), normalise);
  PrintLogOnFailure(dir_.File("serve.log"));
}

TEST_F(WireReplayTest, ServeWithTokenAnswersAsRecorded) {
  const std::string token_file = dir_.WriteFile("token", "wire-secret\n");
  ServeProcess serve;
  ZEUS_ASSERT_OK(serve.Start(
      {"--db", "sqlite:" + dir_.File("serve.db"), "--listen", "127.0.0.1:0", "--token-file",
       token_file, "--chartjs", dir_.File("no-chart.js"), "--threads", "2"},
      dir_.File("serve.log")));
  Normaliser normalise = BaseNormaliser(dir_.path());
  Replay("serve_token", Endpoint{"", serve.port(), "/health"}, ServeTokenExchanges(), normalise);
  PrintLogOnFailure(dir_.File("serve.log"));
}

}  // namespace
}  // namespace zeus::testing
