// The HTTP layer's transport over loopback TCP and a Unix socket, driven by
// raw sockets: exact answer bytes in both wire profiles (the service's and
// the daemon's), limits and deadlines, connection caps, peer credentials,
// streamed answers and a graceful stop.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/http/message.h"
#include "zeus/http/transport.h"

#include "tests/testing/raw_socket.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;
using testing::RawClient;
using ::testing::StartsWith;

HttpResponse Refusal(const HttpRequest&, HttpRefusal refusal, const std::string& detail) {
  switch (refusal) {
    case HttpRefusal::kHeadTooLarge:
      return HttpResponse(431, "head");
    case HttpRefusal::kBodyTooLarge:
      return HttpResponse(413, "body");
    case HttpRefusal::kTimeout:
      return HttpResponse(408, "late");
    case HttpRefusal::kTooManyConnections:
      return HttpResponse(503, "full");
    case HttpRefusal::kMalformed:
      break;
  }
  return HttpResponse(400, "bad: " + detail);
}

// Echoes method, decoded path and parameters as text.
HttpResponse Echo(const HttpRequest& req) {
  std::string body = req.method + " " + req.path;
  for (const auto& [name, value] : req.params) body += " " + name + "=" + value;
  if (!req.body.empty()) body += " body=" + req.body;
  return HttpResponse(200, body, "text/plain");
}

class Server {
 public:
  explicit Server(HttpTransportOptions options, HttpRequestCallback handler = Echo)
      : transport_(std::move(options), std::move(handler), Refusal) {
    Status started = transport_.Start();
    EXPECT_TRUE(started.ok()) << started.ToString();
  }
  HttpTransport& transport() { return transport_; }
  int port() const { return transport_.tcp_port(); }

 private:
  HttpTransport transport_;
};

TEST(HttpTransportTest, AnswersInTheServiceProfileAndKeepsTheConnection) {
  Server server(HttpTransportOptions{});
  RawClient client(server.port());
  ASSERT_TRUE(client.connected());
  client.Send("GET /a%20b?x=1+2&y=%41 HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(client.ReadUntil("x=1 2 y=A", 5),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n\r\n"
            "GET /a b x=1 2 y=A");
  // HEAD: the GET's length, no body; HTTP/1.0 is answered 1.1.
  client.Send("HEAD /h HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_THAT(
      client.ReadUntil("Content-Length: 7\r\n\r\n", 5),
      HasSubstr("y=AHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\r\n"));
  EXPECT_FALSE(client.ClosedWithin(0.2));
  EXPECT_EQ(server.transport().connections(), 1u);
}

TEST(HttpTransportTest, DaemonProfileNamesTheServerEchoesTheVersionAndKeepsHeadBodies) {
  HttpTransportOptions options;
  options.server_header = "zeusd (zeus daemon)";
  options.echo_http_version = true;
  options.omit_body_for_head = false;
  Server server(options);
  RawClient client(server.port());
  client.Send("HEAD /h HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(client.ReadUntil("HEAD /h", 5),
            "HTTP/1.0 200 OK\r\nServer: zeusd (zeus daemon)\r\nContent-Type: text/plain\r\n"
            "Connection: keep-alive\r\nContent-Length: 7\r\n\r\nHEAD /h");
}

TEST(HttpTransportTest, PathsAreDecodedUnlessToldToKeepThemAsSent) {
  HttpTransportOptions options;
  options.decode_path = false;
  Server server(options, [](const HttpRequest& req) {
    return HttpResponse(200, req.path + "|" + req.target + "|" + req.query, "text/plain");
  });
  RawClient client(server.port());
  client.Send("GET /ti%6De+x?a=%41 HTTP/1.1\r\n\r\n");
  EXPECT_THAT(client.ReadUntil("a=%41", 5), HasSubstr("\r\n\r\n/ti%6De+x|/ti%6De+x?a=%41|a=%41"));
}

TEST(HttpTransportTest, OversizedHeadsAndBodiesAndGarbageAreRefusedAndClosed) {
  HttpTransportOptions options;
  options.max_header_bytes = 256;
  options.max_body_bytes = 8;
  Server server(options);
  {
    RawClient client(server.port());
    client.Send("GET / HTTP/1.1\r\nX: " + std::string(1000, 'a') + "\r\n\r\n");
    EXPECT_TRUE(client.ClosedWithin(5));
    EXPECT_THAT(client.received(), StartsWith("HTTP/1.1 431 "));
    EXPECT_THAT(client.received(), HasSubstr("Connection: close\r\n"));
  }
  {
    RawClient client(server.port());
    client.Send("POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n");
    EXPECT_TRUE(client.ClosedWithin(5));
    EXPECT_THAT(client.received(), StartsWith("HTTP/1.1 413 "));
  }
  {
    RawClient client(server.port());
    client.Send("HELLO\r\n\r\n");
    EXPECT_TRUE(client.ClosedWithin(5));
    EXPECT_THAT(client.received(), StartsWith("HTTP/1.1 400 "));
    EXPECT_THAT(client.received(), HasSubstr("bad: "));
  }
  // 100-continue, then the body.
  RawClient client(server.port());
  client.Send("POST /p HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(client.ReadUntil("\r\n\r\n", 5), "HTTP/1.1 100 Continue\r\n\r\n");
  client.Send("ok");
  EXPECT_THAT(client.ReadUntil("body=ok", 5), HasSubstr("POST /p body=ok"));
}

TEST(HttpTransportTest, SlowRequestsAreClosedOrAnswered408AndIdleOnesClosedSilently) {
  HttpTransportOptions options;
  options.read_timeout = std::chrono::milliseconds(200);
  options.idle_timeout = std::chrono::milliseconds(200);
  {
    Server server(options);
    RawClient slow(server.port());
    slow.Send("GET / HTTP/1.1\r\n");
    EXPECT_TRUE(slow.ClosedWithin(5));
    EXPECT_EQ(slow.received(), "");
  }
  options.answer_read_timeout = true;
  options.read_deadline_includes_idle = true;
  options.drain_after_refusal = false;
  Server server(options);
  RawClient slow(server.port());
  slow.Send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab");
  EXPECT_TRUE(slow.ClosedWithin(5));
  EXPECT_THAT(slow.received(), StartsWith("HTTP/1.1 408 "));
  EXPECT_THAT(slow.received(), HasSubstr("late"));
  RawClient idle(server.port());
  EXPECT_TRUE(idle.ClosedWithin(5));
  EXPECT_EQ(idle.received(), "");
}

TEST(HttpTransportTest, ConnectionsBeyondTheCapAre503AndClosed) {
  HttpTransportOptions options;
  options.max_connections = 1;
  Server server(options);
  RawClient first(server.port());
  first.Send("GET /1 HTTP/1.1\r\n\r\n");
  first.ReadUntil("GET /1", 5);
  RawClient second(server.port());
  EXPECT_TRUE(second.ClosedWithin(5));
  EXPECT_THAT(second.received(), StartsWith("HTTP/1.1 503 "));
  EXPECT_THAT(second.received(), HasSubstr("full"));
  first.Send("GET /2 HTTP/1.1\r\n\r\n");
  EXPECT_THAT(first.ReadUntil("GET /2", 5), HasSubstr("GET /2"));
}

TEST(HttpTransportTest, UnixSocketCarriesPeerCredentialsModeAndIsRemovedOnStop) {
  testing::TempDir dir;
  HttpTransportOptions options;
  options.tcp_port = -1;
  options.unix_socket_path = dir.path() + "/sub/http.sock";
  options.unix_socket_mode = 0600;
  std::string claimed;
  options.claim_unix_socket = [&claimed](const std::string& path) {
    claimed = path;
    return Status::Ok();
  };
  HttpTransport transport(
      options,
      [](const HttpRequest& req) {
        return HttpResponse(200,
                            std::to_string(req.peer.local) + " " + std::to_string(req.peer.pid) +
                                " " + std::to_string(req.peer.uid) + " " + req.peer.description,
                            "text/plain");
      },
      Refusal);
  ASSERT_TRUE(transport.Start().ok());
  EXPECT_EQ(claimed, options.unix_socket_path);
  EXPECT_EQ(transport.tcp_port(), -1);
  struct stat st {};
  ASSERT_EQ(stat(options.unix_socket_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  RawClient client(options.unix_socket_path);
  client.Send("GET /who HTTP/1.1\r\n\r\n");
  const std::string expected = "1 " + std::to_string(getpid()) + " " + std::to_string(getuid()) +
                               " pid " + std::to_string(getpid());
  EXPECT_THAT(client.ReadUntil(expected, 5), HasSubstr(expected));
  transport.Stop();
  EXPECT_NE(stat(options.unix_socket_path.c_str(), &st), 0);
}

TEST(HttpTransportTest, TcpPeerIsDescribedByAddress) {
  Server server(HttpTransportOptions{}, [](const HttpRequest& req) {
    return HttpResponse(200, req.remote_addr + "|" + req.peer.description, "text/plain");
  });
  RawClient client(server.port());
  client.Send("GET / HTTP/1.1\r\n\r\n");
  EXPECT_THAT(client.ReadUntil("TCP client at 127.0.0.1:", 5),
              HasSubstr("127.0.0.1|a TCP client at 127.0.0.1:"));
}

// A stream whose events the test pushes.
class TestStream : public HttpEventStream {
 public:
  void SetWake(std::function<void()> wake) override {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_ = std::move(wake);
  }
  std::string TakeEvents() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(events_, "");
  }
  bool Ended() const override { return ended_; }
  void Push(const std::string& event, bool end) {
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_ += event;
      ended_ = end;
      wake = wake_;
    }
    if (wake) wake();
  }

 private:
  std::mutex mutex_;
  std::string events_;
  std::atomic<bool> ended_{false};
  std::function<void()> wake_;
};

TEST(HttpTransportTest, StreamsAreChunkedUntilTheyEndThenClosed) {
  auto stream = std::make_shared<TestStream>();
  HttpTransportOptions options;
  options.server_header = "zeusd (zeus daemon)";
  options.echo_http_version = true;
  Server server(options, [stream](const HttpRequest&) {
    HttpResponse response;
    response.content_type = "text/event-stream";
    response.stream = stream;
    return response;
  });
  RawClient client(server.port());
  client.Send("GET /stream HTTP/1.1\r\n\r\n");
  EXPECT_EQ(client.ReadUntil("\r\n\r\n", 5),
            "HTTP/1.1 200 OK\r\nServer: zeusd (zeus daemon)\r\nContent-Type: text/event-stream\r\n"
            "Cache-Control: no-cache\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(server.transport().open_streams(), 1);
  stream->Push("data: 1\n\n", false);
  EXPECT_THAT(client.ReadUntil("data: 1\n\n\r\n", 5), HasSubstr("\r\n\r\n9\r\ndata: 1\n\n\r\n"));
  stream->Push("data: 2\n\n", true);
  EXPECT_TRUE(client.ClosedWithin(5));
  EXPECT_THAT(client.received(), HasSubstr("9\r\ndata: 2\n\n\r\n0\r\n\r\n"));
}

TEST(HttpTransportTest, StopAnswersTheRequestInFlightOnAWorker) {
  HttpTransportOptions options;
  options.worker_threads = 2;
  std::atomic<bool> started{false};
  Server server(options, [&started](const HttpRequest& req) {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return Echo(req);
  });
  RawClient busy(server.port());
  RawClient idle(server.port());
  busy.Send("GET /slow HTTP/1.1\r\n\r\n");
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.transport().Stop();
  EXPECT_THAT(busy.received() + busy.ReadUntil("GET /slow", 5), HasSubstr("200 OK"));
  EXPECT_TRUE(idle.ClosedWithin(5));
  EXPECT_EQ(server.transport().connections(), 0u);
}

TEST(HttpTransportTest, BindingABusyPortIsUnavailableNamingTheAddress) {
  Server first(HttpTransportOptions{});
  HttpTransportOptions options;
  options.name = "zeus serve";
  options.tcp_port = first.port();
  HttpTransport second(options, Echo, Refusal);
  Status status = second.Start();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(),
              HasSubstr("cannot bind 127.0.0.1:" + std::to_string(first.port()) + ": "));
  EXPECT_THAT(status.message(), HasSubstr("zeus serve never shares a port"));
}

}  // namespace
}  // namespace zeus
