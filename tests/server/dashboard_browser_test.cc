// The dashboard in a real browser: headless Chromium (Debian's `chromium`)
// loads the page from a server on 127.0.0.1 with seeded jobs and a token,
// signs in through /?token=, runs the page's scripts and Chart.js, and the
// test reads the rendered DOM. A screenshot is kept at
// <build>/tests/server/dashboard_browser_test/dashboard.png.
// Skips, saying why, when no chromium is installed.

#include <stdio.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "zeus/http/query.h"
#include "zeus/util/file.h"

#include "tests/server/dashboard_test_util.h"
#include "tests/server/server_test_util.h"

namespace zeus::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "browser-token";
constexpr char kEvilJobId[] = "evil-<img src=x onerror=\"document.body.dataset.xss=1\">";

// The chromium binary: $ZEUS_CHROMIUM, else the first `chromium` or
// `chromium-browser` on PATH; empty when none.
std::string FindChromium() {
  if (const char* chosen = std::getenv("ZEUS_CHROMIUM"); chosen != nullptr && *chosen != '\0') {
    return access(chosen, X_OK) == 0 ? chosen : "";
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (const char* name : {"chromium", "chromium-browser"}) {
    std::string dirs = path;
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      const std::string candidate = dirs.substr(start, end - start) + "/" + name;
      if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  return "";
}

// '...' for /bin/sh.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class DashboardBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (Debian: apt install chromium; or set "
                      "ZEUS_CHROMIUM): the dashboard's browser test cannot run";
    }
    std::string skip_reason;
    HttpServerOptions options;
    options.token = kToken;
    server_ =
        std::make_unique<TestServer>(NewDatabaseUrl(Backend::kSqlite, dir_, &skip_reason), options);
    ASSERT_TRUE(server_->ok()) << server_->error();
    ZEUS_ASSERT_OK(SeedJob(server_->service(), "bert-a", 8));
    ZEUS_ASSERT_OK(SeedJob(server_->service(), kEvilJobId, 2, /*seed=*/3));
  }

  // The sign-in address of the page showing `job_id`.
  std::string PageUrl(const std::string& job_id) const {
    return server_->base_url() + "/?token=" + PercentEncode(kToken) +
           "&job=" + PercentEncode(job_id);
  }

  // Runs chromium headless with `action` (e.g. --dump-dom) on `url` with a
  // fresh profile; returns its stdout. Scripts get 10 s of virtual time.
  std::string RunChromium(const std::string& action, const std::string& url) {
    TempDir profile;
    const std::string command =
        "timeout 60 " + ShellQuote(chromium_) +
        " --headless --disable-gpu --no-sandbox --no-first-run --hide-scrollbars"
        " --user-data-dir=" +
        ShellQuote(profile.path()) + " --virtual-time-budget=10000 --window-size=1400,1800 " +
        action + " " + ShellQuote(url) + " 2>" + ShellQuote(profile.File("stderr.txt"));
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
      ADD_FAILURE() << "cannot run: " << command;
      return out;
    }
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    const int status = pclose(pipe);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "chromium failed (" << status << "): " << command << "\n"
        << ReadFileToString(profile.File("stderr.txt")).value_or("");
    return out;
  }

  static int Count(const std::string& text, const std::string& needle) {
    int count = 0;
    for (size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + needle.size())) {
      ++count;
    }
    return count;
  }

  std::string chromium_;
  TempDir dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(DashboardBrowserTest, RendersJobsTrialsAndChartsAndKeepsAScreenshot) {
  const std::string dom = RunChromium("--dump-dom", PageUrl("bert-a"));
  ASSERT_THAT(dom, HasSubstr("data-state=\"ready\"")) << dom;
  // Both jobs are listed, the evil one as text (and URL-encoded in its link).
  EXPECT_THAT(dom, HasSubstr("<a href=\"/?job=bert-a\" class=\"job-link\">bert-a</a>"));
  EXPECT_THAT(dom, HasSubstr("class=\"job-link\">evil-&lt;img src=x "
                             "onerror=\"document.body.dataset.xss=1\"&gt;</a>"));
  EXPECT_THAT(dom, Not(HasSubstr("<img")));
  EXPECT_THAT(dom, Not(HasSubstr("data-xss")));
  // The job list's saving against the default.
  EXPECT_THAT(dom, HasSubstr("<th>Saved vs default</th>"));
  EXPECT_TRUE(
      std::regex_search(dom, std::regex("<td class=\"num saved\"[^>]*>[0-9.]+% (saved|more)</td>")))
      << dom;
  // One row per trial, and the job's title.
  StatusOr<nlohmann::json> trials = server_->service().ListTrials("bert-a");
  ZEUS_ASSERT_OK(trials.status());
  EXPECT_EQ(Count(dom, "<tr class=\"trial\""), static_cast<int>((*trials)["trials"].size()));
  EXPECT_THAT(dom, HasSubstr("<span id=\"job-title\">bert-a</span>"));
  EXPECT_THAT(dom, HasSubstr("data-outcome=\"converged\""));
  EXPECT_THAT(dom, HasSubstr("data-outcome=\"stopped_early\""));
  // Chart.js drew all three charts.
  for (const char* id : {"trial-cost-chart", "belief-chart", "cumulative-chart"}) {
    EXPECT_TRUE(std::regex_search(
        dom, std::regex(std::string("<canvas id=\"") + id + "\"[^>]*data-chart=\"drawn\"")))
        << id;
  }
  EXPECT_THAT(dom, Not(HasSubstr("Charts are unavailable")));

  const std::string out_dir = ZEUS_DASHBOARD_TEST_OUTPUT_DIR;
  ASSERT_EQ(system(("mkdir -p " + ShellQuote(out_dir)).c_str()), 0);
  const std::string png = out_dir + "/dashboard.png";
  unlink(png.c_str());
  RunChromium("--screenshot=" + ShellQuote(png), PageUrl("bert-a"));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string image, ReadFileToString(png));
  ASSERT_GT(image.size(), 10'000u) << png;
  EXPECT_EQ(image.substr(0, 8), "\x89PNG\r\n\x1a\n") << png;
  std::printf("dashboard screenshot: %s\n", png.c_str());
}

TEST_F(DashboardBrowserTest, ReloadsTheDataAndShowsTheJobsEnergyInKwh) {
  // ?refresh=1: a load every second of the browser's (virtual) 10 s.
  const std::string dom = RunChromium("--dump-dom", PageUrl("bert-a") + "&refresh=1");
  ASSERT_THAT(dom, HasSubstr("data-state=\"ready\"")) << dom;
  std::smatch loads;
  ASSERT_TRUE(std::regex_search(dom, loads, std::regex("data-loads=\"([0-9]+)\""))) << dom;
  EXPECT_GE(std::stoi(loads[1].str()), 3) << dom;
  EXPECT_THAT(dom, HasSubstr("refreshes every 1 s"));
  EXPECT_TRUE(
      std::regex_search(dom, std::regex("<dd>[0-9.]+ kWh \\([0-9,]+ J, [0-9]+ trials\\)</dd>")))
      << dom;
  // Reloaded charts replace the previous ones (Chart.js refuses two on a canvas).
  for (const char* id : {"trial-cost-chart", "belief-chart", "cumulative-chart"}) {
    EXPECT_TRUE(std::regex_search(
        dom, std::regex(std::string("<canvas id=\"") + id + "\"[^>]*data-chart=\"drawn\"")))
        << id;
  }
}

TEST_F(DashboardBrowserTest, UnknownJobShowsA404MessageWithItsIdAsText) {
  // The id is markup too: the server's notice escapes it, the page's script
  // sets it as text.
  const std::string job_id = std::string(kEvilJobId) + "-missing";
  const std::string dom = RunChromium("--dump-dom", PageUrl(job_id));
  EXPECT_THAT(dom, HasSubstr("data-state=\"error\"")) << dom;
  EXPECT_THAT(dom, HasSubstr("data-http-status=\"404\""));
  EXPECT_THAT(dom, HasSubstr("job \"evil-&lt;img src=x onerror=\"document.body.dataset.xss=1\"&gt;"
                             "-missing\": not found"));
  EXPECT_THAT(dom, Not(HasSubstr("<img")));
  EXPECT_THAT(dom, Not(HasSubstr("data-xss")));
  EXPECT_THAT(dom, HasSubstr("<section id=\"job-section\" hidden=\"\">"));
}

}  // namespace
}  // namespace zeus::testing
