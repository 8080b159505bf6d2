#include "tools/service_loop.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

#include <spdlog/spdlog.h>

namespace zeus::cli {

namespace {

// Every signal whose default action ends the process and that is sent to it
// (not raised by a fault of one thread): SIGKILL cannot be caught, and
// SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS and SIGABRT come from a
// fault (the daemon's state file covers those). SIGPIPE is thread-directed:
// the commands ignore it instead.
constexpr int kStopSignals[] = {SIGHUP,    SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,
                                SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,  SIGXCPU, SIGXFSZ, SIGSTKFLT};

}  // namespace

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  for (int signal : kStopSignals) sigaddset(&signals_, signal);
  for (int signal = SIGRTMIN; signal <= SIGRTMAX; ++signal) sigaddset(&signals_, signal);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int StopSignals::Wait() const {
  while (true) {
    const int received = sigwaitinfo(&signals_, nullptr);
    if (received > 0) return received;
    if (errno != EINTR) return 0;
  }
}

int StopSignals::WaitTicking(double period_s, const std::function<void()>& tick) const {
  const timespec period{static_cast<time_t>(period_s),
                        static_cast<long>((period_s - static_cast<time_t>(period_s)) * 1e9)};
  while (true) {
    const int received = sigtimedwait(&signals_, nullptr, &period);
    if (received > 0) return received;
    if (errno != EAGAIN && errno != EINTR) return 0;
    tick();
  }
}

Status SetLogLevel(const std::string& level) {
  if (level.empty()) return Status::Ok();  // Left as ZEUS_LOG_LEVEL set it.
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return InvalidArgumentError("--log-level \"" + level +
                                "\": expected trace, debug, info, warn, error or off");
  }
  spdlog::set_level(parsed);
  return Status::Ok();
}

}  // namespace zeus::cli
