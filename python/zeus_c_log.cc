// The core's logs in libzeus_c.so: stderr until a handler is set
// (zeus_set_log_handler), then that handler (Python: the `zeus.core` logger
// of `logging`). Never stdout.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "python/zeus_c_api.h"

namespace {

// Forwards each message to a zeus_log_fn. base_sink serialises calls, so a
// handler sees one message at a time.
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  CallbackSink(zeus_log_fn fn, void* user) : fn_(fn), user_(user) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    fn_(static_cast<int32_t>(msg.level), text.c_str(), user_);
  }
  void flush_() override {}

 private:
  zeus_log_fn fn_;
  void* user_;
};

spdlog::level::level_enum LevelOf(int32_t level) {
  if (level < 0) return spdlog::level::trace;
  if (level >= 6) return spdlog::level::off;
  return static_cast<spdlog::level::level_enum>(level);
}

std::shared_ptr<spdlog::logger> StderrLogger() {
  return std::make_shared<spdlog::logger>("zeus",
                                          std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

// spdlog's own default logger writes to stdout: replaced when the library loads.
const bool kStderrByDefault = [] {
  spdlog::set_default_logger(StderrLogger());
  return true;
}();

}  // namespace

extern "C" void zeus_set_log_handler(zeus_log_fn fn, void* user, int32_t level) {
  static_cast<void>(kStderrByDefault);
  std::shared_ptr<spdlog::logger> logger =
      fn == nullptr
          ? StderrLogger()
          : std::make_shared<spdlog::logger>("zeus", std::make_shared<CallbackSink>(fn, user));
  logger->set_level(LevelOf(level));
  spdlog::set_default_logger(std::move(logger));
}
