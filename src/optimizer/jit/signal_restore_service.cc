#include "src/optimizer/jit/signal_restore_service.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

namespace zeus::internal {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT};
constexpr unsigned char kQuit = 0;

// Read by the handler: plain fds and the dispositions we replaced, written
// only while our handlers are not installed.
std::atomic<int> g_request_write_fd{-1};
std::atomic<int> g_done_read_fd{-1};
// The process that installed the handlers. A child forked from it (e.g. a
// data-loader worker) inherits handlers and pipe but must not restore the
// parent's GPUs when it is signalled.
std::atomic<pid_t> g_owner_pid{0};
struct sigaction g_previous[NSIG];

// The registry; never touched by the handler.
std::mutex g_mu;
std::vector<Restorable*> g_restorers;  // Guarded by g_mu.
int g_request_read_fd = -1;            // Guarded by g_mu.
int g_done_write_fd = -1;              // Guarded by g_mu.
std::thread* g_thread = nullptr;       // Guarded by g_mu.

void OnFatalSignal(int signo, siginfo_t* info, void* context) {
  int saved_errno = errno;
  int request_fd = g_request_write_fd.load();
  int done_fd = g_done_read_fd.load();
  unsigned char byte = static_cast<unsigned char>(signo);
  bool owner = getpid() == g_owner_pid.load();
  if (owner && request_fd >= 0 && done_fd >= 0 && write(request_fd, &byte, 1) == 1) {
    pollfd pfd{done_fd, POLLIN, 0};
    int timeout_ms = static_cast<int>(kSignalRestoreTimeout.count());
    if (poll(&pfd, 1, timeout_ms) > 0) {
      unsigned char ack;
      ssize_t ignored = read(done_fd, &ack, 1);
      (void)ignored;
    }
  }
  const struct sigaction& previous = g_previous[signo];
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signo, info, context);
  } else if (previous.sa_handler == SIG_IGN) {
    // Ignored before us: stay ignored.
  } else if (previous.sa_handler == SIG_DFL) {
    // Die of the same signal: it stays blocked until this handler returns.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, nullptr);
    raise(signo);
  } else {
    previous.sa_handler(signo);
  }
  errno = saved_errno;
}

void RestoreAllRegistered() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Restorable* r : g_restorers) {
    Status s = r->Restore();
    if (!s.ok()) spdlog::error("restore on signal: {}", s.ToString());
  }
}

void ServiceLoop(int request_read_fd, int done_write_fd) {
  for (;;) {
    unsigned char byte = kQuit;
    ssize_t n = read(request_read_fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kQuit) return;
    RestoreAllRegistered();
    unsigned char ack = 1;
    ssize_t ignored = write(done_write_fd, &ack, 1);
    (void)ignored;
  }
}

Status MakePipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return InternalError(std::string("power-limit restorer: pipe2 failed: ") + strerror(errno));
  }
  return Status::Ok();
}

// REQUIRES: g_mu held, nothing installed.
Status Install() {
  int request[2];
  int done[2];
  ZEUS_RETURN_IF_ERROR(MakePipe(request));
  Status s = MakePipe(done);
  if (!s.ok()) {
    close(request[0]);
    close(request[1]);
    return s;
  }
  g_owner_pid = getpid();
  g_request_read_fd = request[0];
  g_done_write_fd = done[1];
  g_request_write_fd = request[1];
  g_done_read_fd = done[0];
  // The thread inherits a mask blocking every signal, so no handler runs on
  // it (it would wait on itself).
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_thread = new std::thread(ServiceLoop, request[0], done[1]);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);

  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = OnFatalSignal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  for (int signo : kSignals) sigaction(signo, &ours, &g_previous[signo]);
  return Status::Ok();
}

// What Uninstall leaves to do once g_mu is released (the service thread may
// be waiting for g_mu to restore, so it is joined without it).
struct Teardown {
  std::thread* thread = nullptr;
  std::vector<int> fds;
};

// REQUIRES: g_mu held, installed.
Teardown Uninstall() {
  for (int signo : kSignals) sigaction(signo, &g_previous[signo], nullptr);
  Teardown t;
  int request_write_fd = g_request_write_fd.exchange(-1);
  t.fds = {request_write_fd, g_done_read_fd.exchange(-1), g_request_read_fd, g_done_write_fd};
  unsigned char quit = kQuit;
  ssize_t ignored = write(request_write_fd, &quit, 1);
  (void)ignored;
  t.thread = g_thread;
  g_thread = nullptr;
  g_request_read_fd = -1;
  g_done_write_fd = -1;
  return t;
}

}  // namespace

Status RegisterForSignalRestore(Restorable* restorer) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_restorers.empty()) ZEUS_RETURN_IF_ERROR(Install());
  g_restorers.push_back(restorer);
  return Status::Ok();
}

void UnregisterFromSignalRestore(Restorable* restorer) {
  Teardown teardown;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = std::find(g_restorers.begin(), g_restorers.end(), restorer);
    if (it == g_restorers.end()) return;
    g_restorers.erase(it);
    if (!g_restorers.empty()) return;
    teardown = Uninstall();
  }
  teardown.thread->join();
  delete teardown.thread;
  for (int fd : teardown.fds) close(fd);
}

}  // namespace zeus::internal
