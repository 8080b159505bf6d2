// Time source. Everything that timestamps takes a Clock*, so tests drive time
// with FakeClock.
//
// Thread-safety: every method may be called concurrently from several threads.

#ifndef ZEUS_DEVICE_CLOCK_H_
#define ZEUS_DEVICE_CLOCK_H_

#include <chrono>

namespace zeus {

class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // Monotonic time since an arbitrary origin.
  virtual std::chrono::nanoseconds Now() = 0;
  // Seconds since the Unix epoch (for logs only; may jump).
  virtual double WallTimeS() = 0;
  // Blocks the calling thread for `d` of this clock's time.
  virtual void SleepFor(std::chrono::nanoseconds d) = 0;
};

// The process-wide steady clock. Never null; lives for the whole process.
Clock* RealClock();

}  // namespace zeus

#endif  // ZEUS_DEVICE_CLOCK_H_
