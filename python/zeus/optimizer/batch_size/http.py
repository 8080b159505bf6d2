"""The HTTP routes of the batch-size optimizer server (include/zeus/protocol/protocol.h),
called with httpx (Debian's python3-httpx), as the original client does; a redirect
is followed, its bearer token dropped when it leaves the server's origin (httpx's rule).

Errors map as in the C++ client: HTTP 400/413/422 InvalidArgumentError,
401/403 PermissionDeniedError, 404 NotFoundError, 409 AlreadyExistsError,
503 and connection failures UnavailableError, anything else InternalError;
the message is the server's, with the HTTP status. Each is also a
ZeusBSORuntimError, what the original client raises for a failed call. A 404 for
the path itself, not for what the body names, is NoSuchRouteError (a NotFoundError):
the server lacks the route (the original Zeus server has no POST /report/progress).
Idempotent calls (register, report, check-in, end trial) are retried while the server
is unavailable, within one time budget per call (BatchSizeServer's timeout_s).
"""

import json
import math
import os
import time
import urllib.parse

import httpx

from zeus.exception import (AlreadyExistsError, InternalError, InvalidArgumentError,
                            NotFoundError, PermissionDeniedError, UnavailableError)
from zeus.optimizer.batch_size.exceptions import ZeusBSORuntimError
from zeus.utils import http_limits



def _server_error(base):
    """`base` that is also a ZeusBSORuntimError, the class the original
    client raises for every failed server call, so that both
    `except UnavailableError` and `except ZeusBSORuntimError` catch it."""
    return type(base.__name__, (base, ZeusBSORuntimError), {
        "__module__": __name__,
        "__doc__": f"{base.__name__} from the batch-size server (also a ZeusBSORuntimError)."})


InvalidArgumentError_ = _server_error(InvalidArgumentError)
PermissionDeniedError_ = _server_error(PermissionDeniedError)
NotFoundError_ = _server_error(NotFoundError)
AlreadyExistsError_ = _server_error(AlreadyExistsError)
UnavailableError_ = _server_error(UnavailableError)
InternalError_ = _server_error(InternalError)


class NoSuchRouteError(NotFoundError_):
    """HTTP 404 for the path itself: the server has no such route (e.g. the
    original Zeus server and POST /report/progress). A 404 for an unknown job
    or trial is a plain NotFoundError."""


# What a server answers for a path no route matches: `zeus serve` (src/http/router.cc)
# and FastAPI, the original's framework. Errors of a route carry {"message": ...}; a 404
# that is not JSON (a proxy's page) is taken as a missing route too.
_NO_SUCH_ROUTE = ({"message": "no such route"}, {"detail": "Not Found"})

_BY_STATUS = {400: InvalidArgumentError_, 413: InvalidArgumentError_,
              422: InvalidArgumentError_, 401: PermissionDeniedError_,
              403: PermissionDeniedError_, 404: NotFoundError_, 409: AlreadyExistsError_,
              503: UnavailableError_}


# Defaults of the client's time budget (see BatchSizeServer).
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_ATTEMPTS = 3
TIMEOUT_ENV = "ZEUS_BSO_TIMEOUT_S"
MAX_ATTEMPTS_ENV = "ZEUS_BSO_MAX_ATTEMPTS"


def resolve_budget(timeout_s=None, max_attempts=None):
    """(timeout_s, max_attempts): the arguments when given, else
    $ZEUS_BSO_TIMEOUT_S / $ZEUS_BSO_MAX_ATTEMPTS, else 10 s and 3. A bad value
    (not a finite number > 0, not an int >= 1) is an InvalidArgumentError
    naming where it came from."""
    def pick(value, env, parse, default):
        if value is not None:
            return value, "argument"
        text = os.environ.get(env)
        if text is None or text.strip() == "":
            return default, "default"
        try:
            return parse(text.strip()), f"${env}"
        except ValueError:
            raise InvalidArgumentError(f"batch-size client: ${env}={text!r} is not a number")

    timeout, source = pick(timeout_s, TIMEOUT_ENV, float, DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            not (math.isfinite(timeout) and timeout > 0):
        raise InvalidArgumentError(
            f"batch-size client: timeout_s ({source}) must be a finite number of seconds > 0, "
            f"got {timeout!r}")
    attempts, source = pick(max_attempts, MAX_ATTEMPTS_ENV, int, DEFAULT_MAX_ATTEMPTS)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise InvalidArgumentError(
            f"batch-size client: max_attempts ({source}) must be an int >= 1, got {attempts!r}")
    return float(timeout), attempts


class BatchSizeServer:
    """One server at `url` ("http://host:port").

    Args:
        token: Sent as "Authorization: Bearer <token>" when set.
        timeout_s: The most one call may take in all, attempts and the waits
            between them included (each socket wait gets what is left).
            Default $ZEUS_BSO_TIMEOUT_S, else 10 s.
        max_attempts: Of an idempotent call (register, report, check-in, end trial)
            while the server is unavailable (refused, reset, or silent past
            the budget's share), waiting retry_delay_s, doubled each time up
            to 2 s, in between. Default $ZEUS_BSO_MAX_ATTEMPTS, else 3.
    """

    def __init__(self, url, token=None, timeout_s=None, max_attempts=None, retry_delay_s=0.1):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidArgumentError(f"batch-size client: server_url must be http://host:port, "
                                       f"got {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s, self.max_attempts = resolve_budget(timeout_s, max_attempts)
        self.retry_delay_s = retry_delay_s

    def _once(self, method, path, body=None, timeout_s=None):
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"

        # Redirects are followed; httpx drops the Authorization header on one
        # that leaves the origin. The body is capped as it arrives and the
        # whole call (redirects included) has one deadline.
        def fetch():
            with httpx.stream(method, self.url + path, content=data, headers=headers,
                              timeout=timeout_s, follow_redirects=True) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > http_limits.MAX_BODY_BYTES:
                        raise http_limits.AnswerTooLargeError(
                            f"answer body larger than the limit of "
                            f"{http_limits.MAX_BODY_BYTES} bytes")
                return response.status_code, body.decode("utf-8", "replace")

        try:
            code, text = http_limits.with_deadline(fetch, timeout_s)
        except http_limits.AnswerTooLargeError as e:
            raise InternalError_(f"server: answer of {method} {path}: {e}") from None
        except (httpx.TimeoutException, http_limits.DeadlineExceededError):
            raise UnavailableError_(
                f"server: {self.url} did not answer {method} {path} within {timeout_s:.3g} s "
                f"(the client's budget: timeout_s or ${TIMEOUT_ENV})") from None
        except httpx.TransportError as e:
            raise UnavailableError_(
                f"server: {self.url} unreachable on {method} {path}: {e}") from None
        if not 200 <= code < 300:
            message = text[:200]
            parsed = None
            try:
                parsed = json.loads(text)
                for key in ("message", "error", "detail"):
                    if isinstance(parsed, dict) and isinstance(parsed.get(key), str):
                        message = parsed[key]
                        break
            except ValueError:
                pass
            error = _BY_STATUS.get(code, InternalError_)
            if code == 404 and (parsed in _NO_SUCH_ROUTE or not isinstance(parsed, dict)):
                error = NoSuchRouteError
            raise error(f"server: {message} (HTTP {code} on {method} {path})")
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise InternalError_(f"server: answer of {method} {path} is not JSON: {text[:200]!r}")

    def _idempotent(self, method, path, body=None):
        deadline = time.monotonic() + self.timeout_s
        delay_s = self.retry_delay_s
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self._once(method, path, body,
                                  timeout_s=max(deadline - time.monotonic(), 0.001))
            except UnavailableError as e:
                left_s = deadline - time.monotonic()
                if attempt == self.max_attempts or left_s <= delay_s:
                    raise UnavailableError_(
                        f"{e.message} (gave up after {attempt} attempt(s) within the "
                        f"{self.timeout_s:.3g} s budget; timeout_s/${TIMEOUT_ENV}, "
                        f"max_attempts/${MAX_ATTEMPTS_ENV})") from None
                time.sleep(delay_s)
                delay_s = min(delay_s * 2, 2.0)

    def register(self, job):
        """POST /jobs: the job as stored (job_id filled in)."""
        return self._idempotent("POST", "/jobs", job)

    def next_batch_size(self, job_id, attempt=1):
        """GET /jobs/batch_size: {"job_id", "batch_size", "trial_number"}. `attempt`: which
        try of its submission the trial is (sent when above 1)."""
        query = {"job_id": job_id}
        if attempt > 1:
            query["attempt"] = attempt
        return self._once("GET", "/jobs/batch_size?" + urllib.parse.urlencode(query))

    def report(self, result):
        """POST /report: {"stop_train", "converged", "message"}."""
        return self._idempotent("POST", "/report", result)

    def check_in(self, body):
        """POST /report/progress (`zeus serve` only), a check-in during an
        epoch: body {"job_id", "batch_size", "trial_number", "time" (s),
        "energy" (J)}, cumulative since the run began. Answers {"stop_train",
        "converged", "message"}: a run past its bound is stopped (converged
        false). A repeated check-in, or one for a trial that ended, changes
        nothing. NoSuchRouteError from a server without the route."""
        return self._idempotent("POST", "/report/progress", body)

    def end_trial(self, trial):
        """PATCH /trials: ends the trial early (it fails)."""
        return self._idempotent("PATCH", "/trials", trial)
