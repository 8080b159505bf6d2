"""The HTTP routes of the batch-size optimizer server (src/server/protocol.h),
called with the standard library.

Errors map as in the C++ client: HTTP 400/413/422 InvalidArgumentError,
401/403 PermissionDeniedError, 404 NotFoundError, 409 AlreadyExistsError,
503 and connection failures UnavailableError, anything else InternalError;
the message is the server's, with the HTTP status. Idempotent calls
(register, report, end trial) are retried while the server is unavailable.
"""

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

from zeus.exception import (AlreadyExistsError, InternalError, InvalidArgumentError,
                            NotFoundError, PermissionDeniedError, UnavailableError)

_BY_STATUS = {400: InvalidArgumentError, 413: InvalidArgumentError, 422: InvalidArgumentError,
              401: PermissionDeniedError, 403: PermissionDeniedError, 404: NotFoundError,
              409: AlreadyExistsError, 503: UnavailableError}


class BatchSizeServer:
    """One server at `url` ("http://host:port").

    Args:
        token: Sent as "Authorization: Bearer <token>" when set.
        timeout_s: Per request.
        max_attempts: Of an idempotent call while the server is unavailable,
            waiting retry_delay_s, doubled each time up to 2 s, in between.
    """

    def __init__(self, url, token=None, timeout_s=30.0, max_attempts=3, retry_delay_s=0.1):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidArgumentError(f"batch-size client: server_url must be http://host:port, "
                                       f"got {url!r}")
        if max_attempts < 1 or not timeout_s > 0:
            raise InvalidArgumentError(
                "batch-size client: max_attempts must be >= 1 and timeout_s > 0")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.retry_delay_s = retry_delay_s

    def _once(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            raw = e.read().decode("utf-8", "replace")
            message = raw[:200]
            try:
                parsed = json.loads(raw)
                for key in ("message", "error", "detail"):
                    if isinstance(parsed, dict) and isinstance(parsed.get(key), str):
                        message = parsed[key]
                        break
            except ValueError:
                pass
            raise _BY_STATUS.get(e.code, InternalError)(
                f"server: {message} (HTTP {e.code} on {method} {path})")
        except (urllib.error.URLError, socket.timeout, ConnectionError) as e:
            reason = getattr(e, "reason", e)
            raise UnavailableError(f"server: {self.url} unreachable on {method} {path}: {reason}")
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise InternalError(f"server: answer of {method} {path} is not JSON: {text[:200]!r}")

    def _idempotent(self, method, path, body=None):
        delay_s = self.retry_delay_s
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self._once(method, path, body)
            except UnavailableError:
                if attempt == self.max_attempts:
                    raise
                time.sleep(delay_s)
                delay_s = min(delay_s * 2, 2.0)

    def register(self, job):
        """POST /jobs: the job as stored (job_id filled in)."""
        return self._idempotent("POST", "/jobs", job)

    def next_batch_size(self, job_id):
        """GET /jobs/batch_size: {"job_id", "batch_size", "trial_number"}."""
        return self._once("GET", "/jobs/batch_size?" + urllib.parse.urlencode({"job_id": job_id}))

    def report(self, result):
        """POST /report: {"stop_train", "converged", "message"}."""
        return self._idempotent("POST", "/report", result)

    def end_trial(self, trial):
        """PATCH /trials: ends the trial early (it fails)."""
        return self._idempotent("PATCH", "/trials", trial)
