// `zeus serve`: the batch-size optimizer server.

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "zeus/device/clock.h"
#include "zeus/server/batch_size_service.h"
#include "zeus/server/http_server.h"
#include "zeus/server/store.h"
#include "zeus/util/strings.h"

#include "tools/commands.h"

namespace zeus::cli {
namespace {

struct ServeFlags {
  std::string db = "sqlite:zeus-batch-size.db";
  std::string listen = "127.0.0.1:8000";
  std::string token_file;
  double trial_timeout_s = 24 * 3600.0;
  int threads = 128;
  int db_connections = 32;
  size_t max_body_bytes = 1 << 20;
};

StatusOr<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError("--listen \"" + listen + "\": expected HOST:PORT");
  }
  StatusOr<int64_t> port = ParseInt64(listen.substr(colon + 1));
  if (!port.ok() || *port < 0 || *port > 65535) {
    return InvalidArgumentError("--listen \"" + listen + "\": port must be in [0, 65535]");
  }
  return std::make_pair(listen.substr(0, colon), static_cast<int>(*port));
}

Status Serve(const ServeFlags& flags) {
  ZEUS_ASSIGN_OR_RETURN(auto address, ParseListen(flags.listen));
  if (!(flags.trial_timeout_s > 0)) {
    return InvalidArgumentError("--trial-timeout-s must be > 0");
  }
  HttpServerOptions options;
  options.host = address.first;
  options.port = address.second;
  options.threads = flags.threads;
  options.max_body_bytes = flags.max_body_bytes;
  if (!flags.token_file.empty()) {
    ZEUS_ASSIGN_OR_RETURN(options.token, ReadTokenFile(flags.token_file));
  }
  // Block the stop signals before any thread starts (the SQLite store starts
  // a checkpointer) so that only the wait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ZEUS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                        OpenStore(flags.db, StoreOptions{flags.db_connections}));
  BatchSizeServiceOptions service_options;
  service_options.silent_trial_timeout_s = flags.trial_timeout_s;
  BatchSizeService service(store.get(), RealClock(), service_options);

  HttpServer server(&service, options);
  ZEUS_RETURN_IF_ERROR(server.Start());
  std::printf("zeus serve: listening on http://%s:%d (store %s, schema version %d)\n",
              options.host.c_str(), server.port(), std::string(store->backend()).c_str(),
              kStoreSchemaVersion);
  std::fflush(stdout);

  // Sweep silent trials a few times per timeout, at least once a minute.
  const double sweep_s = std::clamp(flags.trial_timeout_s / 4, 0.05, 60.0);
  timespec wait{static_cast<time_t>(sweep_s),
                static_cast<long>((sweep_s - static_cast<time_t>(sweep_s)) * 1e9)};
  while (true) {
    int received = sigtimedwait(&stop_signals, nullptr, &wait);
    if (received == SIGINT || received == SIGTERM) break;
    if (received < 0 && errno != EAGAIN && errno != EINTR) break;
    StatusOr<int> failed = service.FailSilentTrials();
    if (!failed.ok()) {
      std::fprintf(stderr, "zeus serve: failing silent trials: %s\n",
                   failed.status().ToString().c_str());
    } else if (*failed > 0) {
      std::fprintf(stderr, "zeus serve: failed %d silent trial(s)\n", *failed);
    }
  }
  server.Stop();
  std::printf("zeus serve: stopped\n");
  return Status::Ok();
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the batch-size optimizer server (JSON over HTTP) for recurring jobs.");
  cmd->add_option("--db", flags->db,
                  "Store: sqlite:PATH (default sqlite:zeus-batch-size.db) or postgresql://...");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to bind (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--token-file", flags->token_file,
                  "File holding a bearer token every request but /health must carry");
  cmd->add_option("--trial-timeout-s", flags->trial_timeout_s,
                  "Fail dispatched trials silent for longer than this")
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "HTTP worker threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--db-connections", flags->db_connections,
                  "Database connections this server keeps open at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-body-bytes", flags->max_body_bytes, "Larger request bodies get 413")
      ->capture_default_str();
  cmd->callback([flags, exit_code] {
    Status status = Serve(*flags);
    if (!status.ok()) {
      std::fprintf(stderr, "zeus serve: %s\n", status.ToString().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace zeus::cli
