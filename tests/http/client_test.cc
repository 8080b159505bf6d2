// HttpClient against servers written here: a scripted loopback server on raw
// sockets (TCP on 127.0.0.1 or a Unix socket) that answers byte for byte
// what a test tells it to, and a TLS server (Boost.Asio SSL) with a
// self-signed certificate made at test time through the OpenSSL API.

#include "zeus/http/client.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

struct RawRequest {
  std::string method;
  std::string target;
  std::string head;  // Request line and header fields.
  std::string body;
};

// One accepted connection of a ScriptedServer.
class ServerConnection {
 public:
  explicit ServerConnection(int fd) : fd_(fd) {}

  // The next request (its body read by Content-Length), or nullopt when the
  // client closed the connection.
  std::optional<RawRequest> Read() {
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    RawRequest request;
    request.head = pending_.substr(0, end);
    pending_.erase(0, end + 4);
    const size_t space = request.head.find(' ');
    request.method = request.head.substr(0, space);
    request.target = request.head.substr(space + 1, request.head.find(' ', space + 1) - space - 1);
    size_t length = 0;
    const size_t field = Lower(request.head).find("\r\ncontent-length:");
    if (field != std::string::npos) length = std::stoul(request.head.substr(field + 17));
    while (pending_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    request.body = pending_.substr(0, length);
    pending_.erase(0, length);
    return request;
  }

  void Write(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  // Waits until the client closes the connection (or the server stops).
  void WaitForClose() {
    while (Fill()) {
    }
  }

 private:
  static std::string Lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  }

  bool Fill() {
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) return false;
    pending_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  std::string pending_;
};

// "HTTP/1.1 <status> X" with Content-Length and `extra` header lines.
std::string Answer(int status, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

// Accepts connections and runs the test's handler on each, one thread per
// connection.
class ScriptedServer {
 public:
  using Handler = std::function<void(ServerConnection&)>;

  // On 127.0.0.1, a free port.
  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ZEUS_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    socklen_t length = sizeof(addr);
    ZEUS_CHECK(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length) == 0);
    port_ = ntohs(addr.sin_port);
    Start();
  }

  // On the Unix socket `path`.
  ScriptedServer(const std::string& path, Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ZEUS_CHECK(path.size() < sizeof(addr.sun_path));
    path.copy(addr.sun_path, path.size());
    ZEUS_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    Start();
  }

  ~ScriptedServer() {
    stop_ = true;
    accept_thread_.join();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& thread : connection_threads_) thread.join();
    close(listen_fd_);
  }

  std::string Url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(port_) + target;
  }
  int connections() const { return connections_; }

  // Waits (up to 5 s) until `n` connections have been closed by the server.
  bool WaitForClosed(int n) const {
    for (int i = 0; i < 500 && closed_ < n; ++i) std::this_thread::sleep_for(milliseconds(10));
    return closed_ >= n;
  }

 private:
  void Start() {
    ZEUS_CHECK(listen(listen_fd_, 16) == 0);
    accept_thread_ = std::thread([this] { Accept(); });
  }

  void Accept() {
    while (!stop_) {
      pollfd ready{listen_fd_, POLLIN, 0};
      if (poll(&ready, 1, 20) <= 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      std::lock_guard<std::mutex> lock(mutex_);
      open_fds_.push_back(fd);
      connection_threads_.emplace_back([this, fd] {
        ServerConnection connection(fd);
        handler_(connection);
        std::lock_guard<std::mutex> done(mutex_);
        open_fds_.erase(std::find(open_fds_.begin(), open_fds_.end(), fd));
        close(fd);
        ++closed_;
      });
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  std::mutex mutex_;
  std::vector<int> open_fds_;                    // GUARDED_BY(mutex_)
  std::vector<std::thread> connection_threads_;  // GUARDED_BY(mutex_) until stop_
};

// Answers every request on a connection with "<method> <target> <body>".
void Echo(ServerConnection& connection) {
  while (std::optional<RawRequest> request = connection.Read()) {
    connection.Write(Answer(200, request->method + " " + request->target + " " + request->body));
  }
}

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ZEUS_CHECK(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t length = sizeof(addr);
  ZEUS_CHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0);
  close(fd);
  return ntohs(addr.sin_port);
}

HttpClientOptions Quick() {
  HttpClientOptions options;
  options.timeout_s = 5;
  return options;
}

TEST(HttpClientTest, SendsRequestsOverTcpAndReturnsEveryStatus) {
  std::vector<std::string> heads;
  ScriptedServer server([&heads](ServerConnection& connection) {
    while (std::optional<RawRequest> request = connection.Read()) {
      heads.push_back(request->head);
      const int status = request->target == "/missing" ? 404 : 200;
      connection.Write(Answer(status, request->method + " " + request->body,
                              "Content-Type: text/plain\r\nX-Twice: 1\r\nX-Twice: 2\r\n"));
    }
  });
  HttpClient client(Quick());
  ZEUS_ASSERT_OK_AND_ASSIGN(
      HttpClientResponse posted,
      client.Send({"POST", server.Url("/jobs?x=1"), {{"Authorization", "Bearer t"}}, "{}"}));
  EXPECT_EQ(posted.status, 200);
  EXPECT_EQ(posted.body, "POST {}");
  EXPECT_EQ(posted.Header("content-type"), "text/plain");
  EXPECT_EQ(posted.Header("X-TWICE"), "1");
  EXPECT_EQ(posted.Header("X-None"), "");
  EXPECT_EQ(posted.url, server.Url("/jobs?x=1"));
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse missing, client.Get(server.Url("/missing")));
  EXPECT_EQ(missing.status, 404);
  ASSERT_EQ(heads.size(), 2u);
  EXPECT_THAT(heads[0], HasSubstr("POST /jobs?x=1 HTTP/1.1\r\n"));
  EXPECT_THAT(heads[0], HasSubstr("\r\nHost: 127.0.0.1:"));
  EXPECT_THAT(heads[0], HasSubstr("\r\nAuthorization: Bearer t"));
  EXPECT_THAT(heads[0], HasSubstr("\r\nContent-Length: 2"));
  EXPECT_THAT(heads[0], HasSubstr("\r\nUser-Agent: zeus"));
  EXPECT_THAT(heads[1], HasSubstr("GET /missing HTTP/1.1\r\n"));
}

TEST(HttpClientTest, KeepAliveReusesOneConnectionAndCloseUsesOneEach) {
  ScriptedServer server(Echo);
  HttpClient client(Quick());
  for (int i = 0; i < 3; ++i) {
    ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse answer,
                              client.Send({"POST", server.Url("/r"), {}, std::to_string(i)}));
    EXPECT_EQ(answer.body, "POST /r " + std::to_string(i));
  }
  EXPECT_EQ(client.connections_opened(), 1u);
  EXPECT_EQ(server.connections(), 1);

  HttpClientOptions options = Quick();
  options.keep_alive = false;
  HttpClient closing(options);
  for (int i = 0; i < 3; ++i) ZEUS_ASSERT_OK(closing.Get(server.Url("/c")).status());
  EXPECT_EQ(closing.connections_opened(), 3u);
}

TEST(HttpClientTest, KeptConnectionTheServerClosedIsNotReused) {
  // Answers one request per connection without saying so, as a server whose
  // idle timeout closed a kept-alive connection.
  ScriptedServer server([](ServerConnection& connection) {
    if (std::optional<RawRequest> request = connection.Read()) {
      connection.Write(Answer(200, request->body));
    }
  });
  HttpClient client(Quick());
  for (int i = 0; i < 3; ++i) {
    ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse answer,
                              client.Send({"POST", server.Url("/"), {}, std::to_string(i)}));
    EXPECT_EQ(answer.body, std::to_string(i));
    // The server's close has arrived before the next request.
    ASSERT_TRUE(server.WaitForClosed(i + 1));
  }
  EXPECT_EQ(client.connections_opened(), 3u);
  EXPECT_EQ(server.connections(), 3);
}

TEST(HttpClientTest, ConnectionClosedAsARequestGoesOutRetriesOnlyIdempotentOnes) {
  // Answers the first request of a connection; closes it on the second.
  ScriptedServer server([](ServerConnection& connection) {
    if (std::optional<RawRequest> first = connection.Read()) {
      connection.Write(Answer(200, first->method + " " + first->target));
      connection.Read();
    }
  });
  HttpClient client(Quick());
  ZEUS_ASSERT_OK(client.Get(server.Url("/a")).status());
  // Sent on the kept connection, which the server closes: sent again.
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse again, client.Get(server.Url("/b")));
  EXPECT_EQ(again.body, "GET /b");
  EXPECT_EQ(client.connections_opened(), 2u);
  // A POST may have been acted on: not sent again.
  StatusOr<HttpClientResponse> post = client.Send({"POST", server.Url("/c"), {}, "x"});
  EXPECT_EQ(post.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(post.status().message(),
              HasSubstr("POST " + server.Url("/c") + ": connection closed waiting for the answer"));
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST(HttpClientTest, UnixSocketCarriesTheUrlsHostAndTarget) {
  testing::TempDir dir;
  const std::string path = dir.File("http.sock");
  std::string head;
  ScriptedServer server(path, [&head](ServerConnection& connection) {
    while (std::optional<RawRequest> request = connection.Read()) {
      head = request->head;
      connection.Write(Answer(200, "over unix"));
    }
  });
  HttpClientOptions options = Quick();
  options.unix_socket_path = path;
  HttpClient client(options);
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse answer, client.Get("http://zeusd/discover"));
  EXPECT_EQ(answer.body, "over unix");
  EXPECT_THAT(head, HasSubstr("GET /discover HTTP/1.1\r\n"));
  EXPECT_THAT(head, HasSubstr("\r\nHost: zeusd"));
  ZEUS_ASSERT_OK(client.Get("http://zeusd/again").status());
  EXPECT_EQ(client.connections_opened(), 1u);

  options.unix_socket_path = dir.File("nobody.sock");
  StatusOr<HttpClientResponse> nobody = HttpClient(options).Get("http://zeusd/discover");
  EXPECT_EQ(nobody.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(nobody.status().message(),
              HasSubstr("GET http://zeusd/discover via unix socket " + dir.File("nobody.sock") +
                        ": cannot connect: No such file or directory"));
  StatusOr<HttpClientResponse> tls = HttpClient(options).Get("https://zeusd/discover");
  EXPECT_EQ(tls.status().code(), StatusCode::kInvalidArgument);
}

TEST(HttpClientTest, ConnectionRefusedNamesTheUrl) {
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x";
  StatusOr<HttpClientResponse> answer = HttpClient(Quick()).Get(url);
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(answer.status().message(), "GET " + url + ": connection refused");
}

TEST(HttpClientTest, DeadlineExpiresOnAServerThatNeverAnswers) {
  ScriptedServer server([](ServerConnection& connection) {
    connection.Read();
    connection.WaitForClose();
  });
  HttpClientOptions options;
  options.timeout_s = 0.3;
  HttpClient client(options);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<HttpClientResponse> answer = client.Get(server.Url("/slow"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(answer.status().message(),
            "GET " + server.Url("/slow") + ": timed out after 0.3 s waiting for the answer");
  EXPECT_GE(elapsed, milliseconds(290));
  EXPECT_LT(elapsed, milliseconds(3000));
}

TEST(HttpClientTest, IdleTimeoutEndsAStalledTransferBeforeTheDeadline) {
  ScriptedServer server([](ServerConnection& connection) {
    connection.Read();
    connection.Write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf");
    connection.WaitForClose();
  });
  HttpClientOptions options;
  options.timeout_s = 30;
  options.idle_timeout_s = 0.2;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<HttpClientResponse> answer = HttpClient(options).Get(server.Url("/stall"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(answer.status().message(), HasSubstr("stalled: no data for 0.2 s"));
}

TEST(HttpClientTest, BodyLargerThanTheBoundIsRefused) {
  ScriptedServer server([](ServerConnection& connection) {
    while (std::optional<RawRequest> request = connection.Read()) {
      if (request->target == "/chunked") {
        std::string chunks = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (int i = 0; i < 8; ++i) chunks += "10\r\n" + std::string(16, 'x') + "\r\n";
        connection.Write(chunks + "0\r\n\r\n");
      } else {
        connection.Write(Answer(200, std::string(request->target == "/big" ? 101 : 100, 'x')));
      }
    }
  });
  HttpClientOptions options = Quick();
  options.max_body_bytes = 100;
  HttpClient client(options);
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse fits, client.Get(server.Url("/fits")));
  EXPECT_EQ(fits.body.size(), 100u);
  StatusOr<HttpClientResponse> big = client.Get(server.Url("/big"));
  EXPECT_EQ(big.status().code(), StatusCode::kIoError);
  EXPECT_EQ(big.status().message(),
            "GET " + server.Url("/big") + ": answer body larger than the limit of 100 bytes");
  // 128 bytes in chunks: refused as they arrive.
  StatusOr<HttpClientResponse> chunked = client.Get(server.Url("/chunked"));
  EXPECT_EQ(chunked.status().code(), StatusCode::kIoError);
  EXPECT_THAT(chunked.status().message(), HasSubstr("larger than the limit of 100 bytes"));
}

TEST(HttpClientTest, ChunkedAnswersAreDecodedWithProgress) {
  ScriptedServer server([](ServerConnection& connection) {
    connection.Read();
    connection.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    std::this_thread::sleep_for(milliseconds(50));
    connection.Write("7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n");
  });
  std::vector<uint64_t> progress;
  HttpClientOptions options = Quick();
  options.progress = [&progress](uint64_t received, uint64_t total) {
    EXPECT_EQ(total, 0u);  // No Content-Length.
    progress.push_back(received);
  };
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse answer, HttpClient(options).Get(server.Url("/")));
  EXPECT_EQ(answer.body, "hello, world");
  ASSERT_GE(progress.size(), 2u);
  EXPECT_EQ(progress.front(), 5u);
  EXPECT_EQ(progress.back(), 12u);
}

TEST(HttpClientTest, ProgressReportsTheContentLength) {
  ScriptedServer server([](ServerConnection& connection) {
    connection.Read();
    connection.Write("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nfour");
    std::this_thread::sleep_for(milliseconds(50));
    connection.Write("more");
  });
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  HttpClientOptions options = Quick();
  options.progress = [&progress](uint64_t received, uint64_t total) {
    progress.emplace_back(received, total);
  };
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse answer, HttpClient(options).Get(server.Url("/")));
  EXPECT_EQ(answer.body, "fourmore");
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0], std::make_pair(uint64_t{4}, uint64_t{8}));
  EXPECT_EQ(progress[1], std::make_pair(uint64_t{8}, uint64_t{8}));
}

TEST(HttpClientTest, FollowsRedirectsUpToTheLimit) {
  std::vector<std::string> heads;
  ScriptedServer server([&heads](ServerConnection& connection) {
    while (std::optional<RawRequest> request = connection.Read()) {
      heads.push_back(request->head);
      if (request->target == "/a") {
        connection.Write(Answer(302, "", "Location: /dir/b\r\n"));
      } else if (request->target == "/dir/b") {
        connection.Write(Answer(307, "", "Location: c?q=1\r\n"));
      } else if (request->target == "/loop") {
        connection.Write(Answer(301, "", "Location: /loop\r\n"));
      } else if (request->target == "/see-other") {
        connection.Write(Answer(303, "", "Location: /dir/c\r\n"));
      } else {
        connection.Write(
            Answer(200, request->method + " " + request->target + " " + request->body));
      }
    }
  });
  HttpClientOptions options = Quick();
  options.max_redirects = 3;
  HttpClient client(options);
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse followed, client.Get(server.Url("/a")));
  EXPECT_EQ(followed.status, 200);
  EXPECT_EQ(followed.body, "GET /dir/c?q=1 ");
  EXPECT_EQ(followed.url, server.Url("/dir/c?q=1"));
  // 307 keeps the method and body; 303 turns them into a GET.
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse kept,
                            client.Send({"POST", server.Url("/dir/b"), {}, "data"}));
  EXPECT_EQ(kept.body, "POST /dir/c?q=1 data");
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse other,
                            client.Send({"POST", server.Url("/see-other"), {}, "data"}));
  EXPECT_EQ(other.body, "GET /dir/c ");

  StatusOr<HttpClientResponse> loop = client.Get(server.Url("/loop"));
  EXPECT_EQ(loop.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(loop.status().message(), HasSubstr("more than 3 redirects (the last to /loop)"));

  // Without following, the 3xx itself is the answer.
  ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse raw, HttpClient(Quick()).Get(server.Url("/a")));
  EXPECT_EQ(raw.status, 302);
  EXPECT_EQ(raw.Header("Location"), "/dir/b");
}

TEST(HttpClientTest, RedirectToAnotherSchemeIsRefusedNamingIt) {
  ScriptedServer server([](ServerConnection& connection) {
    while (std::optional<RawRequest> request = connection.Read()) {
      const std::string to = request->target == "/file" ? "file:///etc/passwd" : "gopher://x/1";
      connection.Write(Answer(302, "", "Location: " + to + "\r\n"));
    }
  });
  HttpClientOptions options = Quick();
  options.max_redirects = 10;
  HttpClient client(options);
  StatusOr<HttpClientResponse> file = client.Get(server.Url("/file"));
  EXPECT_EQ(file.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(file.status().message(),
              HasSubstr("HTTP 302 redirect to unsupported scheme 'file' (file:///etc/passwd); "
                        "only http and https are followed"));
  StatusOr<HttpClientResponse> gopher = client.Get(server.Url("/gopher"));
  EXPECT_THAT(gopher.status().message(), HasSubstr("unsupported scheme 'gopher'"));
}

TEST(HttpClientTest, RedirectToAnotherOriginDropsTheAuthorization) {
  std::string seen;
  ScriptedServer target([&seen](ServerConnection& connection) {
    if (std::optional<RawRequest> request = connection.Read()) {
      seen = request->head;
      connection.Write(Answer(200, "there"));
    }
  });
  ScriptedServer origin([&target](ServerConnection& connection) {
    if (connection.Read()) {
      connection.Write(Answer(302, "", "Location: " + target.Url("/t") + "\r\n"));
    }
  });
  HttpClientOptions options = Quick();
  options.max_redirects = 1;
  ZEUS_ASSERT_OK_AND_ASSIGN(
      HttpClientResponse answer,
      HttpClient(options).Send({"GET", origin.Url("/"), {{"Authorization", "Bearer t"}}, ""}));
  EXPECT_EQ(answer.body, "there");
  EXPECT_THAT(seen, HasSubstr("GET /t HTTP/1.1"));
  EXPECT_THAT(seen, ::testing::Not(HasSubstr("Authorization")));
}

TEST(HttpClientTest, MalformedOrTruncatedAnswersAreUnavailable) {
  ScriptedServer server([](ServerConnection& connection) {
    std::optional<RawRequest> request = connection.Read();
    if (!request) return;
    if (request->target == "/garbage") {
      connection.Write("SSH-2.0-OpenSSH\r\n\r\n");
    } else if (request->target == "/bad-length") {
      connection.Write("HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n");
    } else if (request->target == "/truncated") {
      connection.Write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    }
    // "/nothing": closed without a byte.
  });
  HttpClient client(Quick());
  StatusOr<HttpClientResponse> garbage = client.Get(server.Url("/garbage"));
  EXPECT_EQ(garbage.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(garbage.status().message(),
              HasSubstr("GET " + server.Url("/garbage") + ": malformed answer: "));
  StatusOr<HttpClientResponse> bad_length = client.Get(server.Url("/bad-length"));
  EXPECT_EQ(bad_length.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(bad_length.status().message(), HasSubstr("malformed answer: "));
  StatusOr<HttpClientResponse> truncated = client.Get(server.Url("/truncated"));
  EXPECT_EQ(truncated.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(truncated.status().message(),
              HasSubstr("connection closed waiting for the answer (no complete answer)"));
  StatusOr<HttpClientResponse> nothing = client.Get(server.Url("/nothing"));
  EXPECT_EQ(nothing.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(nothing.status().message(), HasSubstr("connection closed"));
}

TEST(HttpClientTest, BadUrlsAreInvalidArguments) {
  HttpClient client(Quick());
  for (const char* bad :
       {"127.0.0.1/x", "ftp://host/x", "http://", "http://:80/", "http://h:0/", "http://h:99999/",
        "http://h:x/", "http://a b/", "http://u@h/", "http://[::1/"}) {
    StatusOr<HttpClientResponse> answer = client.Get(bad);
    EXPECT_EQ(answer.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(answer.status().message(), HasSubstr(bad));
  }
  StatusOr<HttpClientResponse> split =
      client.Send({"GET", "http://127.0.0.1:1/", {{"X-Evil", "a\r\nHost: b"}}, ""});
  EXPECT_EQ(split.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(split.status().message(), HasSubstr("header field 'X-Evil'"));
  StatusOr<HttpClientResponse> method = client.Send({"GET /x HTTP/1.0\r\n", "http://h/", {}, ""});
  EXPECT_EQ(method.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(method.status().message(), HasSubstr("bad method"));
  HttpClientOptions long_path = Quick();
  long_path.unix_socket_path = "/" + std::string(200, 's');
  StatusOr<HttpClientResponse> too_long = HttpClient(long_path).Get("http://zeusd/");
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(too_long.status().message(), HasSubstr("socket path longer than 107 bytes"));
  StatusOr<HttpClientResponse> https = client.Get("https://127.0.0.1:1/");
  EXPECT_EQ(https.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(https.status().message(), HasSubstr("https needs a TlsContext"));
}

// A key and a self-signed certificate for "localhost" (and, with
// `with_ip`, 127.0.0.1), both PEM.
struct SelfSigned {
  std::string certificate;
  std::string key;
};

SelfSigned MakeSelfSigned(bool with_ip) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ZEUS_CHECK(key != nullptr);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  const std::string names = with_ip ? "DNS:localhost,IP:127.0.0.1" : "DNS:localhost";
  for (const auto& [nid, value] : std::vector<std::pair<int, std::string>>{
           {NID_subject_alt_name, names}, {NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    ZEUS_CHECK(ext != nullptr);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  ZEUS_CHECK(X509_sign(cert, key, EVP_sha256()) > 0);
  auto pem = [](auto write) {
    BIO* bio = BIO_new(BIO_s_mem());
    write(bio);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<size_t>(size));
    BIO_free(bio);
    return out;
  };
  SelfSigned out;
  out.certificate = pem([cert](BIO* bio) { PEM_write_bio_X509(bio, cert); });
  out.key = pem([key](BIO* bio) {
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

// Answers each connection's one request with "tls <target>" over TLS, on a
// free port of 127.0.0.1; a failed handshake ends that connection.
class TlsServer {
 public:
  explicit TlsServer(const SelfSigned& identity)
      : context_(boost::asio::ssl::context::tls_server), acceptor_(ioc_) {
    context_.use_certificate_chain(
        boost::asio::buffer(identity.certificate.data(), identity.certificate.size()));
    context_.use_private_key(boost::asio::buffer(identity.key.data(), identity.key.size()),
                             boost::asio::ssl::context::pem);
    using boost::asio::ip::tcp;
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Serve(); });
  }
  ~TlsServer() {
    stop_ = true;
    boost::system::error_code ignored;
    acceptor_.cancel(ignored);
    // Wake a blocking accept.
    boost::asio::ip::tcp::socket poke(ioc_);
    poke.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }
  int port() const { return port_; }
  int handshakes() const { return handshakes_; }

 private:
  void Serve() {
    while (!stop_) {
      boost::system::error_code ec;
      boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream(ioc_, context_);
      acceptor_.accept(stream.next_layer(), ec);
      if (ec || stop_) continue;
      stream.handshake(boost::asio::ssl::stream_base::server, ec);
      if (ec) continue;
      ++handshakes_;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const size_t n = stream.read_some(boost::asio::buffer(buffer), ec);
        if (ec) break;
        request.append(buffer, n);
      }
      if (ec) continue;
      const std::string target = request.substr(4, request.find(' ', 4) - 4);
      const std::string answer = Answer(200, "tls " + target, "Connection: close\r\n");
      boost::asio::write(stream, boost::asio::buffer(answer), ec);
      stream.shutdown(ec);
    }
  }

  boost::asio::io_context ioc_;
  boost::asio::ssl::context context_;
  boost::asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> handshakes_{0};
};

TEST(HttpClientTlsTest, TrustedSelfSignedServerAnswersByNameAndByAddress) {
  testing::TempDir dir;
  const SelfSigned identity = MakeSelfSigned(/*with_ip=*/true);
  ZEUS_ASSERT_OK(WriteFileAtomically(dir.File("ca.pem"), identity.certificate));
  TlsServer server(identity);
  HttpClientOptions options = Quick();
  ZEUS_ASSERT_OK_AND_ASSIGN(options.tls, TlsContextTrusting(dir.File("ca.pem")));
  HttpClient client(options);
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    const std::string url = "https://" + host + ":" + std::to_string(server.port()) + "/secure";
    ZEUS_ASSERT_OK_AND_ASSIGN(HttpClientResponse answer, client.Get(url));
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body, "tls /secure");
  }
}

TEST(HttpClientTlsTest, UntrustedCertificateFailsVerification) {
  const SelfSigned identity = MakeSelfSigned(/*with_ip=*/true);
  TlsServer server(identity);
  HttpClientOptions options = Quick();
  ZEUS_ASSERT_OK_AND_ASSIGN(options.tls, SystemTlsContext());
  const std::string url = "https://localhost:" + std::to_string(server.port()) + "/";
  StatusOr<HttpClientResponse> answer = HttpClient(options).Get(url);
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(answer.status().message(),
              HasSubstr("GET " + url +
                        ": TLS certificate verification failed for localhost: "
                        "self-signed certificate"));
  EXPECT_EQ(server.handshakes(), 0);
}

TEST(HttpClientTlsTest, CertificateForAnotherNameFailsVerification) {
  testing::TempDir dir;
  const SelfSigned identity = MakeSelfSigned(/*with_ip=*/false);  // localhost only.
  ZEUS_ASSERT_OK(WriteFileAtomically(dir.File("ca.pem"), identity.certificate));
  TlsServer server(identity);
  HttpClientOptions options = Quick();
  ZEUS_ASSERT_OK_AND_ASSIGN(options.tls, TlsContextTrusting(dir.File("ca.pem")));
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port()) + "/";
  StatusOr<HttpClientResponse> answer = HttpClient(options).Get(url);
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(answer.status().message(),
              HasSubstr("TLS certificate verification failed for 127.0.0.1: IP address mismatch"));
  EXPECT_EQ(server.handshakes(), 0);
}

TEST(HttpClientTlsTest, PlainHttpServerFailsTheHandshakeAndBadCaFileIsNamed) {
  // Answers the ClientHello as an HTTP server answers garbage.
  ScriptedServer plain([](ServerConnection& connection) {
    connection.Write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    connection.WaitForClose();
  });
  HttpClientOptions options = Quick();
  ZEUS_ASSERT_OK_AND_ASSIGN(options.tls, SystemTlsContext());
  const std::string url = "https://" + plain.Url("/").substr(7);
  StatusOr<HttpClientResponse> answer = HttpClient(options).Get(url);
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(answer.status().message(), HasSubstr("GET " + url + ": TLS handshake failed: "));
  StatusOr<std::shared_ptr<TlsContext>> missing = TlsContextTrusting("/nonexistent/ca.pem");
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/ca.pem"));
}

TEST(HttpClientTlsTest, ConnectTimeoutCoversTheHandshake) {
  // Accepts, then says nothing: the handshake never completes.
  ScriptedServer silent([](ServerConnection& connection) { connection.WaitForClose(); });
  HttpClientOptions options = Quick();
  options.connect_timeout_s = 0.2;
  ZEUS_ASSERT_OK_AND_ASSIGN(options.tls, SystemTlsContext());
  const std::string url = "https://" + silent.Url("/").substr(7);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<HttpClientResponse> answer = HttpClient(options).Get(url);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
  EXPECT_EQ(answer.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(answer.status().message(),
            "GET " + url + ": timed out after 0.2 s in the TLS handshake");
}

}  // namespace
}  // namespace zeus
