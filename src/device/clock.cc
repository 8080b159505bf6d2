#include "zeus/device/clock.h"

#include <chrono>
#include <thread>

namespace zeus {
namespace {

class SteadyClock final : public Clock {
 public:
  std::chrono::nanoseconds Now() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
  double WallTimeS() override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void SleepFor(std::chrono::nanoseconds d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

Clock* RealClock() {
  static SteadyClock* clock = new SteadyClock();
  return clock;
}

}  // namespace zeus
