// What the long-running commands (`zeus serve`, `zeus daemon`, `zeus
// exporter`) share: the stop signals and the wait for them, and --log-level.

#ifndef ZEUS_TOOLS_SERVICE_LOOP_H_
#define ZEUS_TOOLS_SERVICE_LOOP_H_

#include <signal.h>

#include <functional>
#include <string>

#include "zeus/status.h"

namespace zeus::cli {

// The stop signals: every signal whose default action ends the process and
// that another process can send (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
// SIGUSR2, SIGALRM, the real-time signals, ...), blocked so that only Wait
// receives them: the command then stops its service (`zeus daemon` puts
// back every leased setting) and exits 0. Not among them: SIGKILL (cannot
// be caught) and the fault signals (SIGSEGV, SIGABRT, ...).
class StopSignals {
 public:
  // Blocks the stop signals in the calling thread. REQUIRES: no thread has
  // been started yet (threads inherit the mask of the thread that starts
  // them, so every later thread has them blocked too). They stay blocked.
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Waits until a stop signal arrives and returns it; 0 when waiting failed
  // for a reason other than an interruption (the caller stops then too).
  int Wait() const;

  // As Wait, but calls `tick` every `period_s` seconds (and after an
  // interrupted wait) until a stop signal arrives. REQUIRES: period_s > 0.
  int WaitTicking(double period_s, const std::function<void()>& tick) const;

 private:
  sigset_t signals_;
};

// Sets spdlog's level from a --log-level value: trace, debug, info, warn,
// error or off (spdlog's other names, such as critical, work too).
// kInvalidArgument naming the flag and the value for anything else. Empty:
// the level stays as ZEUS_LOG_LEVEL set it (default info).
Status SetLogLevel(const std::string& level);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_SERVICE_LOOP_H_
