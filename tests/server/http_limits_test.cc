// The event-loop transport against idle, slow and oversized clients: idle
// keep-alive connections are closed after the idle timeout and hold no
// worker, a client dribbling its headers (slowloris) is cut off at the read
// deadline while others are served, heads and bodies over their limits are
// refused before being read. Timeouts are short so that each test takes
// about a second.

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/server_test_util.h"
#include "tests/testing/raw_socket.h"

namespace zeus::testing {
namespace {

using ::testing::HasSubstr;

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";

class HttpLimitsTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options) {
    std::string skip_reason;
    server_ = std::make_unique<TestServer>(NewDatabaseUrl(Backend::kSqlite, dir_, &skip_reason),
                                           std::move(options));
    ASSERT_TRUE(server_->ok()) << server_->error();
  }
  int port() const { return server_->port(); }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(HttpLimitsTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  HttpServerOptions options;
  options.idle_timeout_s = 0.3;
  Start(options);
  RawClient client(port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(kHealth));
  EXPECT_THAT(client.ReadUntil("\"status\"", 5), HasSubstr("HTTP/1.1 200"));
  // Kept alive after the answer, then closed by the server once idle.
  EXPECT_TRUE(client.ClosedWithin(10)) << "the idle connection was never closed";
}

TEST_F(HttpLimitsTest, ManyIdleConnectionsHoldNoWorker) {
  HttpServerOptions options;
  options.threads = 2;
  Start(options);
  // Far more idle keep-alive connections than workers, each after a request.
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(idle.back()->connected()) << i;
    ASSERT_TRUE(idle.back()->Send(kHealth));
  }
  for (auto& client : idle) ASSERT_THAT(client->ReadUntil("\"status\"", 10), HasSubstr("200"));
  TestClient fresh(port());
  EXPECT_EQ(Send(fresh, "GET", "/health").status, 200);
  // The idle ones still work.
  ASSERT_TRUE(idle.front()->Send(kHealth));
  EXPECT_THAT(idle.front()->ReadUntil("\"status\"\r\n", 1), HasSubstr("HTTP/1.1 200"));
}

TEST_F(HttpLimitsTest, SlowSenderIsCutOffAtTheReadDeadlineWhileOthersAreServed) {
  HttpServerOptions options;
  options.threads = 1;
  options.read_timeout_s = 1.0;
  options.idle_timeout_s = 30.0;
  Start(options);
  // Twenty clients dribble a header a byte every 50 ms (enough for 20 s).
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(slow.back()->Send("GET /health HTTP/1.1\r\nHost: x\r\n"));
  }
  std::atomic<bool> done{false};
  std::atomic<int> bytes_refused{0};
  std::thread dribbler([&] {
    for (int step = 0; step < 400 && !done; ++step) {
      for (auto& client : slow) {
        if (!client->Send("X")) ++bytes_refused;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  // Meanwhile others are answered.
  TestClient other(port());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Send(other, "GET", "/health").status, 200);
  // Each slow client is closed at its deadline, long before it could finish.
  for (auto& client : slow) EXPECT_TRUE(client->ClosedWithin(10));
  done = true;
  dribbler.join();
  for (auto& client : slow) EXPECT_EQ(client->received(), "");
  EXPECT_EQ(Send(other, "GET", "/health").status, 200);
}

TEST_F(HttpLimitsTest, HeadOverTheLimitIs431) {
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  Start(options);
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4000, 'a') +
                          "\r\n\r\n"));
  std::string answer = client.ReadUntil("}", 5);
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 431"));
  EXPECT_THAT(answer, HasSubstr("more than 1024 bytes"));
  EXPECT_TRUE(client.ClosedWithin(5));
  // Within the limit it is served.
  RawClient small(port());
  ASSERT_TRUE(small.Send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(500, 'a') +
                         "\r\n\r\n"));
  EXPECT_THAT(small.ReadUntil("}", 5), HasSubstr("HTTP/1.1 200"));
}

TEST_F(HttpLimitsTest, BodyOverTheLimitIs413BeforeItIsSent) {
  HttpServerOptions options;
  options.max_body_bytes = 100;
  Start(options);
  // Only the head is sent: the answer cannot wait for the body.
  RawClient client(port());
  ASSERT_TRUE(
      client.Send("POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: 1000000\r\n\r\n"));
  std::string answer = client.ReadUntil("}", 5);
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(answer, HasSubstr("more than 100 bytes"));
  // A chunked body is counted as it comes.
  RawClient chunked(port());
  ASSERT_TRUE(chunked.Send("POST /jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                           std::string("c8\r\n") + std::string(200, '{') + "\r\n0\r\n\r\n"));
  EXPECT_THAT(chunked.ReadUntil("}", 5), HasSubstr("HTTP/1.1 413"));
}

TEST_F(HttpLimitsTest, MalformedRequestIs400AndTheConnectionCloses) {
  Start(HttpServerOptions{});
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /health HTTP/9\r\n\r\n"));
  EXPECT_THAT(client.ReadUntil("}", 5), HasSubstr("HTTP/1.1 400"));
  EXPECT_TRUE(client.ClosedWithin(5));
}

TEST_F(HttpLimitsTest, PipelinedRequestsAreAnsweredInOrder) {
  Start(HttpServerOptions{});
  RawClient client(port());
  ASSERT_TRUE(client.Send(kHealth + "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" + kHealth));
  auto count = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = text.find("HTTP/1.1 "); at != std::string::npos;
         at = text.find("HTTP/1.1 ", at + 1)) {
      ++n;
    }
    return n;
  };
  for (int i = 0; i < 50 && count(client.received()) < 3; ++i) client.ReadUntil("\x01", 0.1);
  const std::string& answers = client.received();
  ASSERT_EQ(count(answers), 3u) << answers;
  const size_t first = answers.find("HTTP/1.1 ");
  const size_t second = answers.find("HTTP/1.1 ", first + 1);
  const size_t third = answers.find("HTTP/1.1 ", second + 1);
  EXPECT_EQ(answers.substr(first, 12), "HTTP/1.1 200");
  EXPECT_EQ(answers.substr(second, 12), "HTTP/1.1 404");
  EXPECT_EQ(answers.substr(third, 12), "HTTP/1.1 200");
}

TEST_F(HttpLimitsTest, StopClosesIdleConnections) {
  Start(HttpServerOptions{});
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 50; ++i) {
    idle.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(idle.back()->Send(kHealth));
    ASSERT_THAT(idle.back()->ReadUntil("\"status\"", 5), HasSubstr("200"));
  }
  server_.reset();  // Stop() and join.
  for (auto& client : idle) EXPECT_TRUE(client->ClosedWithin(1));
}

}  // namespace
}  // namespace zeus::testing
