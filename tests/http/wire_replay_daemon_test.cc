// The wire of `zeus daemon` (zeusd's API, over the fake libnvml and
// libamd_smi) against its recorded transcripts (tests/http/wire_replay.h).

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/daemon/token.h"
#include "zeus/util/file.h"

#include "tests/daemon/daemon_harness.h"
#include "tests/http/wire_replay.h"
#include "tests/testing/temp_dir.h"

namespace zeus::testing {
namespace {

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
