"""Where this machine is, from its public IP (the original's
`zeus.utils.lat_lon`).

`get_ip_lat_long()` asks ipinfo.io (`ZEUS_IPINFO_URL` overrides the URL, for
tests and proxies) and returns (latitude, longitude) in degrees. Network
failures (offline, DNS, timeout after 5 s, HTTP errors) raise
`ZeusLatLonError`, which is also a `ConnectionError`, naming the URL and the
cause; an answer without a valid "loc" raises it too. Standard library only.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request

from zeus.exception import ZeusBaseError

logger = logging.getLogger(__name__)

DEFAULT_URL = "http://ipinfo.io/json"
TIMEOUT_S = 5.0


class ZeusLatLonError(ZeusBaseError, ConnectionError):
    """The location could not be found out."""


def get_ip_lat_long() -> tuple[float, float]:
    """(latitude, longitude) of this machine's public IP; ZeusLatLonError otherwise."""
    url = os.environ.get("ZEUS_IPINFO_URL", DEFAULT_URL)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            body = response.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise ZeusLatLonError(
            f"cannot get this machine's location from {url}: {reason} "
            "(offline? pass the location explicitly instead)") from e
    try:
        loc = json.loads(body)["loc"]
        lat, lon = (float(x) for x in loc.split(","))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ZeusLatLonError(
            f"{url} answered without a valid \"loc\" (\"lat,lon\"): {body[:200]!r}") from e
    logger.info("Location from %s: %s, %s", url, lat, lon)
    return lat, lon
