#include "zeus/http/client.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/local/stream_protocol.hpp>
#include <sys/un.h>

#include "zeus/util/strings.h"

#include "src/http/client_connection.h"

namespace zeus {
namespace http_client {

namespace {

// "2", "0.5", "1.25": seconds as a person writes them.
std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", s);
  return text;
}

Clock::time_point Sooner(Clock::time_point deadline, double phase_s) {
  if (phase_s <= 0) return deadline;
  const auto phase =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(phase_s));
  const Clock::time_point now = Clock::now();
  if (deadline != Clock::time_point::max() && deadline - now <= phase) return deadline;
  return now + phase;
}

bool IsParseError(const error_code& ec) {
  namespace http = beast::http;
  return ec.category() == http::make_error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::body_limit && ec != http::error::header_limit &&
         ec != http::error::buffer_overflow && ec != http::error::need_buffer &&
         ec != http::error::need_more;
}

}  // namespace

Clock::time_point Limits::ConnectExpiry() const { return Sooner(deadline, connect_timeout_s); }
Clock::time_point Limits::WriteExpiry() const { return deadline; }
Clock::time_point Limits::ReadExpiry() const { return Sooner(deadline, idle_timeout_s); }

std::string Limits::TimeoutMessage(const char* doing, bool connecting) const {
  // A phase limit fired when the deadline is still ahead (by more than the
  // timer's slack).
  const bool deadline_passed = deadline != Clock::time_point::max() &&
                               Clock::now() + std::chrono::milliseconds(1) >= deadline;
  if (!deadline_passed && connecting && connect_timeout_s > 0) {
    return "timed out after " + Seconds(connect_timeout_s) + " s " + doing;
  }
  if (!deadline_passed && !connecting && idle_timeout_s > 0) {
    return "stalled: no data for " + Seconds(idle_timeout_s) + " s " + doing;
  }
  return "timed out after " + Seconds(timeout_s) + " s " + doing;
}

Status TransportError(const error_code& ec, const Limits& limits, const char* doing) {
  namespace http = beast::http;
  if (ec == beast::error::timeout) return UnavailableError(limits.TimeoutMessage(doing, false));
  if (ec == http::error::body_limit) {
    return IoError("answer body larger than the limit of " + std::to_string(limits.max_body_bytes) +
                   " bytes");
  }
  if (ec == http::error::header_limit) {
    return IoError("answer head larger than the limit of " +
                   std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (ec == asio::error::connection_refused) return UnavailableError("connection refused");
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == asio::error::eof) {
    return UnavailableError(std::string("connection closed ") + doing + " (no complete answer)");
  }
  if (IsParseError(ec)) return UnavailableError("malformed answer: " + ec.message());
  return UnavailableError(std::string(doing) + ": " + ec.message());
}

StatusOr<beast::tcp_stream> OpenTcp(asio::io_context& ioc, const std::string& host,
                                    unsigned short port, const Limits& limits) {
  using asio::ip::tcp;
  std::vector<tcp::endpoint> endpoints;
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoints.emplace_back(address, port);
  } else {
    // Name resolution runs on Asio's resolver thread; a resolver that hangs
    // past the expiry is cancelled (getaddrinfo itself ends on the system
    // resolver's own timeouts).
    tcp::resolver resolver(ioc);
    bool done = false;
    error_code resolved_ec;
    resolver.async_resolve(host, std::to_string(port),
                           [&](error_code result, const tcp::resolver::results_type& results) {
                             done = true;
                             resolved_ec = result;
                             for (const auto& entry : results)
                               endpoints.push_back(entry.endpoint());
                           });
    ioc.restart();
    const Clock::time_point until = limits.ConnectExpiry();
    if (until == Clock::time_point::max()) {
      ioc.run();
    } else {
      ioc.run_until(until);
    }
    if (!done) {
      resolver.cancel();
      ioc.restart();
      ioc.run();
      return UnavailableError(limits.TimeoutMessage("resolving the host name", true));
    }
    if (resolved_ec) {
      return UnavailableError("cannot resolve host '" + host + "': " + resolved_ec.message());
    }
    if (endpoints.empty()) return UnavailableError("host '" + host + "' has no address");
  }
  beast::tcp_stream stream(ioc);
  ExpireAt(stream, limits.ConnectExpiry());
  ec =
      RunOperation(ioc, [&](auto handler) { stream.async_connect(endpoints, std::move(handler)); });
  if (ec) {
    error_code ignored;
    stream.socket().close(ignored);
    if (ec == beast::error::timeout)
      return UnavailableError(limits.TimeoutMessage("connecting", true));
    if (ec == asio::error::connection_refused) return UnavailableError("connection refused");
    return UnavailableError("cannot connect: " + ec.message());
  }
  // Requests go out in one write, but an answer may be read while the next
  // request is written: no Nagle delay on either side's small segments.
  stream.socket().set_option(tcp::no_delay(true), ec);
  return stream;
}

namespace {

using UnixStream = beast::basic_stream<asio::local::stream_protocol>;

StatusOr<std::unique_ptr<ClientConnection>> OpenUnix(asio::io_context& ioc, const std::string& path,
                                                     const Limits& limits) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return InvalidArgumentError("socket path longer than " +
                                std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
  }
  UnixStream stream(ioc);
  ExpireAt(stream, limits.ConnectExpiry());
  const error_code ec = RunOperation(ioc, [&](auto handler) {
    stream.async_connect(asio::local::stream_protocol::endpoint(path), std::move(handler));
  });
  if (ec) {
    if (ec == beast::error::timeout)
      return UnavailableError(limits.TimeoutMessage("connecting", true));
    if (ec == asio::error::connection_refused) return UnavailableError("connection refused");
    return UnavailableError("cannot connect: " + ec.message());
  }
  return std::unique_ptr<ClientConnection>(
      std::make_unique<StreamConnection<UnixStream>>(ioc, std::move(stream)));
}

// One URL, split.
struct Url {
  bool https = false;
  std::string host;       // Without IPv6 brackets.
  std::string authority;  // As written: the Host header.
  unsigned short port = 80;
  std::string target;  // Path and query, "/" at least.

  std::string Origin() const {
    return std::string(https ? "https" : "http") + "://" + authority_lower();
  }
  std::string authority_lower() const { return ToLower(host) + ":" + std::to_string(port); }
};

StatusOr<Url> ParseUrl(const std::string& url) {
  auto bad = [&url](const std::string& why) {
    return InvalidArgumentError("URL '" + url + "': " + why);
  };
  for (unsigned char c : url) {
    if (c <= ' ' || c == 0x7f) return bad("contains a space or control character");
  }
  Url out;
  size_t rest = 0;
  if (StartsWithIgnoreCase(url, "http://")) {
    rest = 7;
  } else if (StartsWithIgnoreCase(url, "https://")) {
    out.https = true;
    out.port = 443;
    rest = 8;
  } else {
    const size_t colon = url.find("://");
    if (colon == std::string::npos) return bad("not an http:// or https:// URL");
    return bad("unsupported scheme '" + url.substr(0, colon) + "' (expected http or https)");
  }
  const size_t authority_end = url.find_first_of("/?#", rest);
  out.authority = url.substr(rest, authority_end - rest);
  if (out.authority.empty()) return bad("no host");
  if (out.authority.find('@') != std::string::npos) return bad("user information is not supported");
  std::string port_text;
  if (out.authority[0] == '[') {
    const size_t close = out.authority.find(']');
    if (close == std::string::npos) return bad("unterminated IPv6 address");
    out.host = out.authority.substr(1, close - 1);
    if (close + 1 < out.authority.size()) {
      if (out.authority[close + 1] != ':') return bad("junk after the IPv6 address");
      port_text = out.authority.substr(close + 2);
    }
  } else {
    const size_t colon = out.authority.find(':');
    out.host = out.authority.substr(0, colon);
    if (colon != std::string::npos) port_text = out.authority.substr(colon + 1);
  }
  if (out.host.empty()) return bad("no host");
  if (!port_text.empty() || out.authority.back() == ':') {
    if (port_text.empty() || port_text.size() > 5 ||
        !std::all_of(port_text.begin(), port_text.end(),
                     [](unsigned char c) { return std::isdigit(c); })) {
      return bad("bad port '" + port_text + "'");
    }
    const int port = std::stoi(port_text);
    if (port < 1 || port > 65535) return bad("port " + port_text + " outside 1-65535");
    out.port = static_cast<unsigned short>(port);
  }
  if (authority_end != std::string::npos) {
    out.target = url.substr(authority_end, url.find('#', authority_end) - authority_end);
  }
  if (out.target.empty() || out.target[0] != '/') out.target = "/" + out.target;
  return out;
}

// The scheme of an absolute URI reference (RFC 3986 3.1: ALPHA *(ALPHA /
// DIGIT / "+" / "-" / ".") ":"), lower-cased; "" for a relative one.
std::string SchemeOf(const std::string& reference) {
  const size_t colon = reference.find(':');
  if (colon == std::string::npos || colon == 0) return "";
  for (size_t i = 0; i < colon; ++i) {
    const unsigned char c = static_cast<unsigned char>(reference[i]);
    const bool ok = std::isalpha(c) != 0 ||
                    (i > 0 && (std::isdigit(c) != 0 || c == '+' || c == '-' || c == '.'));
    if (!ok) return "";
  }
  std::string scheme = reference.substr(0, colon);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme;
}

// The URL a Location header points to, from the URL that answered.
std::string ResolveLocation(const std::string& base, const Url& base_url,
                            const std::string& location) {
  if (StartsWithIgnoreCase(location, "http://") || StartsWithIgnoreCase(location, "https://")) {
    return location;
  }
  const std::string origin = base.substr(0, base.find("://") + 3) + base_url.authority;
  if (location.rfind("//", 0) == 0) return base.substr(0, base.find("://") + 1) + location;
  if (!location.empty() && location[0] == '/') return origin + location;
  // Relative to the directory of the base path.
  std::string path = base_url.target.substr(0, base_url.target.find('?'));
  path = path.substr(0, path.rfind('/') + 1);
  return origin + path + location;
}

// A header field that would break the request's framing.
bool IsBadField(const std::string& name, const std::string& value) {
  if (name.empty()) return true;
  for (unsigned char c : name) {
    if (c <= ' ' || c == ':' || c >= 0x7f) return true;
  }
  for (unsigned char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') return true;
  }
  return false;
}

// RFC 9110 9.2.2: may be sent again after a connection failed.
bool IsIdempotent(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS";
}

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

void RemoveFields(HttpClientFields* fields, std::initializer_list<std::string_view> names) {
  fields->erase(std::remove_if(fields->begin(), fields->end(),
                               [&](const std::pair<std::string, std::string>& field) {
                                 for (std::string_view name : names) {
                                   if (EqualsIgnoreCase(field.first, name)) return true;
                                 }
                                 return false;
                               }),
                fields->end());
}

}  // namespace
}  // namespace http_client

std::string HttpClientResponse::Header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (EqualsIgnoreCase(field, name)) return value;
  }
  return "";
}

struct HttpClient::Impl {
  explicit Impl(HttpClientOptions o) : options(std::move(o)) {}

  // One request to `url` (no redirect followed); the context names it in
  // errors.
  StatusOr<HttpClientResponse> Exchange(const std::string& method, const std::string& url,
                                        const http_client::Url& parsed,
                                        const HttpClientFields& headers, const std::string& body,
                                        const http_client::Limits& limits,
                                        const std::string& context) {
    namespace http = http_client::beast::http;
    const bool via_unix = !options.unix_socket_path.empty();
    if (parsed.https && via_unix) {
      return InvalidArgumentError(context + ": https over a Unix socket is not supported");
    }
    if (parsed.https && options.tls == nullptr) {
      return InvalidArgumentError(context +
                                  ": https needs a TlsContext (HttpClientOptions::tls); none set");
    }
    if (http_client::IsBadField(method, "")) {
      return InvalidArgumentError(context + ": bad method '" + method + "'");
    }
    http_client::WireRequest request;
    request.method_string(method);
    request.target(parsed.target);
    request.version(11);
    request.set(http::field::host, parsed.authority);
    if (!options.user_agent.empty()) request.set(http::field::user_agent, options.user_agent);
    if (!options.keep_alive) request.set(http::field::connection, "close");
    for (const auto& [name, value] : headers) {
      if (http_client::IsBadField(name, value)) {
        return InvalidArgumentError(context + ": header field '" + name +
                                    "' has a bad name or a line break in its value");
      }
      request.insert(name, value);
    }
    request.body() = body;
    request.prepare_payload();

    const std::string key = via_unix ? "unix:" + options.unix_socket_path : parsed.Origin();
    for (int attempt = 1;; ++attempt) {
      const bool reused = connection != nullptr && connection_key == key && connection->Reusable();
      if (!reused) {
        connection.reset();
        StatusOr<std::unique_ptr<http_client::ClientConnection>> opened = Open(parsed, limits);
        if (!opened.ok()) return opened.status().WithContext(context);
        connection = std::move(opened).value();
        connection_key = key;
        ++connections_opened;
      }
      http_client::WireParser parser;
      parser.body_limit(options.max_body_bytes);
      parser.header_limit(options.max_header_bytes);
      if (method == "HEAD") parser.skip(true);
      uint64_t reported = 0;
      auto on_body = [&]() {
        if (!options.progress) return;
        const uint64_t received = parser.get().body().size();
        if (received == reported) return;
        reported = received;
        options.progress(received, parser.content_length().value_or(0));
      };
      bool peer_closed_first = false;
      Status status = connection->Exchange(request, parser, limits, on_body, &peer_closed_first);
      if (!status.ok()) {
        connection.reset();
        // A kept-alive connection that the server closed as the request
        // went out: an idempotent request goes once more on a new one.
        if (reused && peer_closed_first && attempt == 1 && http_client::IsIdempotent(method)) {
          continue;
        }
        return status.WithContext(context);
      }
      if (!options.keep_alive || !connection->Reusable()) connection.reset();
      http::response<http::string_body> answer = parser.release();
      HttpClientResponse out;
      out.status = static_cast<int>(answer.result_int());
      for (const auto& field : answer) {
        out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      out.body = std::move(answer.body());
      out.url = url;
      return out;
    }
  }

  StatusOr<std::unique_ptr<http_client::ClientConnection>> Open(const http_client::Url& url,
                                                                const http_client::Limits& limits) {
    // Made on first use, so that a failure to make one is a Status.
    if (!ioc_storage) ioc_storage.emplace(1);
    http_client::asio::io_context& ioc = *ioc_storage;
    if (!options.unix_socket_path.empty()) {
      return http_client::OpenUnix(ioc, options.unix_socket_path, limits);
    }
    if (url.https) return options.tls->Connect(ioc, url.host, url.port, limits);
    ZEUS_ASSIGN_OR_RETURN(http_client::beast::tcp_stream stream,
                          http_client::OpenTcp(ioc, url.host, url.port, limits));
    return std::unique_ptr<http_client::ClientConnection>(
        std::make_unique<http_client::StreamConnection<http_client::beast::tcp_stream>>(
            ioc, std::move(stream)));
  }

  HttpClientOptions options;
  std::optional<http_client::asio::io_context> ioc_storage;
  std::unique_ptr<http_client::ClientConnection> connection;
  std::string connection_key;
  uint64_t connections_opened = 0;
};

HttpClient::HttpClient(HttpClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpClient::~HttpClient() = default;

const HttpClientOptions& HttpClient::options() const { return impl_->options; }

uint64_t HttpClient::connections_opened() const { return impl_->connections_opened; }

StatusOr<HttpClientResponse> HttpClient::Get(const std::string& url) {
  HttpClientRequest request;
  request.url = url;
  return Send(request);
}

StatusOr<HttpClientResponse> HttpClient::Send(const HttpClientRequest& request) {
  // Asio and Beast report errors through error codes here; what may still
  // throw (memory, a system resource when the io_context is made) stays in.
  try {
    return SendOrThrow(request);
  } catch (const std::exception& e) {
    impl_->connection.reset();
    return InternalError(request.method + " " + request.url + ": " + e.what());
  }
}

StatusOr<HttpClientResponse> HttpClient::SendOrThrow(const HttpClientRequest& request) {
  const HttpClientOptions& options = impl_->options;
  http_client::Limits limits;
  limits.timeout_s = options.timeout_s;
  limits.connect_timeout_s = options.connect_timeout_s;
  limits.idle_timeout_s = options.idle_timeout_s;
  limits.max_body_bytes = options.max_body_bytes;
  limits.max_header_bytes = options.max_header_bytes;
  if (options.timeout_s > 0) {
    limits.deadline =
        http_client::Clock::now() + std::chrono::duration_cast<http_client::Clock::duration>(
                                        std::chrono::duration<double>(options.timeout_s));
  }
  const std::string via =
      options.unix_socket_path.empty() ? "" : " via unix socket " + options.unix_socket_path;
  std::string method = request.method;
  std::string url = request.url;
  std::string body = request.body;
  HttpClientFields headers = request.headers;
  for (int redirects = 0;; ++redirects) {
    const std::string context = method + " " + url + via;
    StatusOr<http_client::Url> parsed = http_client::ParseUrl(url);
    if (!parsed.ok()) return parsed.status();
    ZEUS_ASSIGN_OR_RETURN(HttpClientResponse answer,
                          impl_->Exchange(method, url, *parsed, headers, body, limits, context));
    const std::string location = answer.Header("Location");
    if (options.max_redirects <= 0 || !http_client::IsRedirect(answer.status) || location.empty()) {
      return answer;
    }
    if (redirects >= options.max_redirects) {
      return UnavailableError(context + ": more than " + std::to_string(options.max_redirects) +
                              " redirects (the last to " + location + ")");
    }
    const std::string scheme = http_client::SchemeOf(location);
    if (!scheme.empty() && scheme != "http" && scheme != "https") {
      return UnavailableError(context + ": HTTP " + std::to_string(answer.status) +
                              " redirect to unsupported scheme '" + scheme + "' (" +
                              location.substr(0, 200) + "); only http and https are followed");
    }
    const std::string next = http_client::ResolveLocation(url, *parsed, location);
    StatusOr<http_client::Url> next_parsed = http_client::ParseUrl(next);
    if (!next_parsed.ok()) {
      return UnavailableError(context + ": HTTP " + std::to_string(answer.status) +
                              " redirect to a bad location: " + next_parsed.status().message());
    }
    if (answer.status == 303 ||
        ((answer.status == 301 || answer.status == 302) && method == "POST")) {
      if (method != "HEAD") method = "GET";
      body.clear();
      http_client::RemoveFields(&headers, {"Content-Type", "Content-Encoding"});
    }
    if (next_parsed->Origin() != parsed->Origin()) {
      http_client::RemoveFields(&headers, {"Authorization", "Cookie"});
    }
    url = next;
  }
}

}  // namespace zeus
