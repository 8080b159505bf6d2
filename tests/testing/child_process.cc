#include "tests/testing/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <sys/prctl.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

namespace zeus::testing {
namespace {

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
    const std::string& stdout_path, const std::string& stderr_path) {
  if (argv.empty()) return InvalidArgumentError("ChildProcess: empty argv");
  // An exec failure is reported through a close-on-exec pipe.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return InternalError("pipe2: " + std::string(strerror(errno)));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return InternalError("fork: " + std::string(strerror(errno)));
  if (pid == 0) {
    close(report[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    const int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) {
      const int e = errno;
      (void)!write(report[1], &e, sizeof(e));
      _exit(127);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    const int e = errno;
    (void)!write(report[1], &e, sizeof(e));
    _exit(127);
  }
  close(report[1]);
  int exec_errno = 0;
  const ssize_t n = read(report[0], &exec_errno, sizeof(exec_errno));
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    waitpid(pid, nullptr, 0);
    return NotFoundError("cannot run '" + argv[0] + "': " + strerror(exec_errno));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
}

ChildProcess::~ChildProcess() {
  if (!exit_code_.has_value()) Stop();
}

std::optional<int> ChildProcess::Poll() {
  if (exit_code_.has_value()) return exit_code_;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exit_code_ = ExitCodeOf(status);
  return exit_code_;
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (Poll().has_value()) return *exit_code_;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Poll().has_value()) return *exit_code_;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  exit_code_ = ExitCodeOf(status);
  return *exit_code_;
}

StatusOr<std::string> ChildProcess::WaitForOutput(const std::string& file, const std::string& text,
                                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string contents;
  for (;;) {
    contents = ReadFileToString(file).value_or("");
    if (contents.find(text) != std::string::npos) return contents;
    if (Poll().has_value()) {
      return UnavailableError("the process exited (" + std::to_string(*exit_code_) +
                              ") before writing '" + text + "' to " + file + ": " + contents);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return UnavailableError("no '" + text + "' in " + file + " after " +
                          std::to_string(timeout.count()) + " ms: " + contents);
}

}  // namespace zeus::testing
