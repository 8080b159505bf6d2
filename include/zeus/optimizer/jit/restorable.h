// Something that gives GPUs back a setting Zeus changed (a power limit, a
// locked clock), on demand and on a fatal signal.
//
// Signal design: a restorer may register with the process-wide signal path
// (SIGINT, SIGTERM, SIGHUP, and SIGABRT, which std::terminate raises for an
// uncaught exception). The handler only does async-signal-safe things. It
// writes the signal number to a pipe read by one service thread (which has
// every signal blocked), waits on a second pipe (poll, at most
// kSignalRestoreTimeout) for that thread to call Restore() on every
// registered restorer, then hands the signal to the disposition that was
// installed before ours: a previous handler is called (e.g. Python's
// KeyboardInterrupt), SIG_IGN ignores it, and SIG_DFL is re-raised so the
// process dies of the same signal. The handlers are installed while at least
// one restorer is registered and the previous dispositions are put back when
// the last one goes. A process forked from the one that registered (e.g. a
// data-loader worker) inherits the handlers but restores nothing when
// signalled: the signal only goes on to the previous disposition.
//
// Caveat: if the signal interrupts a thread holding a lock the restore needs
// (e.g. in the middle of a driver call on the same GPU), the service thread
// blocks and the handler gives up after the timeout; the GPU then keeps the
// setting it had.
//
// Thread-safety: Restore() may be called concurrently with itself and with
// the signal path.

#ifndef ZEUS_OPTIMIZER_JIT_RESTORABLE_H_
#define ZEUS_OPTIMIZER_JIT_RESTORABLE_H_

#include <chrono>

#include "zeus/status.h"

namespace zeus {

// How long a signal handler waits for the GPUs to be restored.
inline constexpr std::chrono::milliseconds kSignalRestoreTimeout{5000};

class Restorable {
 public:
  virtual ~Restorable() = default;
  // Puts back what was changed; the first time only (later calls return OK).
  virtual Status Restore() = 0;
};

}  // namespace zeus

#endif  // ZEUS_OPTIMIZER_JIT_RESTORABLE_H_
