// Test harness for `zeus daemon`: runs the built binary as a separate process
// over a fake GPU library (the fake libnvml by default, or the fake
// libamd_smi: set_vendor), whose GPU state lives in a file every process
// shares (FAKE_NVML_STATE, FAKE_AMDSMI_STATE), and talks HTTP to it from
// forked client processes, whose peer credentials the daemon sees.

#ifndef ZEUS_TESTS_DAEMON_DAEMON_HARNESS_H_
#define ZEUS_TESTS_DAEMON_DAEMON_HARNESS_H_

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "tests/device/fake_gpu_vendor.h"

namespace zeus::testing {

struct HttpResult {
  int status = 0;  // 0: no answer (connection failed or closed).
  std::string body;
};

// One request over the Unix socket at `socket_path`, or to 127.0.0.1:`port`
// when `port` > 0 ("Connection: close"). Only raw system calls: usable in a
// forked child.
HttpResult Http(const std::string& socket_path, const std::string& method,
                const std::string& target, const std::string& body = "", int port = 0);
// Sends `raw` bytes as they are and returns the answer.
HttpResult RawHttp(const std::string& socket_path, const std::string& raw);

// The fake GPUs' settings as the shared state file holds them (the fake
// libamd_smi's holds power limits only: the rest stay 0).
struct FakeGpuSettings {
  unsigned int power_limit_mw = 0;
  int persistence = 0;
  // Locked ranges in MHz; 0 0: unlocked.
  unsigned int gpu_clocks_min_mhz = 0, gpu_clocks_max_mhz = 0;
  unsigned int mem_clocks_min_mhz = 0, mem_clocks_max_mhz = 0;
};
std::vector<FakeGpuSettings> ReadFakeGpus(const std::string& state_file, int gpus);

// Both fake vendors (FAKE_NVML_FULL, FAKE_AMDSMI_FULL), NVML first.
std::vector<FakeGpuVendor> DaemonFakeGpuVendors();

// Polls `done` every 5 ms until it holds or `timeout` passes; returns it.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout);

class DaemonProcess {
 public:
  // `dir` holds the socket, the state file and the fake GPUs' files.
  explicit DaemonProcess(std::string dir, int gpus = 4);
  ~DaemonProcess();

  // The fake GPU library the daemon loads (default: the fake libnvml). Call
  // before Start.
  void set_vendor(FakeGpuVendor vendor) { vendor_ = std::move(vendor); }
  const FakeGpuVendor& vendor() const { return vendor_; }

  // Starts `zeus daemon` with `args` (beyond socket and state file) and
  // `env` (beyond the fake library's); waits until it answers /time when
  // `wait` (returns false if it does not within 60 s: a bound for a broken
  // daemon, not a speed target).
  bool Start(const std::vector<std::string>& args = {},
             const std::map<std::string, std::string>& env = {}, bool wait = true);
  // Sends `signal` and reaps the process; returns its wait status.
  int Kill(int signal);
  // Waits up to `timeout` for the process to end on its own; its wait
  // status, or -1 when it still runs (it is left running).
  int WaitForExit(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }
  // The powercap tree the daemon reads CPUs from. Default: none (no CPUs).
  void set_powercap_root(std::string root) { powercap_root_ = std::move(root); }

  // Another socket or state file than the defaults below (a second daemon
  // sharing the fake GPUs of the first, with one of its paths).
  void set_socket(std::string path) { socket_ = std::move(path); }
  void set_state_file(std::string path) { state_file_ = std::move(path); }

  std::string socket() const { return socket_.empty() ? dir_ + "/zeusd.sock" : socket_; }
  std::string state_file() const {
    return state_file_.empty() ? dir_ + "/state.json" : state_file_;
  }
  std::string gpu_file() const { return dir_ + "/gpus"; }
  std::string gpu_log() const { return dir_ + "/nvml.log"; }
  std::string log() const { return dir_ + "/daemon.log"; }
  std::vector<FakeGpuSettings> Gpus() const { return ReadFakeGpus(gpu_file(), gpus_); }

 private:
  std::string dir_;
  int gpus_;
  FakeGpuVendor vendor_ = DaemonFakeGpuVendors()[0];
  std::string powercap_root_;
  std::string socket_;
  std::string state_file_;
  pid_t pid_ = -1;
};

// A forked client process. `body` runs in the child, which then exits with
// its return value; it may call Report() to pass a line to the parent and
// HoldForever() to wait for a signal.
class ClientProcess {
 public:
  explicit ClientProcess(std::function<int(ClientProcess&)> body);
  ~ClientProcess();
  // In the child: sends `line` to the parent.
  void Report(const std::string& line);
  // In the child: sleeps until killed.
  [[noreturn]] static void HoldForever();
  // In the parent: the next reported line ("" when the child ended first).
  std::string NextReport();
  // In the parent: signal, then reap; returns the wait status.
  int Kill(int signal);
  // In the parent: reaps; returns the wait status.
  int Wait();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int pipe_[2] = {-1, -1};
  std::string buffered_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_DAEMON_DAEMON_HARNESS_H_
