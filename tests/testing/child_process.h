// A child process for tests: started with extra environment variables, its
// stdout and stderr sent to files, killed when the test forgets it (and when
// the test process dies: PR_SET_PDEATHSIG).
//
// Thread-safety: one thread per object.

#ifndef ZEUS_TESTS_TESTING_CHILD_PROCESS_H_
#define ZEUS_TESTS_TESTING_CHILD_PROCESS_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "zeus/status.h"

namespace zeus::testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path, or a name looked up in PATH) with argv, the
  // process environment plus `env` (a value replaces the inherited one), and
  // stdout/stderr appended to the given files. kNotFound naming argv[0] when
  // it cannot be executed.
  static StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
      const std::string& stdout_path, const std::string& stderr_path);
  // Stop() unless it already exited.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code once it has exited (128 + N after signal N), else nullopt.
  std::optional<int> Poll();
  // Sends SIGTERM, waits up to `grace`, then SIGKILL; returns the exit code
  // as Poll() does.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // Polls `file` (e.g. its stdout) until it contains `text` or the process
  // exits or `timeout` passes; returns the file's contents when found.
  // kUnavailable with the file's contents otherwise.
  StatusOr<std::string> WaitForOutput(const std::string& file, const std::string& text,
                                      std::chrono::milliseconds timeout);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::optional<int> exit_code_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_TESTING_CHILD_PROCESS_H_
