// DeviceExporter over HTTP on a free loopback port: what GET /metrics
// answers (the exposer's series, then the devices' metrics, gzip when asked),
// and what slow or numerous clients cannot do to it.

#include "zeus/exporter/device_exporter.h"

#include <poll.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/device/fake.h"
#include "zeus/http/client.h"

#include "tests/exporter/metrics_text.h"
#include "tests/testing/raw_socket.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;
using zeus::testing::RawClient;
using zeus::testing::ReadToClose;
using zeus::testing::SampleValue;

// The exposer's own series before any scrape, as prometheus-cpp's civetweb
// exposer wrote them.
constexpr char kFirstExposerText[] =
    "# HELP exposer_transferred_bytes_total Transferred bytes to metrics services\n"
    "# TYPE exposer_transferred_bytes_total counter\n"
    "exposer_transferred_bytes_total 0\n"
    "# HELP exposer_scrapes_total Number of times metrics were scraped\n"
    "# TYPE exposer_scrapes_total counter\n"
    "exposer_scrapes_total 0\n"
    "# HELP exposer_request_latencies Latencies of serving scrape requests, in microseconds\n"
    "# TYPE exposer_request_latencies summary\n"
    "exposer_request_latencies_count 0\n"
    "exposer_request_latencies_sum 0\n"
    "exposer_request_latencies{quantile=\"0.5\"} Nan\n"
    "exposer_request_latencies{quantile=\"0.9\"} Nan\n"
    "exposer_request_latencies{quantile=\"0.99\"} Nan\n";

std::string Gunzip(const std::string& data) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) return "";
  std::string out;
  char buffer[4096];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - stream.avail_out);
  }
  inflateEnd(&stream);
  return rc == Z_STREAM_END ? out : "";
}

// Sends one byte to each of its clients, again and again, never finishing a
// request head, until destroyed.
class HeaderDripper {
 public:
  explicit HeaderDripper(std::vector<std::unique_ptr<RawClient>>* clients)
      : thread_([this, clients] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!stop_) {
            for (auto& client : *clients) client->Send("a");
            ++rounds_;
            // The attack's pace: a byte every 50 ms per connection.
            stopped_.wait_for(lock, milliseconds(50), [this] { return stop_; });
          }
        }) {}
  ~HeaderDripper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    stopped_.notify_all();
    thread_.join();
  }
  int rounds() const { return rounds_; }

 private:
  std::mutex mu_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::atomic<int> rounds_{0};
  std::thread thread_;
};

class DeviceExporterTest : public ::testing::Test {
 protected:
  DeviceExporterTest() : gpu_(&clock_, GpuOptions()), cpu_(0, /*has_dram=*/true) {}

  static FakeGpuOptions GpuOptions() {
    FakeGpuOptions options;
    options.name = "Fake GPU";
    options.uuid = "GPU-test-0";
    options.power_w = [](double, uint32_t) { return 150.0; };
    return options;
  }

  std::unique_ptr<DeviceExporter> Start(DeviceExporterOptions options) {
    options.listen_address = "127.0.0.1:0";
    StatusOr<std::unique_ptr<DeviceExporter>> exporter = DeviceExporter::Start(&metrics_, options);
    EXPECT_TRUE(exporter.ok()) << exporter.status();
    return exporter.ok() ? *std::move(exporter) : nullptr;
  }

  // Opens `n` connections that each sent the start of a request head.
  static std::vector<std::unique_ptr<RawClient>> HalfRequests(int port, int n) {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < n; ++i) {
      clients.push_back(std::make_unique<RawClient>(port));
      EXPECT_TRUE(clients.back()->connected());
      EXPECT_TRUE(clients.back()->Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
    }
    return clients;
  }

  FakeClock clock_;
  FakeGpu gpu_;
  FakeCpu cpu_;
  DeviceMetrics metrics_{{&gpu_}, {&cpu_}};
};

TEST_F(DeviceExporterTest, ScrapesAnswerTheExposerSeriesThenTheDeviceMetrics) {
  std::unique_ptr<DeviceExporter> exporter = Start({});
  ASSERT_NE(exporter, nullptr);
  HttpClient client;
  StatusOr<HttpClientResponse> first = client.Get(exporter->MetricsUrl());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->Header("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(first->Header("Content-Encoding"), "");
  // The fake clock stands still: the devices read the same every time.
  const std::string devices = metrics_.ScrapeText();
  EXPECT_EQ(first->body, kFirstExposerText + devices);

  // Compressed on request; the series count the scrape before.
  RawClient raw(exporter->port());
  ASSERT_TRUE(raw.Send(
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: deflate, GZip;q=0.5\r\n"
      "Connection: close\r\n\r\n"));
  ASSERT_TRUE(raw.ClosedWithin(30));
  const std::string& answer = raw.received();
  const size_t body_at = answer.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos) << answer;
  EXPECT_NE(answer.find("Content-Encoding: gzip\r\n"), std::string::npos) << answer;
  const std::string text = Gunzip(answer.substr(body_at + 4));
  EXPECT_EQ(SampleValue(text, "exposer_scrapes_total", {}), 1.0) << text;
  EXPECT_EQ(SampleValue(text, "exposer_transferred_bytes_total", {}),
            static_cast<double>(first->body.size()));
  EXPECT_EQ(SampleValue(text, "exposer_request_latencies_count", {}), 1.0);
  EXPECT_EQ(text.substr(text.find("# HELP zeus_")), devices);

  // gzip;q=0 refuses gzip.
  StatusOr<HttpClientResponse> plain =
      client.Send({"GET", exporter->MetricsUrl(), {{"Accept-Encoding", "br, gzip;q=0"}}, ""});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->Header("Content-Encoding"), "");
  EXPECT_EQ(SampleValue(plain->body, "exposer_scrapes_total", {}), 2.0);
}

TEST_F(DeviceExporterTest, OnlyGetAndHeadOfMetricsAreServed) {
  std::unique_ptr<DeviceExporter> exporter = Start({});
  ASSERT_NE(exporter, nullptr);
  const std::string base = "http://127.0.0.1:" + std::to_string(exporter->port());
  HttpClient client;
  StatusOr<HttpClientResponse> head = client.Send({"HEAD", base + "/metrics", {}, ""});
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  StatusOr<HttpClientResponse> other = client.Get(base + "/other");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->status, 404);
  StatusOr<HttpClientResponse> post = client.Send({"POST", base + "/metrics", {}, "x"});
  ASSERT_TRUE(post.ok()) << post.status();
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->Header("Allow"), "GET, HEAD");
}

// Issue 39 item 13: ten connections dribbling their request heads took both
// of civetweb's threads, and every scrape waited for them.
TEST_F(DeviceExporterTest, ClientsDribblingTheirHeadersDoNotDelayAScrape) {
  DeviceExporterOptions options;
  // Longer than the test: the dribblers are never cut off while it runs, so
  // the scrape cannot have waited for them.
  options.request_timeout = std::chrono::minutes(10);
  std::unique_ptr<DeviceExporter> exporter = Start(options);
  ASSERT_NE(exporter, nullptr);
  std::vector<std::unique_ptr<RawClient>> slow = HalfRequests(exporter->port(), 10);
  {
    HeaderDripper dripper(&slow);
    // Once every connection has dribbled a byte beyond its first send.
    while (dripper.rounds() < 2) std::this_thread::yield();

    HttpClientOptions client_options;
    client_options.timeout_s = 60;  // A bound for the old code's hang, not a target.
    HttpClient client(client_options);
    StatusOr<HttpClientResponse> scrape = client.Get(exporter->MetricsUrl());
    ASSERT_TRUE(scrape.ok()) << scrape.status();
    EXPECT_EQ(scrape->status, 200);
    EXPECT_EQ(SampleValue(scrape->body, "zeus_cpu_up", {{"socket", "0"}}), 1.0);
  }
  // The dribblers are still open and unanswered.
  for (auto& s : slow) {
    pollfd readable{s->fd(), POLLIN, 0};
    EXPECT_EQ(poll(&readable, 1, 0), 0);
  }
}

TEST_F(DeviceExporterTest, ARequestNotCompleteByTheDeadlineIsAnswered408HoweverItDribbles) {
  DeviceExporterOptions options;
  options.request_timeout = milliseconds(300);
  std::unique_ptr<DeviceExporter> exporter = Start(options);
  ASSERT_NE(exporter, nullptr);
  std::vector<std::unique_ptr<RawClient>> slow = HalfRequests(exporter->port(), 1);
  HeaderDripper dripper(&slow);
  // A byte every 50 ms resets no deadline: the whole request had 300 ms.
  EXPECT_TRUE(slow[0]->ClosedWithin(60));
  EXPECT_EQ(slow[0]->received().rfind("HTTP/1.1 408", 0), 0u) << slow[0]->received();
}

TEST_F(DeviceExporterTest, ConnectionsBeyondTheCapAreAnswered503AndTheirRoomComesBack) {
  DeviceExporterOptions options;
  options.max_connections = 3;
  options.request_timeout = std::chrono::minutes(10);
  std::unique_ptr<DeviceExporter> exporter = Start(options);
  ASSERT_NE(exporter, nullptr);
  std::vector<std::unique_ptr<RawClient>> held = HalfRequests(exporter->port(), 3);
  RawClient extra(exporter->port());
  ASSERT_TRUE(extra.connected());
  EXPECT_TRUE(extra.ClosedWithin(60));
  EXPECT_EQ(extra.received().rfind("HTTP/1.1 503", 0), 0u) << extra.received();
  EXPECT_NE(extra.received().find("too many open connections (3)"), std::string::npos);

  held.clear();
  // The closed connections' room comes back once the exporter saw them go.
  HttpClientOptions client_options;
  client_options.timeout_s = 60;
  int status = 0;
  for (int attempt = 0; attempt < 1000 && status != 200; ++attempt) {
    HttpClient client(client_options);
    StatusOr<HttpClientResponse> scrape = client.Get(exporter->MetricsUrl());
    ASSERT_TRUE(scrape.ok()) << scrape.status();
    status = scrape->status;
    if (status != 200) std::this_thread::yield();
  }
  EXPECT_EQ(status, 200);
}

TEST_F(DeviceExporterTest, OutOfRangeOptionsAreRefusedNamingThem) {
  DeviceExporterOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_connections = 0;
  StatusOr<std::unique_ptr<DeviceExporter>> refused = DeviceExporter::Start(&metrics_, options);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("exporter connections"), std::string::npos);
  options.max_connections = 1;
  options.request_timeout = milliseconds(0);
  refused = DeviceExporter::Start(&metrics_, options);
  EXPECT_NE(refused.status().message().find("exporter request timeout"), std::string::npos);
}

}  // namespace
}  // namespace zeus
