// Keeps fork() from copying a mutex that another thread holds: while a
// ForkGuard lives, pthread_atfork handlers lock its mutexes before fork()
// and unlock them after, in the parent and in the child. A forked child
// therefore finds them unlocked, though the threads that use them stayed in
// the parent.
//
// REQUIRES: a guarded mutex is never held while calling fork(), nor while
// constructing or destroying a ForkGuard, nor while locking another guard's
// mutex in an order other than registration order (it is only for leaf
// locks held briefly: sample records, window maps).
//
// Thread-safety: guards may be created and destroyed from any thread.

#ifndef ZEUS_SRC_MONITOR_FORK_GUARD_H_
#define ZEUS_SRC_MONITOR_FORK_GUARD_H_

#include <mutex>
#include <vector>

namespace zeus {

class ForkGuard {
 public:
  explicit ForkGuard(std::vector<std::mutex*> mutexes);
  ~ForkGuard();
  ForkGuard(const ForkGuard&) = delete;
  ForkGuard& operator=(const ForkGuard&) = delete;

 private:
  friend struct ForkGuardRegistry;
  const std::vector<std::mutex*> mutexes_;
};

}  // namespace zeus

#endif  // ZEUS_SRC_MONITOR_FORK_GUARD_H_
