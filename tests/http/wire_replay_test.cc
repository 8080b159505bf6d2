// The wire of both HTTP servers, frozen: `zeus serve` (the batch-size
// service) and `zeus daemon` (zeusd) each get a fixed sequence of requests as
// raw bytes over a socket (no HTTP client library, so malformed requests are
// possible), and the raw bytes of their answers (status line, headers, body)
// are compared with the transcripts recorded under tests/http/wire_replay/
// from the tree before the HTTP layer was rewritten. Any change on the wire
// fails here, with the first differing exchange printed.
//
// Re-recording: when ZEUS_WIRE_RECORD=1 is set, the test REWRITES the golden
// files from what the servers answer now instead of comparing (review the
// diff of tests/http/wire_replay/ before committing it).
//
// What varies from run to run is normalised, and only that (BaseNormaliser
// and each test's additions), in requests and answers alike:
//   - known strings of this run: the temporary directory (socket and state
//     paths in messages), the bearer tokens (the daemon's carry no `iat`, so
//     they are stable, but they are named, not printed), this process's pid
//     and uid (the daemon's peer description and lease records);
//   - regular expressions: wall-clock numbers ("timestamp_ms",
//     "start_time_s", "updated_at_s", "created_at_s", ... in JSON bodies,
//     "now <seconds>" in the daemon's expired-token message), loopback ports
//     ("127.0.0.1:<port>"), the fake libnvml's energy counter
//     ("energy_mj", which advances at every read), and every sample value
//     of a Prometheus text body (/metrics: latencies and counters; the
//     samples of each family are sorted and histogram buckets only counted);
//   - a Content-Length (or a chunk's size) whose body a substitution changed
//     reads "<normalised>": the body itself is still compared.
// How a connection ends is recorded where it matters (Closing exchanges,
// HEAD): an answer that says it closes must be followed by the close; on a
// kept-alive one a probe request must be answered (no waiting on a clock).
// Bodies over kHashAbove bytes (dashboard script, pages) are shown as their
// length and FNV-1a 64 hash, so they are still compared byte for byte.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/daemon/token.h"
#include "zeus/util/file.h"

#include "tests/daemon/daemon_harness.h"
#include "tests/server/server_test_util.h"
#include "tests/testing/raw_socket.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Bodies longer than this are shown by length and hash.
constexpr size_t kHashAbove = 4096;
// How long one exchange may take before what arrived is recorded as is.
constexpr std::chrono::milliseconds kExchangeTimeout{3000};
// How long a server that said it closes the connection may take to do so.
constexpr std::chrono::milliseconds kCloseWait{2000};

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
std::string Req(const std::string& method, const std::string& target,
                const std::string& headers = "", const std::string& body = "") {
  std::string raw = method + " " + target + " HTTP/1.1\r\nHost: zeus\r\n" + headers;
  if (!body.empty()) raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return raw + "\r\n" + body;
}

Exchange Ex(std::string name, std::string request) {
  Exchange e;
  e.name = std::move(name);
  e.request = std::move(request);
  return e;
}

// A HEAD request; what follows its answer is watched (a stray body).
Exchange Head(std::string name, const std::string& target) {
  Exchange e = Ex(std::move(name), Req("HEAD", target));
  e.head = true;
  return e;
}

// An exchange whose connection's end is recorded.
Exchange Closing(std::string name, std::string request) {
  Exchange e = Ex(std::move(name), std::move(request));
  e.watch_close = true;
  return e;
}

// ---------------------------------------------------------------------------
// Raw exchange over a socket.

// Over TCP when asked, or when the server has no Unix socket; -1 when the
// connection fails.
int Connect(const Endpoint& at, bool tcp) {
  return tcp || at.unix_path.empty() ? ConnectLoopback(at.tcp_port) : ConnectUnix(at.unix_path);
}

// One parsed answer: its head (up to and including the blank line) and its
// body (for a chunked one, the chunks' data; `chunks` keeps each chunk).
struct Message {
  std::string head;
  std::string body;
  bool chunked = false;
  std::vector<std::string> chunks;
  // The last chunk (size 0) and the trailer were read.
  bool chunked_done = false;
  // The bytes ended before the message did.
  bool truncated = false;
};

// The result of one exchange.
struct Received {
  std::vector<Message> messages;
  // Bytes after the last message, unparsed (a body after a HEAD answer).
  std::string rest;
  // How the connection ended or stayed open: "" when not watched and every
  // answer came.
  std::string end;
};

class Connection {
 public:
  explicit Connection(int fd) : fd_(fd), deadline_(Clock::now() + kExchangeTimeout) {}
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }

  // Sends every byte; false when the server closed first.
  bool Send(const std::string& bytes) { return SendAll(fd_, bytes); }

  // Reads more bytes into buffer(); false at end of stream, error or the
  // deadline.
  bool Fill(Clock::time_point deadline) {
    if (eof_) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char chunk[16 * 1024];
    const ssize_t n = read(fd_, chunk, sizeof(chunk));
    if (n <= 0) {
      eof_ = true;
      end_ = n == 0 ? "server closed the connection"
                    : std::string("connection error: ") +
                          (errno == ECONNRESET ? "reset" : std::strerror(errno));
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
  bool Fill() { return Fill(deadline_); }

  // Makes buffer() at least `end` bytes long; false if they never come.
  bool Need(size_t end) {
    while (buffer_.size() < end) {
      if (!Fill()) return false;
    }
    return true;
  }

  // The offset just past "\r\n" found at or after `from`, or npos.
  size_t Line(size_t from) {
    while (true) {
      const size_t at = buffer_.find("\r\n", from);
      if (at != std::string::npos) return at + 2;
      if (!Fill()) return std::string::npos;
    }
  }

  const std::string& buffer() const { return buffer_; }
  bool eof() const { return eof_; }
  const std::string& end() const { return end_; }

 private:
  int fd_;
  Clock::time_point deadline_;
  std::string buffer_;
  bool eof_ = false;
  std::string end_;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The value of header `name` (case-insensitive) in `head`, or nullopt.
std::optional<std::string> HeaderValue(const std::string& head, const std::string& name) {
  std::istringstream lines(head);
  std::string line;
  std::getline(lines, line);  // Status line.
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (Lower(line.substr(0, colon)) != Lower(name)) continue;
    size_t start = colon + 1;
    while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
    return line.substr(start);
  }
  return std::nullopt;
}

int StatusCode(const std::string& head) {
  if (head.compare(0, 5, "HTTP/") != 0 || head.size() < 12) return 0;
  return std::atoi(head.c_str() + 9);
}

// Reads one message starting at `*pos`; advances `*pos` past it. False when
// nothing (or only part of a head) arrived.
bool ReadMessage(Connection& c, const Exchange& e, size_t* pos, Message* m) {
  size_t head_end = std::string::npos;
  while ((head_end = c.buffer().find("\r\n\r\n", *pos)) == std::string::npos) {
    if (!c.Fill()) return false;
  }
  head_end += 4;
  m->head = c.buffer().substr(*pos, head_end - *pos);
  *pos = head_end;
  const int status = StatusCode(m->head);
  if ((status >= 100 && status < 200) || status == 204 || status == 304 || e.head) return true;
  const std::optional<std::string> encoding = HeaderValue(m->head, "Transfer-Encoding");
  if (encoding && Lower(*encoding).find("chunked") != std::string::npos) {
    m->chunked = true;
    while (true) {
      const size_t line_end = c.Line(*pos);
      if (line_end == std::string::npos) {
        m->truncated = true;
        return true;
      }
      const size_t size = std::strtoul(c.buffer().c_str() + *pos, nullptr, 16);
      if (size == 0) {
        // The trailer: header lines up to a blank line.
        size_t at = line_end;
        while (true) {
          const size_t next = c.Line(at);
          if (next == std::string::npos) {
            m->truncated = true;
            return true;
          }
          const bool blank = next == at + 2;
          at = next;
          if (blank) break;
        }
        *pos = at;
        m->chunked_done = true;
        return true;
      }
      if (!c.Need(line_end + size + 2)) {
        m->truncated = true;
        m->body += c.buffer().substr(line_end);
        *pos = c.buffer().size();
        return true;
      }
      const std::string data = c.buffer().substr(line_end, size);
      m->chunks.push_back(data);
      m->body += data;
      *pos = line_end + size + 2;
      if (e.first_chunk_only) return true;
    }
  }
  if (const std::optional<std::string> length = HeaderValue(m->head, "Content-Length")) {
    const size_t n = std::strtoul(length->c_str(), nullptr, 10);
    if (!c.Need(*pos + n)) m->truncated = true;
    m->body = c.buffer().substr(*pos, n);
    *pos += m->body.size();
    return true;
  }
  // Neither: the body runs to the end of the connection.
  while (c.Fill()) {
  }
  m->body = c.buffer().substr(*pos);
  *pos = c.buffer().size();
  return true;
}

// Whether an answer says the connection closes after it.
bool AnnouncesClose(const std::string& head) {
  const std::string connection = Lower(HeaderValue(head, "Connection").value_or(""));
  if (connection.find("close") != std::string::npos) return true;
  return head.compare(0, 9, "HTTP/1.0 ") == 0 && connection.find("keep-alive") == std::string::npos;
}

// After the last answer: when it says the connection closes, waits (up to
// kCloseWait) for the server to close it; otherwise sends a probe request
// (the endpoint's probe_path, "Connection: close") and records the status
// line it gets, so a kept-alive connection is shown to serve a next request
// without waiting on a clock. Bytes before the probe's answer (a body sent
// after a HEAD answer) are left in the buffer from `*pos` as unparsed.
void WatchConnection(const Endpoint& at, const Message& last, Connection* c, size_t* pos,
                     Received* out) {
  if (AnnouncesClose(last.head)) {
    const Clock::time_point until = Clock::now() + kCloseWait;
    while (c->Fill(until)) {
    }
    out->end += c->eof() ? c->end() : "connection still open although the answer said it closes";
    return;
  }
  const std::string probe =
      "GET " + at.probe_path + " HTTP/1.1\r\nHost: zeus\r\nConnection: close\r\n\r\n";
  const size_t before = c->buffer().size();
  c->Send(probe);
  const Clock::time_point until = Clock::now() + kExchangeTimeout;
  while (c->Fill(until)) {
  }
  const size_t answer = c->buffer().find("HTTP/1.", before);
  if (answer == std::string::npos) {
    out->end += "server closed the connection (a probe request got no answer)";
    return;
  }
  const size_t line_end = c->buffer().find("\r\n", answer);
  out->end += "connection kept open: a probe (GET " + at.probe_path + ") on it was answered \"" +
              c->buffer().substr(answer, line_end - answer) + "\"";
  if (*pos < answer) out->rest = c->buffer().substr(*pos, answer - *pos);
  *pos = c->buffer().size();
}

Received Run(const Endpoint& at, const Exchange& e) {
  Received out;
  const int fd = Connect(at, e.tcp);
  if (fd < 0) {
    out.end = "could not connect";
    return out;
  }
  Connection c(fd);
  if (!c.Send(e.request)) out.end = "server closed before the whole request was sent; ";
  size_t pos = 0;
  int finals = 0;
  while (finals < e.responses) {
    Message m;
    if (!ReadMessage(c, e, &pos, &m)) break;
    const int status = StatusCode(m.head);
    if (status < 100 || status >= 200) ++finals;
    out.messages.push_back(std::move(m));
  }
  if (out.messages.empty() || finals < e.responses) {
    out.end += c.eof() ? c.end() : "no complete answer within the exchange's timeout";
  } else if ((e.watch_close || e.head) && !c.eof()) {
    WatchConnection(at, out.messages.back(), &c, &pos, &out);
  } else if (e.watch_close) {
    out.end += c.end();
  }
  if (pos < c.buffer().size()) out.rest = c.buffer().substr(pos);
  return out;
}

// ---------------------------------------------------------------------------
// Normalising and rendering.

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
Normaliser BaseNormaliser(const std::string& tmp) {
  Normaliser n;
  n.literals.push_back({tmp, "<tmp>"});
  n.literals.push_back({std::to_string(getpid()) + " (uid", "<pid> (uid"});
  n.literals.push_back({"(uid " + std::to_string(getuid()) + ")", "(uid <uid>)"});
  n.literals.push_back({"\"pid\":" + std::to_string(getpid()), "\"pid\":<pid>"});
  n.literals.push_back({"\"uid\":" + std::to_string(getuid()), "\"uid\":<uid>"});
  // Wall-clock values in JSON bodies.
  n.patterns.push_back(
      {std::regex(
           R"re("(timestamp_ms|[a-z_]*_at_s|[a-z_]*_time_s|[a-z_]*_at|now_s)":-?[0-9][0-9.eE+-]*)re"),
       R"("$1":<time>)"});
  // The daemon's "token has expired (exp 1, now <unix seconds>)".
  n.patterns.push_back({std::regex(R"(now [0-9]+\))"), "now <time>)"});
  // Loopback ports (the daemon names a TCP peer by address and port).
  n.patterns.push_back({std::regex(R"(127\.0\.0\.1:[0-9]+)"), "127.0.0.1:<port>"});
  return n;
}

// Printable ASCII as is; \r, \n (then a line break), \\ and other bytes
// escaped.
std::string Escape(const std::string& bytes) {
  std::string out;
  for (char ch : bytes) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\n') {
      out += "\\n\n";
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

uint64_t Fnv1a64(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string RenderBody(const std::string& body) {
  if (body.size() <= kHashAbove) return Escape(body);
  return fmt::format("<body of {} bytes, fnv1a64 {:016x}>\n", body.size(), Fnv1a64(body));
}

// A Prometheus text body with every sample's value replaced, the samples of
// each family sorted (their order follows a hash table's, not the
// protocol's), and its histogram bucket lines counted instead of shown
// (which bucket a latency fell in varies).
std::string NormaliseMetrics(const std::string& body) {
  static const std::regex kSample(R"(^([a-zA-Z_:][^ ]*) [^ ]+$)");
  std::istringstream lines(body);
  std::string line, out;
  std::vector<std::string> samples;
  auto flush = [&] {
    std::sort(samples.begin(), samples.end());
    for (const std::string& sample : samples) out += sample + "\n";
    samples.clear();
  };
  int buckets = 0;
  while (std::getline(lines, line)) {
    if (line.find("_bucket{") != std::string::npos) {
      ++buckets;
    } else if (line.rfind("#", 0) == 0) {
      flush();
      out += line + "\n";
    } else {
      samples.push_back(std::regex_replace(line, kSample, "$1 <value>"));
    }
  }
  flush();
  return out + fmt::format("<{} histogram bucket lines>\n", buckets);
}

std::string RenderMessage(const Message& m, const Normaliser& normalise) {
  std::string head = normalise(m.head);
  std::string out;
  const std::optional<std::string> type = HeaderValue(m.head, "Content-Type");
  const bool metrics = type && type->find("version=0.0.4") != std::string::npos;
  if (m.chunked) {
    out += Escape(head);
    for (const std::string& chunk : m.chunks) {
      bool changed = false;
      const std::string data = normalise(chunk, &changed);
      out += "<chunk of " + (changed ? std::string("<normalised>") : std::to_string(chunk.size())) +
             " bytes>\n" + RenderBody(data);
    }
    if (m.chunked_done) out += "<last chunk>\n";
  } else {
    bool changed = false;
    std::string body = normalise(m.body, &changed);
    if (metrics) {
      const std::string samples = NormaliseMetrics(body);
      changed = changed || samples != body;
      body = samples;
    }
    if (changed) {
      static const std::regex kLength(R"(Content-Length: [0-9]+\r\n)", std::regex::icase);
      head = std::regex_replace(head, kLength, "Content-Length: <normalised>\r\n");
    }
    out += Escape(head);
    if (metrics) {
      out += Escape(body);
    } else if (!m.body.empty()) {
      out += RenderBody(body);
    }
  }
  if (m.truncated) out += "<truncated>\n";
  return out;
}

// One exchange as the golden files hold it.
std::string Render(const Exchange& e, const Received& r, const Normaliser& normalise) {
  std::string out = "=== " + e.name + (e.tcp ? " (tcp)" : "") + "\n--- request\n";
  std::string request = normalise(e.request);
  if (request.size() > kHashAbove) {
    out += Escape(request.substr(0, 256)) + fmt::format("<request of {} bytes, fnv1a64 {:016x}>\n",
                                                        request.size(), Fnv1a64(request));
  } else {
    out += Escape(request);
  }
  for (const Message& m : r.messages) out += "--- response\n" + RenderMessage(m, normalise);
  if (!r.rest.empty()) out += "--- unparsed bytes\n" + Escape(normalise(r.rest));
  if (!r.end.empty()) out += "--- " + r.end + "\n";
  return out;
}

// ---------------------------------------------------------------------------
// Golden files.

std::string GoldenPath(const std::string& name) {
  return std::string(ZEUS_WIRE_REPLAY_DIR) + "/" + name + ".txt";
}

bool Recording() {
  const char* record = std::getenv("ZEUS_WIRE_RECORD");
  return record != nullptr && std::string(record) == "1";
}

constexpr char kHeader[] =
    "# Recorded by tests/http/wire_replay_test.cc: raw requests and the raw answers\n"
    "# (\\r \\n \\\\ \\xNN escaped; volatile values normalised). Do not edit by hand;\n"
    "# re-record with ZEUS_WIRE_RECORD=1 and review the diff.\n";

// The exchanges of a golden file, by "=== " block.
std::vector<std::string> Blocks(const std::string& text) {
  std::vector<std::string> blocks;
  size_t at = text.find("=== ");
  while (at != std::string::npos) {
    size_t next = text.find("\n=== ", at);
    if (next != std::string::npos) ++next;
    blocks.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return blocks;
}

// The first differing line of two blocks, for the failure message.
std::string FirstDifference(const std::string& expected, const std::string& got) {
  std::istringstream a(expected), b(got);
  std::string la, lb;
  int line = 0;
  while (true) {
    ++line;
    const bool ha = static_cast<bool>(std::getline(a, la));
    const bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "(no line differs)";
    if (!ha || !hb || la != lb) {
      return fmt::format("line {} of the exchange:\n  expected: {}\n  got:      {}", line,
                         ha ? la : "<nothing>", hb ? lb : "<nothing>");
    }
  }
}

// Compares (or, recording, writes) one server's transcript.
void CheckGolden(const std::string& name, const std::vector<std::string>& rendered) {
  const std::string path = GoldenPath(name);
  std::string text = kHeader;
  for (const std::string& block : rendered) text += block;
  if (Recording()) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    ASSERT_TRUE(out.good()) << "ZEUS_WIRE_RECORD=1: cannot write " << path;
    std::printf("ZEUS_WIRE_RECORD=1: rewrote %s (%zu exchanges); nothing was compared\n",
                path.c_str(), rendered.size());
    return;
  }
  StatusOr<std::string> golden = ReadFileToString(path);
  ASSERT_TRUE(golden.ok()) << golden.status().ToString()
                           << "\n(record it with ZEUS_WIRE_RECORD=1 set)";
  const std::vector<std::string> expected = Blocks(*golden);
  const std::string hint =
      "\nIf this change of the wire is intended, re-record with ZEUS_WIRE_RECORD=1 set (the "
      "test then rewrites " +
      path + ") and review the diff.";
  for (size_t i = 0; i < std::max(expected.size(), rendered.size()); ++i) {
    const std::string want = i < expected.size() ? expected[i] : "<no such exchange>\n";
    const std::string got = i < rendered.size() ? rendered[i] : "<no such exchange>\n";
    if (want == got) continue;
    FAIL() << "the wire of " << name << " changed at exchange " << i + 1 << " of "
           << expected.size() << " (" << path << ")\n"
           << FirstDifference(want, got) << "\n----- expected -----\n"
           << want << "----- got -----\n"
           << got << "--------------------" << hint;
  }
}

void Replay(const std::string& name, const Endpoint& at, const std::vector<Exchange>& exchanges,
            const Normaliser& normalise) {
  std::vector<std::string> rendered;
  for (const Exchange& e : exchanges) rendered.push_back(Render(e, Run(at, e), normalise));
  CheckGolden(name, rendered);
}

// ---------------------------------------------------------------------------
// zeus serve.

std::string JobJson(const std::string& job_id, const std::string& extra = "") {
  std::string body = JobBody(job_id).dump();
  if (!extra.empty()) body.insert(body.size() - 1, "," + extra);
  return body;
}

constexpr char kJson[] = "Content-Type: application/json\r\n";

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

// ---------------------------------------------------------------------------
// zeus daemon.

// The daemon's TCP port, from its "serving ... on SOCKET and HOST:PORT" line.
int DaemonTcpPort(const DaemonProcess& daemon) {
  int port = 0;
  WaitFor(
      [&] {
        const std::string out = ReadFileToString(daemon.log()).value_or("");
        const size_t at = out.find("and 127.0.0.1:");
        if (at == std::string::npos) return false;
        port = std::atoi(out.c_str() + at + 14);
        return port > 0;
      },
      std::chrono::milliseconds(2000));
  return port;
}

Exchange Tcp(std::string name, std::string request) {
  Exchange e = Ex(std::move(name), std::move(request));
  e.tcp = true;
  return e;
}

// In order, over 2 fake GPUs: the changes are leased to this process and
// put back by one /lease/release, after which nothing is changed again (a
// lease taken after a release may be put back at once "as the process
// ended": the lease watcher polls a stale pidfd number; seen under load);
// /streams is asked before any stream started (its poll count would vary
// after).
std::vector<Exchange> DaemonExchanges() {
  std::vector<Exchange> x;
  x.push_back(Ex("discover", Req("GET", "/discover")));
  x.push_back(Ex("time", Req("GET", "/time")));
  x.push_back(Ex("get_power_limit", Req("GET", "/gpu/get_power_limit")));
  x.push_back(
      Ex("get_power_limit_constraints", Req("GET", "/gpu/get_power_limit_constraints?gpu_ids=1")));
  x.push_back(Ex("get_persistence_mode", Req("GET", "/gpu/get_persistence_mode?gpu_ids=0,1")));
  x.push_back(Ex("get_cumulative_energy", Req("GET", "/gpu/get_cumulative_energy?gpu_ids=0")));
  x.push_back(Ex("get_power", Req("GET", "/gpu/get_power")));
  x.push_back(Ex("set_power_limit",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true")));
  x.push_back(Ex("leases_after_set", Req("GET", "/leases")));
  x.push_back(Ex("get_power_limit_after_set", Req("GET", "/gpu/get_power_limit?gpu_ids=0")));
  x.push_back(Ex("set_power_limit_legacy_json", Req("POST", "/gpu/1/set_power_limit", kJson,
                                                    R"({"power_limit_mw":250000,"block":true})")));
  x.push_back(Ex("set_power_limit_legacy_bad_field",
                 Req("POST", "/gpu/1/set_power_limit", kJson, R"({"power_limit_mw":"high"})")));
  x.push_back(Ex("set_power_limit_legacy_malformed_json",
                 Req("POST", "/gpu/1/set_power_limit", kJson, R"({"power_limit_mw":)")));
  x.push_back(Ex("set_persistence_mode",
                 Req("POST", "/gpu/set_persistence_mode?gpu_ids=1&enabled=true&block=true")));
  x.push_back(
      Ex("set_gpu_locked_clocks",
         Req("POST", "/gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=500&max_clock_mhz=1000")));
  x.push_back(
      Ex("set_gpu_locked_clocks_inverted",
         Req("POST", "/gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=900&max_clock_mhz=100")));
  x.push_back(Ex("reset_locked_clocks", Req("POST", "/gpu/reset_locked_clocks?gpu_ids=0")));
  x.push_back(Ex("set_power_limit_two_gpus_one_out_of_range",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0,1&power_limit_mw=1")));
  x.push_back(
      Ex("set_mem_locked_clocks",
         Req("POST", "/gpu/set_mem_locked_clocks?gpu_ids=1&min_clock_mhz=800&max_clock_mhz=1200")));
  x.push_back(Ex("reset_mem_locked_clocks", Req("POST", "/gpu/reset_mem_locked_clocks?gpu_ids=1")));
  x.push_back(Ex("reset_gpu_locked_clocks", Req("POST", "/gpu/reset_gpu_locked_clocks?gpu_ids=1")));
  x.push_back(Ex("set_persistence_mode_legacy_json",
                 Req("POST", "/gpu/0/set_persistence_mode", kJson, R"({"enabled":true})")));
  x.push_back(Ex("set_persistence_mode_bad_value",
                 Req("POST", "/gpu/set_persistence_mode?gpu_ids=0&enabled=maybe")));
  x.push_back(Ex("set_power_limit_bad_block",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=maybe")));
  x.push_back(Ex("set_power_limit_without_gpu_ids",
                 Req("POST", "/gpu/set_power_limit?power_limit_mw=300000")));
  x.push_back(Ex("legacy_unknown_field", Req("POST", "/gpu/0/set_power_limit", kJson,
                                             R"({"power_limit_mw":300000,"x":1})")));
  const std::string chunked_head = "POST /gpu/0/set_power_limit HTTP/1.1\r\nHost: zeus\r\n" +
                                   std::string(kJson) + "Transfer-Encoding: chunked\r\n\r\n";
  x.push_back(Ex("legacy_chunked_body",
                 chunked_head + "13\r\n{\"power_limit_mw\":2\r\n6\r\n00000}\r\n0\r\n\r\n"));
  // The first chunk's size says 0x18 bytes; 0x17 follow before its CRLF.
  x.push_back(Closing("malformed_chunk",
                      chunked_head + "18\r\n{\"power_limit_mw\":20000\r\n2\r\n0}\r\n0\r\n\r\n"));
  x.push_back(Ex("expect_100_continue", Req("POST", "/gpu/0/set_power_limit",
                                            std::string(kJson) + "Expect: 100-continue\r\n",
                                            R"({"power_limit_mw":700000})")));
  x.push_back(Ex("leases_before_release", Req("GET", "/leases")));
  x.push_back(Ex("lease_release", Req("POST", "/lease/release")));
  x.push_back(Ex("leases_after_release", Req("GET", "/leases")));
  x.push_back(Ex("get_power_limit_restored", Req("GET", "/gpu/get_power_limit")));
  x.push_back(
      Ex("set_power_limit_missing_parameter", Req("POST", "/gpu/set_power_limit?gpu_ids=0")));
  x.push_back(Ex("set_power_limit_not_a_number",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=abc")));
  x.push_back(Ex("set_power_limit_plus_sign",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=%2B300000")));
  x.push_back(Ex("gpu_index_out_of_range", Req("GET", "/gpu/get_power_limit?gpu_ids=9")));
  x.push_back(Ex("gpu_listed_twice",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0,0&power_limit_mw=300000")));
  x.push_back(Ex("repeated_parameter", Req("GET", "/gpu/get_power_limit?gpu_ids=0&gpu_ids=1")));
  x.push_back(Ex("bad_percent_encoding", Req("GET", "/gpu/get_power_limit?gpu_ids=%zz")));
  x.push_back(Ex("percent_encoded_value", Req("GET", "/gpu/get_power_limit?gpu_ids=%30")));
  x.push_back(Ex("unknown_route", Req("GET", "/nope")));
  x.push_back(Ex("unknown_gpu_read", Req("GET", "/gpu/get_nothing")));
  x.push_back(Ex("unknown_cpu_read", Req("GET", "/cpu/get_nothing")));
  x.push_back(
      Ex("cpu_energy_without_cpus", Req("GET", "/cpu/get_cumulative_energy?cpu=true&dram=true")));
  x.push_back(Ex("cpu_power_without_cpus", Req("GET", "/cpu/get_power")));
  x.push_back(Ex("cpu_stream_without_cpus", Req("GET", "/cpu/stream_power")));
  x.push_back(Ex("whoami_without_auth", Req("GET", "/auth/whoami")));
  x.push_back(Ex("method_not_allowed_discover", Req("POST", "/discover")));
  x.push_back(Ex("method_not_allowed_set", Req("GET", "/gpu/set_power_limit?gpu_ids=0")));
  x.push_back(Ex("method_not_allowed_release", Req("GET", "/lease/release")));
  x.push_back(Head("head_time", "/time"));
  x.push_back(Ex("text_plain_body_ignored",
                 Req("GET", "/time", "Content-Type: text/plain\r\n", "not json")));
  Exchange pipelined =
      Ex("keep_alive_two_requests", Req("GET", "/time") + Req("GET", "/gpu/get_power_limit"));
  pipelined.responses = 2;
  pipelined.watch_close = true;
  x.push_back(pipelined);
  x.push_back(
      Closing("connection_close", Req("GET", "/gpu/get_power_limit", "Connection: close\r\n")));
  x.push_back(Closing("http_1_0", "GET /gpu/get_power_limit HTTP/1.0\r\n\r\n"));
  x.push_back(Closing("malformed_request_line", "GARBAGE\r\n\r\n"));
  x.push_back(Closing("bad_http_version", "GET /time HTTP/2.7\r\n\r\n"));
  x.push_back(Closing("oversized_headers",
                      Req("GET", "/time", "X-Padding: " + std::string(9 * 1024, 'a') + "\r\n")));
  x.push_back(Closing("oversized_body",
                      Req("POST", "/gpu/0/set_power_limit", "Content-Length: 100000\r\n")));
  x.push_back(Tcp("discover", Req("GET", "/discover")));
  x.push_back(
      Tcp("get_power_limit_constraints", Req("GET", "/gpu/get_power_limit_constraints?gpu_ids=1")));
  x.push_back(Tcp("set_power_limit_refused",
                  Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000")));
  x.push_back(Tcp("lease_release_refused", Req("POST", "/lease/release")));
  x.push_back(Ex("streams", Req("GET", "/streams")));
  Exchange stream = Ex("stream_power",
                       Req("GET", "/gpu/stream_power?gpu_ids=0", "Accept: text/event-stream\r\n"));
  stream.first_chunk_only = true;
  x.push_back(stream);
  Exchange stream_bad = Ex("stream_power_bad_gpu", Req("GET", "/gpu/stream_power?gpu_ids=7"));
  x.push_back(stream_bad);
  x.push_back(Ex("cpu_energy_missing_parameter", Req("GET", "/cpu/get_cumulative_energy")));
  x.push_back(Ex("method_not_allowed_streams", Req("POST", "/streams")));
  x.push_back(Ex("method_not_allowed_cpu", Req("DELETE", "/cpu/get_power")));
  x.push_back(Ex("nul_in_path", Req("GET", "/%00")));
  x.push_back(Ex("absolute_form_target", Req("GET", "http://zeusd/time")));
  x.push_back(Ex("no_host_header", "GET /gpu/get_power_limit?gpu_ids=1 HTTP/1.1\r\n\r\n"));
  x.push_back(Ex("lowercase_method", Req("get", "/time")));
  x.push_back(Closing("conflicting_content_lengths",
                      Req("POST", "/lease/release", "Content-Length: 2\r\nContent-Length: 3\r\n")));
  Exchange then_bad = Closing("pipelined_good_then_malformed",
                              Req("GET", "/gpu/get_power_limit?gpu_ids=0") + "GARBAGE\r\n\r\n");
  then_bad.responses = 2;
  x.push_back(then_bad);
  x.push_back(Closing("request_never_finished", "GET /time HTTP/1.1\r\nHost: zeus\r\n"));
  return x;
}

// A fixed key, and tokens that never expire (no `exp`) or expired in 1970.
constexpr char kSigningKey[] = "the wire replay's signing key, 32+ bytes\n";

std::string Token(const std::vector<std::string>& scopes, std::optional<int64_t> exp) {
  StatusOr<std::string> token = IssueToken(kSigningKey, TokenClaims{"wire", scopes, exp});
  return token.ok() ? *token : "<" + token.status().ToString() + ">";
}

std::vector<Exchange> DaemonTokenExchanges(const std::string& reader, const std::string& all,
                                           const std::string& expired) {
  auto bearer = [](const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; };
  std::vector<Exchange> x;
  x.push_back(Ex("discover", Req("GET", "/discover")));
  x.push_back(Ex("time_with_garbage_token", Req("GET", "/time", bearer("garbage"))));
  x.push_back(Ex("get_power_limit_without_token", Req("GET", "/gpu/get_power_limit")));
  x.push_back(Ex("get_power_limit_not_bearer",
                 Req("GET", "/gpu/get_power_limit", "Authorization: Basic d2lyZQ==\r\n")));
  x.push_back(Ex("get_power_limit_invalid_token",
                 Req("GET", "/gpu/get_power_limit", bearer("not.a.token"))));
  x.push_back(
      Ex("get_power_limit_expired_token", Req("GET", "/gpu/get_power_limit", bearer(expired))));
  x.push_back(Ex("get_power_limit_with_token", Req("GET", "/gpu/get_power_limit", bearer(reader))));
  x.push_back(
      Ex("set_power_limit_lacking_scope",
         Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000", bearer(reader))));
  x.push_back(Ex("set_power_limit_with_scope",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000", bearer(all))));
  x.push_back(Ex("lease_release_with_token", Req("POST", "/lease/release", bearer(all))));
  x.push_back(Ex("whoami", Req("GET", "/auth/whoami", bearer(reader))));
  x.push_back(Ex("whoami_without_token", Req("GET", "/auth/whoami")));
  x.push_back(Ex("cpu_group_disabled", Req("GET", "/cpu/get_power", bearer(all))));
  x.push_back(Ex("stream_without_token", Req("GET", "/gpu/stream_power")));
  x.push_back(Ex("unknown_route_without_token", Req("GET", "/nope")));
  return x;
}

TEST_F(WireReplayTest, DaemonAnswersAsRecorded) {
  DaemonProcess daemon(dir_.path(), 2);
  // A request must arrive within 2 s (request_never_finished is answered
  // 408 then).
  ASSERT_TRUE(daemon.Start(
      {"--tcp", "127.0.0.1:0", "--group", std::to_string(getgid()), "--request-timeout-s", "2"}))
      << ReadFileToString(daemon.log()).value_or("");
  const int port = DaemonTcpPort(daemon);
  ASSERT_GT(port, 0) << ReadFileToString(daemon.log()).value_or("");
  Normaliser normalise = BaseNormaliser(dir_.path());
  // The fake libnvml's energy counter advances at every read: its value
  // counts the daemon's reads, not anything of the wire.
  normalise.patterns.push_back(
      {std::regex(R"("energy_mj":[0-9]+)"), R"("energy_mj":<fake counter>)"});
  Replay("daemon", Endpoint{daemon.socket(), port, "/time"}, DaemonExchanges(), normalise);
  PrintLogOnFailure(daemon.log());
}

// Dry run: changes are accepted and logged, never made.
std::vector<Exchange> DaemonDryRunExchanges() {
  std::vector<Exchange> x;
  x.push_back(Ex("discover", Req("GET", "/discover")));
  x.push_back(Ex("set_power_limit",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true")));
  x.push_back(Ex("set_power_limit_out_of_range",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=1")));
  x.push_back(
      Ex("set_persistence_mode", Req("POST", "/gpu/set_persistence_mode?gpu_ids=1&enabled=true")));
  x.push_back(
      Ex("set_gpu_locked_clocks",
         Req("POST", "/gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=500&max_clock_mhz=1000")));
  x.push_back(Ex("get_power_limit", Req("GET", "/gpu/get_power_limit")));
  x.push_back(Ex("get_persistence_mode", Req("GET", "/gpu/get_persistence_mode")));
  x.push_back(Ex("leases", Req("GET", "/leases")));
  x.push_back(Ex("lease_release", Req("POST", "/lease/release")));
  return x;
}

// Over the fake libamd_smi: what AMD GPUs have and lack.
std::vector<Exchange> DaemonAmdExchanges() {
  std::vector<Exchange> x;
  x.push_back(Ex("discover", Req("GET", "/discover")));
  x.push_back(Ex("get_power_limit", Req("GET", "/gpu/get_power_limit")));
  x.push_back(
      Ex("get_power_limit_constraints", Req("GET", "/gpu/get_power_limit_constraints?gpu_ids=0")));
  x.push_back(Ex("get_persistence_mode", Req("GET", "/gpu/get_persistence_mode?gpu_ids=0")));
  x.push_back(Ex("get_cumulative_energy", Req("GET", "/gpu/get_cumulative_energy?gpu_ids=1")));
  x.push_back(Ex("get_power", Req("GET", "/gpu/get_power?gpu_ids=0")));
  x.push_back(Ex("set_power_limit",
                 Req("POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true")));
  x.push_back(
      Ex("set_persistence_mode", Req("POST", "/gpu/set_persistence_mode?gpu_ids=1&enabled=true")));
  x.push_back(
      Ex("set_gpu_locked_clocks",
         Req("POST", "/gpu/set_gpu_locked_clocks?gpu_ids=1&min_clock_mhz=500&max_clock_mhz=1000")));
  // AMD SMI resets no single clock domain (400, as zeusd's); every domain at
  // once, it does.
  x.push_back(Ex("reset_gpu_locked_clocks", Req("POST", "/gpu/reset_gpu_locked_clocks?gpu_ids=1")));
  x.push_back(Ex("reset_locked_clocks", Req("POST", "/gpu/reset_locked_clocks?gpu_ids=1")));
  x.push_back(Ex("get_power_limit_after_set", Req("GET", "/gpu/get_power_limit?gpu_ids=0")));
  x.push_back(Ex("leases", Req("GET", "/leases")));
  x.push_back(Ex("lease_release", Req("POST", "/lease/release")));
  x.push_back(Ex("get_power_limit_restored", Req("GET", "/gpu/get_power_limit?gpu_ids=0")));
  return x;
}

TEST_F(WireReplayTest, DaemonDryRunAnswersAsRecorded) {
  DaemonProcess daemon(dir_.path(), 2);
  ASSERT_TRUE(daemon.Start({"--dry-run", "--group", std::to_string(getgid())}))
      << ReadFileToString(daemon.log()).value_or("");
  Normaliser normalise = BaseNormaliser(dir_.path());
  Replay("daemon_dry_run", Endpoint{daemon.socket(), 0, "/time"}, DaemonDryRunExchanges(),
         normalise);
  PrintLogOnFailure(daemon.log());
}

TEST_F(WireReplayTest, DaemonOverAmdSmiAnswersAsRecorded) {
  DaemonProcess daemon(dir_.path(), 2);
  daemon.set_vendor(DaemonFakeGpuVendors()[1]);
  ASSERT_EQ(daemon.vendor().name, "amdsmi");
  ASSERT_TRUE(daemon.Start({"--group", std::to_string(getgid())}))
      << ReadFileToString(daemon.log()).value_or("");
  Normaliser normalise = BaseNormaliser(dir_.path());
  normalise.patterns.push_back(
      {std::regex(R"("energy_mj":[0-9]+)"), R"("energy_mj":<fake counter>)"});
  Replay("daemon_amd", Endpoint{daemon.socket(), 0, "/time"}, DaemonAmdExchanges(), normalise);
  PrintLogOnFailure(daemon.log());
}

TEST_F(WireReplayTest, DaemonWithTokensAnswersAsRecorded) {
  const std::string key = dir_.WriteFile("signing.key", kSigningKey);
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  DaemonProcess daemon(dir_.path(), 2);
  ASSERT_TRUE(daemon.Start({"--signing-key-path", key, "--enable", "gpu-read,gpu-control",
                            "--group", std::to_string(getgid())}))
      << ReadFileToString(daemon.log()).value_or("");
  const std::string reader = Token({"gpu-read"}, std::nullopt);
  const std::string all = Token({"gpu-read", "gpu-control"}, std::nullopt);
  const std::string expired = Token({"gpu-read"}, 1);
  Normaliser normalise = BaseNormaliser(dir_.path());
  normalise.literals.push_back({reader, "<token gpu-read>"});
  normalise.literals.push_back({all, "<token gpu-read,gpu-control>"});
  normalise.literals.push_back({expired, "<token gpu-read, expired 1970>"});
  Replay("daemon_token", Endpoint{daemon.socket(), 0, "/time"},
         DaemonTokenExchanges(reader, all, expired), normalise);
  PrintLogOnFailure(daemon.log());
}

}  // namespace
}  // namespace zeus::testing
