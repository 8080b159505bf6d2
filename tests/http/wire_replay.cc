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

#include "tests/http/wire_replay.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tests/testing/raw_socket.h"

namespace zeus::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Bodies longer than this are shown by length and hash.
constexpr size_t kHashAbove = 4096;
// How long one exchange may take before what arrived is recorded as is.
constexpr std::chrono::milliseconds kExchangeTimeout{3000};
// How long a server that said it closes the connection may take to do so.
constexpr std::chrono::milliseconds kCloseWait{2000};

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
    "# Recorded by wire_replay_test (tests/http/wire_replay.h): raw requests and the raw answers\n"
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

}  // namespace

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

void Replay(const std::string& name, const Endpoint& at, const std::vector<Exchange>& exchanges,
            const Normaliser& normalise) {
  std::vector<std::string> rendered;
  for (const Exchange& e : exchanges) rendered.push_back(Render(e, Run(at, e), normalise));
  CheckGolden(name, rendered);
}

}  // namespace zeus::testing
