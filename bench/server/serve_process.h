// `zeus serve` as a child process for the server benchmarks, so that its
// memory and CPU time are its own: started on 127.0.0.1:<free port> with
// `--db URL` (plus $ZEUS_BENCH_SERVE_ARGS), read from /proc while it runs.
//   ZEUS_BENCH_ZEUS=path/to/zeus   another `zeus` binary than ZEUS_BINARY

#ifndef ZEUS_BENCH_SERVER_SERVE_PROCESS_H_
#define ZEUS_BENCH_SERVER_SERVE_PROCESS_H_

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace zeus::bench {

// `zeus serve` on 127.0.0.1:<free port>; SIGTERM and reaped on destruction.
class Server {
 public:
  // Empty error() when it listens.
  explicit Server(const std::string& db_url) {
    int out[2];
    if (pipe(out) != 0) {
      error_ = "pipe failed";
      return;
    }
    std::vector<std::string> args = {
        "zeus", "serve",       "--db", db_url, "--listen", "127.0.0.1:0", "--idle-timeout-s",
        "600",  "--log-level", "warn"};
    if (const char* extra = std::getenv("ZEUS_BENCH_SERVE_ARGS")) {
      std::istringstream words(extra);
      for (std::string word; words >> word;) args.push_back(word);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const char* binary = std::getenv("ZEUS_BENCH_ZEUS");
      execv(binary != nullptr ? binary : ZEUS_BINARY, argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char c;
    while (line.find('\n') == std::string::npos && read(out[0], &c, 1) == 1) line += c;
    close(out[0]);
    const size_t at = line.rfind(':');
    if (line.find("listening on") == std::string::npos || at == std::string::npos) {
      error_ = "zeus serve did not start: " + line;
      return;
    }
    port_ = std::atoi(line.c_str() + at + 1);
  }
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  // A "VmRSS"/"VmHWM" line of /proc/<pid>/status in MB; -1 if unreadable.
  double MemoryMb(const std::string& field) const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind(field + ":", 0) == 0) return std::atof(line.c_str() + field.size() + 1) / 1024;
    }
    return -1;
  }

  // CPU time (user + system) the server has used so far, in seconds; -1 if
  // unreadable.
  double CpuSeconds() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t comm_end = text.rfind(')');
    if (comm_end == std::string::npos) return -1;
    std::istringstream fields(text.substr(comm_end + 2));
    std::string field;
    double ticks = 0;
    // Fields 3.. of proc(5); utime and stime are the 14th and 15th.
    for (int index = 3; index <= 15 && fields >> field; ++index) {
      if (index >= 14) ticks += std::atof(field.c_str());
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string error_;
};

}  // namespace zeus::bench

#endif  // ZEUS_BENCH_SERVER_SERVE_PROCESS_H_
