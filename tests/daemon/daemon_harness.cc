#include "tests/daemon/daemon_harness.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <sys/wait.h>

#include "tests/testing/raw_socket.h"

namespace zeus::testing {
namespace {

int Connect(const std::string& socket_path, int port) {
  return port > 0 ? ConnectLoopback(port) : ConnectUnix(socket_path);
}

// Sends `raw` and parses what comes back until the daemon closes the
// connection (at most 60 s).
HttpResult Exchange(int fd, const std::string& raw) {
  HttpResult result;
  if (fd < 0) return result;
  SendAll(fd, raw);
  const std::string answer = ReadToClose(fd, 60);
  close(fd);
  if (answer.compare(0, 9, "HTTP/1.1 ") != 0 && answer.compare(0, 9, "HTTP/1.0 ") != 0) {
    return result;
  }
  result.status = std::atoi(answer.c_str() + 9);
  const size_t end = answer.find("\r\n\r\n");
  if (end != std::string::npos) result.body = answer.substr(end + 4);
  return result;
}

}  // namespace

HttpResult Http(const std::string& socket_path, const std::string& method,
                const std::string& target, const std::string& body, int port) {
  std::string raw = method + " " + target + " HTTP/1.1\r\nHost: zeusd\r\nConnection: close\r\n";
  raw += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return Exchange(Connect(socket_path, port), raw);
}

HttpResult RawHttp(const std::string& socket_path, const std::string& raw) {
  return Exchange(Connect(socket_path, 0), raw);
}

std::vector<FakeGpuSettings> ReadFakeGpus(const std::string& state_file, int gpus) {
  std::vector<FakeGpuSettings> out(static_cast<size_t>(gpus), FakeGpuSettings{700'000, 0});
  if (FILE* f = std::fopen(state_file.c_str(), "r")) {
    char line[256];
    for (FakeGpuSettings& g : out) {
      if (std::fgets(line, sizeof(line), f) == nullptr) break;
      if (std::sscanf(line, "%u %d %u %u %u %u", &g.power_limit_mw, &g.persistence,
                      &g.gpu_clocks_min_mhz, &g.gpu_clocks_max_mhz, &g.mem_clocks_min_mhz,
                      &g.mem_clocks_max_mhz) < 1) {
        break;
      }
    }
    std::fclose(f);
  }
  return out;
}

std::vector<FakeGpuVendor> DaemonFakeGpuVendors() {
  return FakeGpuVendors(FAKE_NVML_FULL, FAKE_AMDSMI_FULL);
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

DaemonProcess::DaemonProcess(std::string dir, int gpus) : dir_(std::move(dir)), gpus_(gpus) {}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) Kill(SIGKILL);
}

bool DaemonProcess::Start(const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env, bool wait) {
  pid_ = fork();
  if (pid_ == 0) {
    for (const auto& [name, value] : vendor_.Env()) setenv(name.c_str(), value.c_str(), 1);
    setenv(vendor_.Knob("GPUS").c_str(), std::to_string(gpus_).c_str(), 1);
    setenv(vendor_.Knob("STATE").c_str(), gpu_file().c_str(), 1);
    setenv(vendor_.Knob("LOG").c_str(), gpu_log().c_str(), 1);
    unsetenv("ZEUS_DRY_RUN");
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<std::string> argv_strings = {
        ZEUS_BINARY,       "daemon",
        "--socket",        socket(),
        "--state-file",    state_file(),
        "--powercap-root", powercap_root_.empty() ? dir_ + "/no-powercap" : powercap_root_};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    // Both streams into the log: stdout carries the "serving ... on" line.
    if (std::freopen(log().c_str(), "a", stdout) == nullptr) _exit(126);
    dup2(fileno(stdout), fileno(stderr));
    execv(ZEUS_BINARY, argv.data());
    _exit(127);
  }
  if (!wait) return true;
  return WaitFor(
             [&] {
               int status = 0;
               if (waitpid(pid_, &status, WNOHANG) == pid_) {
                 pid_ = -1;
                 return true;
               }
               return Http(socket(), "GET", "/time").status == 200;
             },
             std::chrono::seconds(60)) &&
         pid_ > 0;
}

int DaemonProcess::Kill(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

int DaemonProcess::WaitForExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  int status = -1;
  WaitFor(
      [&] {
        if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
        pid_ = -1;
        return true;
      },
      timeout);
  return pid_ > 0 ? -1 : status;
}

ClientProcess::ClientProcess(std::function<int(ClientProcess&)> body) {
  if (pipe(pipe_) != 0) std::abort();
  pid_ = fork();
  if (pid_ == 0) {
    close(pipe_[0]);
    pipe_[0] = -1;
    _exit(body(*this));
  }
  close(pipe_[1]);
  pipe_[1] = -1;
}

ClientProcess::~ClientProcess() {
  if (pid_ > 0) Kill(SIGKILL);
  if (pipe_[0] >= 0) close(pipe_[0]);
}

void ClientProcess::Report(const std::string& line) {
  const std::string data = line + "\n";
  if (write(pipe_[1], data.data(), data.size()) < 0) _exit(99);
}

void ClientProcess::HoldForever() {
  while (true) pause();
}

std::string ClientProcess::NextReport() {
  while (true) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    char buffer[256];
    ssize_t n = read(pipe_[0], buffer, sizeof(buffer));
    if (n <= 0) return "";
    buffered_.append(buffer, static_cast<size_t>(n));
  }
}

int ClientProcess::Kill(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  return Wait();
}

int ClientProcess::Wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

}  // namespace zeus::testing
