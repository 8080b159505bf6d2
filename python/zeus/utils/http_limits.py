"""The limits every standard-library (urllib) HTTP client of the zeus package
applies to a request: a bound on the answer's body, a total deadline, and
credentials that stay on their origin when a redirect leaves it.

    opener().open(request, timeout=...)   redirects drop credential headers
                                          when the scheme, host or port changes
    read_body(response)                   the body, at most MAX_BODY_BYTES
    with_deadline(fn, timeout_s)          fn() within timeout_s s in all
"""

import threading
import urllib.parse
import urllib.request

# Bodies beyond this are refused as they arrive (every answer these clients
# read is JSON of kilobytes to a few megabytes).
MAX_BODY_BYTES = 16 << 20

# Header fields that carry credentials (lower case).
CREDENTIAL_HEADERS = frozenset(("authorization", "proxy-authorization", "cookie", "auth-token"))


class AnswerTooLargeError(OSError):
    """The answer's body exceeds the limit."""


class DeadlineExceededError(TimeoutError):
    """The request did not complete within its total deadline."""


def _origin(url: str):
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port or {"http": 80, "https": 443}.get(scheme)


class _CredentialsStayOnOrigin(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but a redirect to another origin
    does not carry the credential headers (urllib copies every header)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(req.full_url) != _origin(new.full_url):
            for fields in (new.headers, new.unredirected_hdrs):
                for name in [n for n in fields if n.lower() in CREDENTIAL_HEADERS]:
                    del fields[name]
        return new


_opener = urllib.request.build_opener(_CredentialsStayOnOrigin)


def opener():
    """The urllib opener of the zeus clients (redirects keep credentials on
    their origin)."""
    return _opener


def read_body(response, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body of `response`; AnswerTooLargeError as soon as it
    exceeds `limit` bytes (never more is held)."""
    chunks, size = [], 0
    while True:
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise AnswerTooLargeError(f"answer body larger than the limit of {limit} bytes")
        chunks.append(chunk)


def with_deadline(fn, timeout_s: float):
    """fn()'s result (or exception) when it completes within `timeout_s`
    seconds in all; DeadlineExceededError otherwise. fn runs on a daemon
    thread, which a server that drips its answer may keep until its socket
    timeout; the caller does not wait for it."""
    outcome = {}

    def run():
        try:
            outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller.
            outcome["error"] = e

    thread = threading.Thread(target=run, name="zeus http request", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise DeadlineExceededError(f"no complete answer within {timeout_s:.3g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
