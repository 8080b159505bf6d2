#include "tests/testing/prometheus_server.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include "zeus/http/client.h"
#include "zeus/http/query.h"
#include "zeus/util/file.h"
#include "zeus/util/strings.h"

namespace zeus::testing {
namespace {

// A port that was free a moment ago on 127.0.0.1 (Prometheus cannot report
// the port it picked for :0; Start retries when one is taken meanwhile).
StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return UnavailableError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) return UnavailableError("no free port on 127.0.0.1");
  return static_cast<int>(ntohs(addr.sin_port));
}

// A client with a deadline of `timeout_s` per request, one connection each.
HttpClientOptions ClientOptions(double timeout_s) {
  HttpClientOptions options;
  options.timeout_s = timeout_s;
  options.keep_alive = false;
  return options;
}

// YAML single-quoted scalar.
std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string ConfigYaml(const PrometheusServerOptions& options) {
  const std::string interval = std::to_string(options.scrape_interval.count()) + "ms";
  std::ostringstream yaml;
  yaml << "global:\n"
       << "  scrape_interval: " << interval << "\n"
       << "  scrape_timeout: " << interval << "\n"
       << "  evaluation_interval: 1s\n"
       << "scrape_configs:\n";
  for (const ScrapeTarget& target : options.targets) {
    yaml << "  - job_name: " << Quoted(target.job) << "\n"
         << "    metrics_path: " << Quoted(target.metrics_path) << "\n"
         << "    static_configs:\n"
         << "      - targets: [" << Quoted(target.address) << "]\n";
  }
  return yaml.str();
}

std::string Tail(const std::string& text, size_t max_chars = 2000) {
  return text.size() <= max_chars ? text : "..." + text.substr(text.size() - max_chars);
}

}  // namespace

std::string PrometheusServer::FindBinary() {
  if (const char* env = std::getenv("ZEUS_PROMETHEUS"); env != nullptr && *env != '\0') {
    return access(env, X_OK) == 0 ? env : "";
  }
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/prometheus";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

PrometheusServer::PrometheusServer(PrometheusServerOptions options, std::unique_ptr<TempDir> dir,
                                   int port, std::unique_ptr<ChildProcess> process)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      port_(port),
      process_(std::move(process)) {}

PrometheusServer::~PrometheusServer() { process_->Stop(); }

std::string PrometheusServer::Log() const {
  return ReadFileToString(dir_->File("prometheus.log")).value_or("");
}

StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(
    const PrometheusServerOptions& options) {
  const std::string binary = FindBinary();
  if (binary.empty()) {
    return NotFoundError("no prometheus binary (Debian package `prometheus`, or $ZEUS_PROMETHEUS)");
  }
  auto dir = std::make_unique<TempDir>();
  const std::string config = dir->WriteFile("prometheus.yml", ConfigYaml(options));
  const std::string log = dir->File("prometheus.log");
  Status last_error;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ZEUS_ASSIGN_OR_RETURN(int port, FreePort());
    ZEUS_ASSIGN_OR_RETURN(
        std::unique_ptr<ChildProcess> process,
        ChildProcess::Start(
            {binary, "--config.file=" + config, "--storage.tsdb.path=" + dir->File("data"),
             "--web.listen-address=127.0.0.1:" + std::to_string(port),
             "--storage.tsdb.retention.time=1h", "--log.level=warn"},
            {}, log, log));
    HttpClientOptions probe_options = ClientOptions(0);
    probe_options.connect_timeout_s = 1;
    probe_options.idle_timeout_s = 5;
    HttpClient client(probe_options);
    const std::string ready_url = "http://127.0.0.1:" + std::to_string(port) + "/-/ready";
    const auto deadline = std::chrono::steady_clock::now() + options.start_timeout;
    while (std::chrono::steady_clock::now() < deadline && !process->Poll().has_value()) {
      if (StatusOr<HttpClientResponse> ready = client.Get(ready_url);
          ready.ok() && ready->status == 200) {
        return std::unique_ptr<PrometheusServer>(
            new PrometheusServer(options, std::move(dir), port, std::move(process)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const bool exited = process->Poll().has_value();
    process->Stop();
    last_error = UnavailableError("prometheus on 127.0.0.1:" + std::to_string(port) +
                                  (exited ? " exited" : " was not ready in time") +
                                  "; its log: " + Tail(ReadFileToString(log).value_or("")));
    if (!exited) break;  // A taken port makes it exit; anything else will not pass on retry.
  }
  return last_error;
}

StatusOr<std::string> PrometheusServer::Get(const std::string& path_and_query) {
  HttpClient client(ClientOptions(10));
  StatusOr<HttpClientResponse> result =
      client.Get("http://127.0.0.1:" + std::to_string(port_) + path_and_query);
  if (!result.ok()) {
    return UnavailableError("prometheus GET " + path_and_query + ": " + result.status().message());
  }
  return result->body;
}

StatusOr<std::vector<PromSample>> PrometheusServer::Query(const std::string& promql) {
  HttpClient client(ClientOptions(10));
  StatusOr<HttpClientResponse> result =
      client.Send({"POST",
                   "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/query",
                   {{"Content-Type", "application/x-www-form-urlencoded"}},
                   "query=" + PercentEncode(promql)});
  if (!result.ok()) {
    return UnavailableError("prometheus query '" + promql + "': " + result.status().message());
  }
  nlohmann::json reply = nlohmann::json::parse(result->body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) {
    return InternalError("prometheus query '" + promql + "': not JSON: " + Tail(result->body));
  }
  if (reply.value("status", "") != "success") {
    return InvalidArgumentError("prometheus query '" + promql +
                                "': " + reply.value("error", result->body));
  }
  const nlohmann::json& data = reply["data"];
  const std::string type = data.value("resultType", "");
  std::vector<PromSample> samples;
  auto value_of = [](const nlohmann::json& pair) {
    return std::strtod(pair.at(1).get<std::string>().c_str(), nullptr);
  };
  if (type == "scalar") {
    samples.push_back({{}, value_of(data["result"])});
  } else if (type == "vector") {
    for (const nlohmann::json& item : data["result"]) {
      PromSample sample;
      for (const auto& [name, value] : item["metric"].items()) {
        sample.labels[name] = value.get<std::string>();
      }
      sample.value = value_of(item["value"]);
      samples.push_back(std::move(sample));
    }
  } else {
    return InvalidArgumentError("prometheus query '" + promql + "': result type '" + type +
                                "' (expected an instant vector or a scalar)");
  }
  return samples;
}

StatusOr<std::vector<PromSample>> PrometheusServer::WaitForQuery(
    const std::string& promql, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status last = UnavailableError("no samples");
  for (;;) {
    StatusOr<std::vector<PromSample>> samples = Query(promql);
    if (samples.ok() && !samples->empty()) return samples;
    if (!samples.ok() && samples.status().code() == StatusCode::kInvalidArgument) return samples;
    last = samples.ok() ? UnavailableError("no samples") : samples.status();
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(options_.scrape_interval / 2);
  }
  return UnavailableError("prometheus query '" + promql + "' returned nothing within " +
                          std::to_string(timeout.count()) + " ms (" + last.message() + ")");
}

StatusOr<double> PrometheusServer::QueryValue(const std::string& promql,
                                              std::chrono::milliseconds timeout) {
  ZEUS_ASSIGN_OR_RETURN(std::vector<PromSample> samples, WaitForQuery(promql, timeout));
  if (samples.size() != 1) {
    return FailedPreconditionError("prometheus query '" + promql + "' returned " +
                                   std::to_string(samples.size()) + " samples, expected one");
  }
  return samples[0].value;
}

Status PrometheusServer::WaitForTargetsUp(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string down;
  for (;;) {
    ZEUS_ASSIGN_OR_RETURN(std::string body, Get("/api/v1/targets?state=active"));
    nlohmann::json reply = nlohmann::json::parse(body, nullptr, false);
    if (reply.is_discarded()) return InternalError("prometheus /api/v1/targets: not JSON: " + body);
    std::map<std::string, std::string> health;  // job -> "up" or its last error.
    for (const ScrapeTarget& target : options_.targets) health[target.job] = "not scraped yet";
    for (const nlohmann::json& t : reply["data"]["activeTargets"]) {
      const std::string job = t["labels"].value("job", "");
      health[job] = t.value("health", "") == "up" ? "up" : t.value("lastError", "unknown");
    }
    down.clear();
    for (const auto& [job, state] : health) {
      if (state != "up") down += (down.empty() ? "" : "; ") + job + ": " + state;
    }
    if (down.empty()) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(options_.scrape_interval / 2);
  }
  return UnavailableError("prometheus targets down after " + std::to_string(timeout.count()) +
                          " ms: " + down);
}

}  // namespace zeus::testing
