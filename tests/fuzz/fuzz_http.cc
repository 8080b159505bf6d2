// Fuzzes the HTTP server end to end: one HttpServer + BatchSizeService on a
// SQLite store in a scratch directory is started on 127.0.0.1 (a free port)
// once per process; each input is sent as raw bytes of an HTTP request over
// a fresh connection and the first answer read. Every 16 inputs, and whenever an answer is not
// HTTP, GET /health must still answer 200: a request that kills or wedges the server fails.

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "zeus/device/clock.h"
#include "zeus/server/batch_size_service.h"
#include "zeus/server/http_server.h"
#include "zeus/server/store.h"

#include "tests/fuzz/fuzz_temp_file.h"

namespace {

struct Server {
  std::unique_ptr<zeus::Store> store;
  std::unique_ptr<zeus::BatchSizeService> service;
  std::unique_ptr<zeus::HttpServer> http;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_http: %s\n", what.c_str());
  std::abort();
}

Server* StartServer() {
  auto* s = new Server;  // Lives for the whole process, like a deployed server.
  zeus::StatusOr<std::unique_ptr<zeus::Store>> store =
      zeus::OpenStore("sqlite:" + zeus::fuzz::ScratchDir() + "/zeus.db");
  if (!store.ok()) Fail("cannot open the store: " + store.status().ToString());
  s->store = std::move(*store);
  s->service = std::make_unique<zeus::BatchSizeService>(s->store.get(), zeus::RealClock());
  zeus::HttpServerOptions options;
  options.threads = 4;
  options.read_timeout_s = 1.0;
  s->http = std::make_unique<zeus::HttpServer>(s->service.get(), options);
  zeus::Status started = s->http->Start();
  if (!started.ok()) Fail("cannot start the server: " + started.ToString());
  return s;
}

// Sends `request` and returns the server's first answer: its headers and
// Content-Length bytes of body (at most 1 MiB). An empty string when it
// cannot connect or nothing arrives within `first_byte_ms` (an incomplete
// request: the server is still waiting for the rest); then `why`, when
// given, says which. The connection is not half-closed after sending: a
// server may drop the answer to a client whose read side is at EOF (the
// first one of Zeus did), and the fuzzer would never see it.
std::string Exchange(int port, std::string_view request, int first_byte_ms,
                     std::string* why = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail("socket() failed");
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (!connected && why != nullptr) *why = std::string("connect: ") + std::strerror(errno);
  if (connected) {
    size_t sent = 0;
    while (sent < request.size()) {
      ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // The server may answer (413, 400) and close early.
      sent += static_cast<size_t>(n);
    }
    pollfd readable{fd, POLLIN, 0};
    int wait_ms = first_byte_ms;
    size_t wanted = std::string::npos;  // Total answer size once the headers are in.
    char buffer[4096];
    while (answer.size() < wanted && answer.size() < (1 << 20) && poll(&readable, 1, wait_ms) > 0) {
      ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      answer.append(buffer, static_cast<size_t>(n));
      wait_ms = 10000;  // The rest of an answer that has begun.
      size_t end = answer.find("\r\n\r\n");
      if (wanted == std::string::npos && end != std::string::npos) {
        size_t length = answer.find("Content-Length: ");
        wanted =
            end + 4 + (length < end ? std::strtoull(answer.c_str() + length + 16, nullptr, 10) : 0);
      }
    }
  }
  if (connected && answer.empty() && why != nullptr) {
    *why = "no byte within " + std::to_string(first_byte_ms) + " ms";
  }
  close(fd);
  return answer;
}

// GET /health must answer 200. A server that is killed or wedged never
// does; one that a busy machine stalls for a moment does on a later try, so
// three tries of 10 s each are made (fuzz.sh gives this target's inputs a
// timeout above their sum).
void CheckHealthy(int port) {
  std::string tries;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::string why;
    std::string answer = Exchange(
        port, "GET /health HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n", 10000, &why);
    if (answer.compare(0, 12, "HTTP/1.1 200") == 0) return;
    tries += "; try " + std::to_string(attempt) + ": " +
             (answer.empty() ? why : "answered " + answer.substr(0, 200));
    if (!answer.empty()) break;  // An answer other than 200 is final.
  }
  Fail("GET /health after the last input failed" + tries);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Server* server = StartServer();
  static uint64_t runs = 0;
  const int port = server->http->port();
  // 20 ms covers a complete request's answer (about 1 ms under ASan); an
  // incomplete one would wait for the server's read timeout instead.
  std::string answer =
      Exchange(port, std::string_view(reinterpret_cast<const char*>(data), size), 20);
  // 500 is a server bug (an unhandled case), never the answer to a bad request.
  if (answer.compare(0, 12, "HTTP/1.1 500") == 0) {
    Fail("an input got a server error: " + answer.substr(0, 400));
  }
  if (++runs % 16 == 0 || (!answer.empty() && answer.compare(0, 5, "HTTP/") != 0)) {
    CheckHealthy(port);
  }
  return 0;
}
