#include "src/monitor/fork_guard.h"

#include <pthread.h>

#include <set>
#include <utility>

namespace zeus {

// The live guards. Process-wide by nature: pthread_atfork handlers take no
// argument and cannot be unregistered.
struct ForkGuardRegistry {
  std::mutex mu;
  std::set<ForkGuard*> guards;  // Guarded by mu.

  static ForkGuardRegistry& Get() {
    static ForkGuardRegistry* const registry = [] {
      auto* r = new ForkGuardRegistry();  // Never destroyed: handlers outlive statics.
      pthread_atfork(&Prepare, &Release, &Release);
      return r;
    }();
    return *registry;
  }

  static void Prepare() {
    ForkGuardRegistry& r = Get();
    r.mu.lock();
    for (ForkGuard* guard : r.guards) {
      for (std::mutex* m : guard->mutexes_) m->lock();
    }
  }

  static void Release() {
    ForkGuardRegistry& r = Get();
    for (auto it = r.guards.rbegin(); it != r.guards.rend(); ++it) {
      for (auto m = (*it)->mutexes_.rbegin(); m != (*it)->mutexes_.rend(); ++m) (*m)->unlock();
    }
    r.mu.unlock();
  }
};

ForkGuard::ForkGuard(std::vector<std::mutex*> mutexes) : mutexes_(std::move(mutexes)) {
  ForkGuardRegistry& r = ForkGuardRegistry::Get();
  std::lock_guard<std::mutex> lock(r.mu);
  r.guards.insert(this);
}

ForkGuard::~ForkGuard() {
  ForkGuardRegistry& r = ForkGuardRegistry::Get();
  std::lock_guard<std::mutex> lock(r.mu);
  r.guards.erase(this);
}

}  // namespace zeus
