#include "tools/service_loop.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

#include <spdlog/spdlog.h>

namespace zeus::cli {

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int StopSignals::Wait() const {
  while (true) {
    const int received = sigwaitinfo(&signals_, nullptr);
    if (received == SIGINT || received == SIGTERM) return received;
    if (received < 0 && errno != EINTR) return 0;
  }
}

int StopSignals::WaitTicking(double period_s, const std::function<void()>& tick) const {
  const timespec period{static_cast<time_t>(period_s),
                        static_cast<long>((period_s - static_cast<time_t>(period_s)) * 1e9)};
  while (true) {
    const int received = sigtimedwait(&signals_, nullptr, &period);
    if (received == SIGINT || received == SIGTERM) return received;
    if (received < 0 && errno != EAGAIN && errno != EINTR) return 0;
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
