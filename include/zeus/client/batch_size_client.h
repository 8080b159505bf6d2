// A C++ client of the batch-size optimizer server for one recurring job:
// register the job, get the batch size of this run, report after every
// epoch until told to stop, end the run early if it is abandoned.
//
//   BatchSizeClient client({.server_url = "http://127.0.0.1:8000"});
//   ZEUS_ASSIGN_OR_RETURN(BatchSizeJobSpec job, client.Register(spec));
//   ZEUS_ASSIGN_OR_RETURN(TrialId trial, client.GetBatchSize());
//   for (int epoch = 1;; ++epoch) {
//     ... train one epoch with trial.batch_size, evaluate ...
//     ZEUS_ASSIGN_OR_RETURN(ReportResponse r,
//                           client.ReportEpoch(epoch, time_s, energy_j, metric));
//     if (r.stop_train) break;
//   }
//
// Errors: the server's answer as a Status (422/400/413 kInvalidArgument,
// 404 kNotFound, 409 kAlreadyExists, 401 kPermissionDenied, 503 and
// connection failures kUnavailable, others kInternal), its message kept;
// no answer: HttpClient's error ("server: POST http://...: connection
// refused"). Idempotent calls (register, report, end) are retried on
// kUnavailable. Requests share one kept-alive connection (zeus/http/client.h).
//
// Thread-safety: not thread-safe; use one client per thread.

#ifndef ZEUS_CLIENT_BATCH_SIZE_CLIENT_H_
#define ZEUS_CLIENT_BATCH_SIZE_CLIENT_H_

#include <memory>
#include <optional>
#include <string>

#include "zeus/protocol/job_spec.h"
#include "zeus/protocol/protocol.h"
#include "zeus/status.h"

namespace zeus {

struct BatchSizeClientOptions {
  // Scheme, host and port of the server (https:// verified against the
  // system's CA store). Default: http://127.0.0.1:8000.
  std::string server_url = "http://127.0.0.1:8000";
  // Sent as `Authorization: Bearer <token>` when set. Default: none.
  std::optional<std::string> token;
  // Deadline of one request attempt, in s: connecting, sending and reading
  // the whole answer (0: none). Default: 30 s.
  double timeout_s = 30.0;
  // Attempts of an idempotent call while the server is unavailable (>= 1),
  // waiting retry_delay_s, doubled each time up to max_retry_delay_s, in
  // between. Default: 3 attempts, 0.1 s, at most 2 s.
  int max_attempts = 3;
  double retry_delay_s = 0.1;
  double max_retry_delay_s = 2.0;
};

class BatchSizeClient {
 public:
  explicit BatchSizeClient(BatchSizeClientOptions options);
  ~BatchSizeClient();
  BatchSizeClient(const BatchSizeClient&) = delete;
  BatchSizeClient& operator=(const BatchSizeClient&) = delete;

  // Registers `spec` (or finds the identical job) and remembers its id.
  // Returns the job as the server stored it, job_id filled in.
  StatusOr<BatchSizeJobSpec> Register(const BatchSizeJobSpec& spec);

  // Starts a run of the registered job: the batch size to use and the trial
  // it belongs to. REQUIRES: Register() succeeded (else kFailedPrecondition).
  StatusOr<TrialId> GetBatchSize();

  // Reports the run's progress after `epoch` epochs (1, 2, ...): cumulative
  // time in s and energy in J since the run began, and the validation
  // metric. kFailedPrecondition without a running trial.
  StatusOr<ReportResponse> ReportEpoch(int64_t epoch, double time_s, double energy_j,
                                       double metric);

  // A check-in of the current run during an epoch (POST /report/progress;
  // zeus serve only): its time in s and energy in J since the run began,
  // judged against its whole bound. A stop ends the run. kFailedPrecondition
  // without a running trial; kNotFound from a server without the route.
  StatusOr<ReportResponse> CheckIn(double time_s, double energy_j);

  // Ends the current run before the server stopped it (the trial becomes
  // failed); a no-op when no run is in progress.
  Status End();

  // The trial of the current run, if one is in progress.
  const std::optional<TrialId>& current_trial() const { return trial_; }

  // Stateless calls, one per route. `attempt`: which try of its submission
  // the trial is (BatchSizeService::NextBatchSize); 1 sends none.
  StatusOr<TrialId> NextBatchSize(const std::string& job_id, int attempt = 1);
  StatusOr<ReportResponse> Report(const TrainingResult& result);
  Status EndTrial(const TrialId& trial);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string job_id_;
  std::optional<TrialId> trial_;
};

}  // namespace zeus

#endif  // ZEUS_CLIENT_BATCH_SIZE_CLIENT_H_
