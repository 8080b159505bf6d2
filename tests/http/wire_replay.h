// The harness of the wire replay tests (wire_replay_serve_test.cc,
// wire_replay_daemon_test.cc): exchanges of raw bytes with a server over a
// socket, their normalised rendering, and the golden transcripts under
// tests/http/wire_replay/ they are compared with (or, with
// ZEUS_WIRE_RECORD=1, rewritten from). What is normalised and why is in
// wire_replay.cc.

#ifndef ZEUS_TESTS_HTTP_WIRE_REPLAY_H_
#define ZEUS_TESTS_HTTP_WIRE_REPLAY_H_

#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus::testing {

// One request (or several, pipelined) on a fresh connection.
struct Exchange {
  std::string name;
  // Sent as is.
  std::string request;
  // Final (non-1xx) answers to read before closing.
  int responses = 1;
  // The answer is to a HEAD request: no body is read with its head; what
  // follows all the same shows as unparsed bytes (see WatchConnection).
  bool head = false;
  // Records how the connection ends after the answers (WatchConnection).
  bool watch_close = false;
  // A streamed (chunked) answer: its head and first chunk only.
  bool first_chunk_only = false;
  // Daemon only: over its TCP port instead of its Unix socket.
  bool tcp = false;
};

// Where a server listens.
struct Endpoint {
  std::string unix_path;
  int tcp_port = 0;
  // A GET that shows a kept-alive connection still serves (WatchConnection).
  std::string probe_path;
};

// A request with the usual head: `method target HTTP/1.1`, Host, the extra
// header lines (each ending in \r\n), Content-Length when there is a body.
inline std::string Req(const std::string& method, const std::string& target,
                       const std::string& headers = "", const std::string& body = "") {
  std::string raw = method + " " + target + " HTTP/1.1\r\nHost: zeus\r\n" + headers;
  if (!body.empty()) raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return raw + "\r\n" + body;
}

// The header line of a JSON body.
inline constexpr char kJson[] = "Content-Type: application/json\r\n";

inline Exchange Ex(std::string name, std::string request) {
  Exchange e;
  e.name = std::move(name);
  e.request = std::move(request);
  return e;
}

// A HEAD request; what follows its answer is watched (a stray body).
inline Exchange Head(std::string name, const std::string& target) {
  Exchange e = Ex(std::move(name), Req("HEAD", target));
  e.head = true;
  return e;
}

// An exchange whose connection's end is recorded.
inline Exchange Closing(std::string name, std::string request) {
  Exchange e = Ex(std::move(name), std::move(request));
  e.watch_close = true;
  return e;
}

struct Normaliser {
  // Exact strings of this run -> their placeholder.
  std::vector<std::pair<std::string, std::string>> literals;
  // Regular expressions -> replacement (std::regex_replace format).
  std::vector<std::pair<std::regex, std::string>> patterns;

  // `text` normalised; `*changed` set when anything was replaced.
  std::string operator()(std::string text, bool* changed = nullptr) const {
    const std::string before = text;
    for (const auto& [literal, placeholder] : literals) {
      if (literal.empty()) continue;
      for (size_t at = 0; (at = text.find(literal, at)) != std::string::npos;) {
        text.replace(at, literal.size(), placeholder);
        at += placeholder.size();
      }
    }
    for (const auto& [pattern, replacement] : patterns) {
      text = std::regex_replace(text, pattern, replacement);
    }
    if (changed != nullptr) *changed = text != before;
    return text;
  }
};

// The substitutions every test applies; `tmp`: its temporary directory.
Normaliser BaseNormaliser(const std::string& tmp);

// Runs `exchanges` in order against `at` and compares their rendering with
// the golden transcript `name` (a gtest failure names the first
// difference), or rewrites it under ZEUS_WIRE_RECORD=1.
void Replay(const std::string& name, const Endpoint& at, const std::vector<Exchange>& exchanges,
            const Normaliser& normalise);

class WireReplayTest : public ::testing::Test {
 protected:
  // After a failure, the server's log (its side of the story).
  void PrintLogOnFailure(const std::string& log) {
    if (HasFailure()) {
      std::printf("----- %s -----\n%s\n", log.c_str(),
                  ReadFileToString(log).value_or("(unreadable)").c_str());
    }
  }

  TempDir dir_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_HTTP_WIRE_REPLAY_H_
