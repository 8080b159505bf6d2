// Sets environment variables for the lifetime of a test and restores them.

#ifndef ZEUS_TESTS_DEVICE_SCOPED_ENV_H_
#define ZEUS_TESTS_DEVICE_SCOPED_ENV_H_

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zeus::testing {

// Not thread-safe (setenv); use from the test's main thread only.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }

  void Set(const std::string& name, const std::string& value) {
    Save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void Unset(const std::string& name) {
    Save(name);
    unsetenv(name.c_str());
  }

 private:
  void Save(const std::string& name) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_DEVICE_SCOPED_ENV_H_
