#include "zeus/client/batch_size_client.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "zeus/http/client.h"
#include "zeus/http/query.h"
#include "zeus/util/json.h"

namespace zeus {

using nlohmann::json;

namespace {

Status StatusOfHttp(int http_status, const std::string& body) {
  StatusOr<json> parsed = ParseJson(body, "server answer");
  std::string message = body.substr(0, 200);
  if (parsed.ok() && parsed->is_object() && parsed->contains("message") &&
      (*parsed)["message"].is_string()) {
    message = (*parsed)["message"].get<std::string>();
  }
  message = "server: " + message + " (HTTP " + std::to_string(http_status) + ")";
  switch (http_status) {
    case 400:
    case 413:
    case 422:
      return InvalidArgumentError(std::move(message));
    case 401:
    case 403:
      return PermissionDeniedError(std::move(message));
    case 404:
      return NotFoundError(std::move(message));
    case 409:
      return AlreadyExistsError(std::move(message));
    case 503:
      return UnavailableError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

// The client's transport: one kept-alive connection to the server, a
// deadline of timeout_s on every request; https through the system's CA store.
HttpClientOptions TransportOptions(const BatchSizeClientOptions& options) {
  HttpClientOptions http;
  http.timeout_s = options.timeout_s;
  http.keep_alive = true;
  return http;
}

}  // namespace

struct BatchSizeClient::Impl {
  BatchSizeClientOptions options;
  // The server URL without trailing slashes: paths are appended.
  std::string base_url;
  // Why https cannot be used (the system's CA store failed to load), if so.
  Status tls_error;
  HttpClient http;

  explicit Impl(BatchSizeClientOptions o)
      : options(std::move(o)), base_url(options.server_url), http(MakeTransport(&tls_error)) {
    while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  }

  HttpClientOptions MakeTransport(Status* tls_status) const {
    HttpClientOptions transport = TransportOptions(options);
    if (options.server_url.rfind("https://", 0) == 0) {
      StatusOr<std::shared_ptr<TlsContext>> tls = SystemTlsContext();
      if (tls.ok()) {
        transport.tls = *tls;
      } else {
        *tls_status = tls.status();
      }
    }
    return transport;
  }

  // One request; the parsed JSON answer of a 2xx, else the error.
  StatusOr<json> Once(const std::string& method, const std::string& path, const json* body) {
    if (!tls_error.ok()) return tls_error.WithContext("server " + options.server_url);
    HttpClientRequest request;
    request.method = method;
    request.url = base_url + path;
    if (body != nullptr) {
      request.body = body->dump();
      request.headers.emplace_back("Content-Type", "application/json");
    }
    if (options.token) request.headers.emplace_back("Authorization", "Bearer " + *options.token);
    StatusOr<HttpClientResponse> result = http.Send(request);
    if (!result.ok()) {
      // Connection failures and timeouts keep kUnavailable (retried); a bad
      // URL stays kInvalidArgument.
      return result.status().WithContext("server");
    }
    if (result->status < 200 || result->status >= 300) {
      return StatusOfHttp(result->status, result->body);
    }
    StatusOr<json> parsed = ParseJson(result->body, "server: answer to " + method + " " + path);
    if (!parsed.ok()) return InternalError(parsed.status().message());
    return parsed;
  }

  // Once(), retried while the server is unavailable.
  StatusOr<json> Idempotent(const std::string& method, const std::string& path, const json* body) {
    double delay_s = options.retry_delay_s;
    for (int attempt = 1;; ++attempt) {
      StatusOr<json> answer = Once(method, path, body);
      if (answer.ok() || answer.status().code() != StatusCode::kUnavailable ||
          attempt >= options.max_attempts) {
        return answer;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
      delay_s = std::min(delay_s * 2, options.max_retry_delay_s);
    }
  }
};

BatchSizeClient::BatchSizeClient(BatchSizeClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

BatchSizeClient::~BatchSizeClient() = default;

StatusOr<BatchSizeJobSpec> BatchSizeClient::Register(const BatchSizeJobSpec& spec) {
  json body = JobSpecToJson(spec);
  ZEUS_ASSIGN_OR_RETURN(json answer, impl_->Idempotent("POST", kRegisterJobPath, &body));
  // Answers may carry fields of a newer server (or the original's): ignored.
  std::vector<std::string> ignored;
  StatusOr<BatchSizeJobSpec> job = ParseJobSpec(answer, &ignored);
  if (!job.ok()) return InternalError("server: bad job in answer: " + job.status().message());
  if (job->job_id.empty()) return InternalError("server: answer lacks a job_id");
  job_id_ = job->job_id;
  return job;
}

StatusOr<TrialId> BatchSizeClient::NextBatchSize(const std::string& job_id, int attempt) {
  std::string path = std::string(kNextBatchSizePath) + "?job_id=" + PercentEncode(job_id);
  if (attempt > 1) path += "&attempt=" + std::to_string(attempt);
  ZEUS_ASSIGN_OR_RETURN(json answer, impl_->Once("GET", path, nullptr));
  std::vector<std::string> ignored;
  StatusOr<TrialId> trial = ParseTrialId(answer, &ignored);
  if (!trial.ok()) return InternalError("server: bad trial in answer: " + trial.status().message());
  return trial;
}

StatusOr<TrialId> BatchSizeClient::GetBatchSize() {
  if (job_id_.empty()) return FailedPreconditionError("batch-size client: Register() first");
  ZEUS_ASSIGN_OR_RETURN(TrialId trial, NextBatchSize(job_id_));
  trial_ = trial;
  return trial;
}

StatusOr<ReportResponse> BatchSizeClient::Report(const TrainingResult& result) {
  json body = ToJson(result);
  ZEUS_ASSIGN_OR_RETURN(json answer, impl_->Idempotent("POST", kReportPath, &body));
  std::vector<std::string> ignored;
  StatusOr<ReportResponse> response = ParseReportResponse(answer, &ignored);
  if (!response.ok()) {
    return InternalError("server: bad report answer: " + response.status().message());
  }
  return response;
}

StatusOr<ReportResponse> BatchSizeClient::ReportEpoch(int64_t epoch, double time_s, double energy_j,
                                                      double metric) {
  if (!trial_) return FailedPreconditionError("batch-size client: no run in progress");
  TrainingResult result{*trial_, time_s, energy_j, metric, epoch};
  ZEUS_ASSIGN_OR_RETURN(ReportResponse response, Report(result));
  if (response.stop_train) trial_.reset();
  return response;
}

StatusOr<ReportResponse> BatchSizeClient::CheckIn(double time_s, double energy_j) {
  if (!trial_) return FailedPreconditionError("batch-size client: no run in progress");
  json body = ToJson(ProgressCheckIn{*trial_, time_s, energy_j});
  ZEUS_ASSIGN_OR_RETURN(json answer, impl_->Idempotent("POST", kCheckInPath, &body));
  std::vector<std::string> ignored;
  StatusOr<ReportResponse> response = ParseReportResponse(answer, &ignored);
  if (!response.ok()) {
    return InternalError("server: bad check-in answer: " + response.status().message());
  }
  if (response->stop_train) trial_.reset();
  return response;
}

Status BatchSizeClient::EndTrial(const TrialId& trial) {
  json body = ToJson(trial);
  return impl_->Idempotent("PATCH", kEndTrialPath, &body).status();
}

Status BatchSizeClient::End() {
  if (!trial_) return Status::Ok();
  ZEUS_RETURN_IF_ERROR(EndTrial(*trial_));
  trial_.reset();
  return Status::Ok();
}

}  // namespace zeus
