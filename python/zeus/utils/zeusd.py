"""Client of a zeusd-compatible daemon (`zeus daemon` or the original zeusd):
the original's `zeus.utils.zeusd`, over httpx (Debian's python3-httpx):
`ZeusdConfig.make_client()` returns the `httpx.Client` (Unix-socket transport
or TCP, the token's header) through which `ZeusdClient` sends every request,
so a user may replace it (a mock transport, a proxy, TLS).

Configuration: `ZeusdConfig.uds(path)`, `.tcp(host, port)` or `.from_env()`,
which reads ZEUSD_SOCK_PATH (Unix socket, tried first), then ZEUSD_HOST_PORT
(`host:port`), and ZEUSD_TOKEN (a JWT sent as `Authorization: Bearer`);
None when neither address is set.

`ZeusdClient(config)` runs discovery (`GET /discover`) at construction and
raises ZeusdConnectionError when the daemon cannot be reached, answers
non-200, or is older than the wire this client speaks (a GPU without
`pci_address` or `cumulative_energy_available`, or no `enabled_api_groups` /
`auth_required`). When the daemon requires authentication it asks
`/auth/whoami`; a missing or rejected token is recorded in `auth_error`
(logged, not raised) and `require_capabilities` raises ZeusdAuthError.
Every other request that the daemon answers with a non-200 status raises
`zeus.device.exception.ZeusdError` ("Failed to <operation>: <the daemon's
answer>"); one that cannot reach it raises ZeusdConnectionError ("Cannot
reach Zeusd at ..."). Units: mW, mJ, uJ, MHz as in the method names. A
client is safe to share between threads (httpx.Client is).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Dict, Optional

import httpx

from zeus.exception import ZeusBaseError
from zeus.utils import http_limits

logger = logging.getLogger(__name__)

# Environment variables the original reads.
ZEUSD_SOCK_PATH_ENV = "ZEUSD_SOCK_PATH"
ZEUSD_HOST_PORT_ENV = "ZEUSD_HOST_PORT"
ZEUSD_TOKEN_ENV = "ZEUSD_TOKEN"

# Seconds a request may take to connect, and between two reads of its answer.
REQUEST_TIMEOUT_S = 10.0


class ZeusdConnectionError(ZeusBaseError):
    """The daemon cannot be reached, or is not one this client can speak to."""


class ZeusdAuthError(ZeusBaseError):
    """Authentication failed: no token, or the daemon rejected it."""


class ZeusdCapabilityError(ZeusBaseError):
    """The daemon does not offer what the caller needs (API group, scope, device)."""


def _zeusd_error(message: str) -> Exception:
    # ZeusdError lives in zeus.device.exception (a ZeusBaseGPUError, as in the
    # original); imported late, since zeus.device imports this module.
    try:
        from zeus.device.exception import ZeusdError
    except ImportError:  # A zeus.device without it: still a ZeusBaseError.
        return ZeusBaseError(message)
    return ZeusdError(message)


@dataclass(frozen=True)
class GpuInfo:
    """A GPU the daemon serves: its index, model name, PCI address
    (`domain:bus:device.function`) and whether its energy counter is served."""

    id: int
    name: str
    pci_address: str
    cumulative_energy_available: bool


@dataclass(frozen=True)
class CpuInfo:
    """A CPU package (RAPL) the daemon serves, and whether it has a DRAM zone."""

    id: int
    dram_available: bool


@dataclass(frozen=True)
class GpuPowerSnapshot:
    """Power of each GPU (mW) at the daemon's Unix time `timestamp_ms`."""

    timestamp_ms: int
    power_mw: dict[int, int]


@dataclass(frozen=True)
class CpuDramPower:
    """Power of one CPU package and its DRAM (None: no DRAM zone), in mW."""

    cpu_mw: int
    dram_mw: int | None


@dataclass(frozen=True)
class CpuPowerSnapshot:
    """Power of each CPU package at the daemon's Unix time `timestamp_ms`."""

    timestamp_ms: int
    power_mw: dict[int, CpuDramPower]


@dataclass(frozen=True)
class CpuEnergyResult:
    """Cumulative energy of one CPU package and its DRAM, in uJ (None: not
    asked for or not available)."""

    cpu_energy_uj: int | None
    dram_energy_uj: int | None


@dataclass(frozen=True)
class ZeusdConfig:
    """Where a daemon listens: `socket_path` (Unix socket) or `host_port`
    (`host:port`, TCP), and the JWT `token` (default: ZEUSD_TOKEN).
    `gpu_indices`/`cpu_indices` choose what a PowerStreamingClient streams
    (None: all; []: none); ZeusdClient ignores them."""

    host_port: str | None = None
    socket_path: str | None = None
    token: str | None = None
    gpu_indices: list[int] | None = None
    cpu_indices: list[int] | None = None

    @classmethod
    def tcp(cls, host: str, port: int, *, token: str | None = None,
            gpu_indices: list[int] | None = None,
            cpu_indices: list[int] | None = None) -> "ZeusdConfig":
        return cls(host_port=f"{host}:{port}", token=token, gpu_indices=gpu_indices,
                   cpu_indices=cpu_indices)

    @classmethod
    def uds(cls, socket_path: str, *, token: str | None = None,
            gpu_indices: list[int] | None = None,
            cpu_indices: list[int] | None = None) -> "ZeusdConfig":
        return cls(socket_path=socket_path, token=token, gpu_indices=gpu_indices,
                   cpu_indices=cpu_indices)

    @classmethod
    def from_env(cls) -> "ZeusdConfig | None":
        """From ZEUSD_SOCK_PATH (first), ZEUSD_HOST_PORT and ZEUSD_TOKEN; None
        when no address is set."""
        token = os.environ.get(ZEUSD_TOKEN_ENV)
        sock = os.environ.get(ZEUSD_SOCK_PATH_ENV)
        if sock is not None:
            return cls.uds(sock, token=token)
        host_port = os.environ.get(ZEUSD_HOST_PORT_ENV)
        if host_port is not None:
            return cls(host_port=host_port, token=token)
        return None

    def make_client(self) -> httpx.Client:
        """An httpx.Client with this config's transport (the Unix socket, or
        TCP) and token header; URLs come from `url`."""
        transport = httpx.HTTPTransport(uds=self.socket_path) if self.socket_path is not None \
            else None
        return httpx.Client(transport=transport, headers=self._auth_headers(),
                            timeout=REQUEST_TIMEOUT_S)

    def url(self, path: str) -> str:
        """The full URL of `path` (host `localhost` for a Unix socket)."""
        if self.socket_path is not None:
            return f"http://localhost{path}"
        return f"http://{self.host_port}{path}"

    @property
    def endpoint(self) -> str:
        """The socket path or host:port (ValueError when neither is set)."""
        if self.socket_path is not None:
            return self.socket_path
        if self.host_port is not None:
            return self.host_port
        raise ValueError("ZeusdConfig has neither socket_path nor host_port set")

    def _auth_headers(self) -> Dict[str, str]:
        token = self.token if self.token is not None else os.environ.get(ZEUSD_TOKEN_ENV)
        return {"Authorization": f"Bearer {token}"} if token else {}


def _ids(ids) -> str:
    return ",".join(str(int(i)) for i in ids)


def _flag(value: bool) -> str:
    return "true" if value else "false"


class ZeusdClient:
    """A discovered, possibly authenticated, daemon (see module doc)."""

    def __init__(self, config: ZeusdConfig | None = None) -> None:
        if config is None:
            config = ZeusdConfig.from_env()
            if config is None:
                raise ZeusdConnectionError(
                    f"No Zeusd connection configured. Set {ZEUSD_SOCK_PATH_ENV} or "
                    f"{ZEUSD_HOST_PORT_ENV}, or pass a ZeusdConfig.")
        self._config = config
        self._client = config.make_client()
        resp = self._send("GET", "/discover")
        if resp.status_code != 200:
            raise ZeusdConnectionError(f"Zeusd at {config.endpoint} returned HTTP "
                                       f"{resp.status_code} on /discover: {resp.text}")
        try:
            data = resp.json()
            self._gpus = [GpuInfo(id=int(g["id"]), name=str(g["name"]),
                                  pci_address=str(g["pci_address"]),
                                  cumulative_energy_available=bool(
                                      g["cumulative_energy_available"]))
                          for g in data["gpus"]]
            self._cpus = [CpuInfo(id=int(c["id"]), dram_available=bool(c["dram_available"]))
                          for c in data["cpus"]]
            self._enabled_api_groups = frozenset(data["enabled_api_groups"])
            self._auth_required = bool(data["auth_required"])
        except KeyError as e:
            raise ZeusdConnectionError(
                f"Zeusd at {config.endpoint} did not report {e} in /discover; the daemon is "
                "older than this version of Zeus. Upgrade zeusd.") from None
        except (ValueError, TypeError) as e:
            raise ZeusdConnectionError(
                f"Zeusd at {config.endpoint}: malformed /discover answer: {e}") from None
        self._auth_error: Optional[str] = None
        self._granted_scopes: frozenset = frozenset()
        if self._auth_required:
            self._authenticate()

    def _authenticate(self) -> None:
        config = self._config
        if not config._auth_headers():
            self._auth_error = (f"Zeusd at {config.endpoint} requires authentication but no "
                                f"token was provided. Set the {ZEUSD_TOKEN_ENV} environment "
                                "variable or pass token= in the config.")
        else:
            resp = self._send("GET", "/auth/whoami")
            if resp.status_code == 401:
                self._auth_error = f"Token rejected by Zeusd at {config.endpoint}: {resp.text}"
            elif resp.status_code != 200:
                self._auth_error = (f"Unexpected response from /auth/whoami at "
                                    f"{config.endpoint} (HTTP {resp.status_code}): {resp.text}")
            else:
                whoami = resp.json()
                self._granted_scopes = frozenset(whoami.get("scopes", []))
                logger.info("Authenticated with zeusd at %s as %r (scopes %s)", config.endpoint,
                            whoami.get("sub"), sorted(self._granted_scopes))
        if self._auth_error:
            logger.warning("Auth issue with Zeusd at %s: %s", config.endpoint, self._auth_error)

    @property
    def endpoint(self) -> str:
        return self._config.endpoint

    @property
    def gpus(self) -> list[GpuInfo]:
        return list(self._gpus)

    @property
    def gpu_ids(self) -> list[int]:
        return [g.id for g in self._gpus]

    @property
    def cpus(self) -> list[CpuInfo]:
        return list(self._cpus)

    @property
    def cpu_ids(self) -> list[int]:
        return [c.id for c in self._cpus]

    @property
    def dram_available(self) -> list[bool]:
        """Per CPU, in `cpu_ids` order."""
        return [c.dram_available for c in self._cpus]

    @property
    def auth_required(self) -> bool:
        return self._auth_required

    @property
    def auth_error(self) -> str | None:
        """Why authentication failed; None when it succeeded or is not required."""
        return self._auth_error

    @property
    def granted_scopes(self) -> frozenset[str]:
        return self._granted_scopes

    def _can(self, group: str) -> bool:
        if group not in self._enabled_api_groups:
            return False
        return not self._auth_required or group in self._granted_scopes

    @property
    def can_read_gpu(self) -> bool:
        return self._can("gpu-read")

    @property
    def can_control_gpu(self) -> bool:
        return self._can("gpu-control")

    @property
    def can_read_cpu(self) -> bool:
        return self._can("cpu-read")

    def _send(self, method: str, path: str, params: Optional[Dict[str, str]] = None):
        """One request through the httpx client, within REQUEST_TIMEOUT_S in
        all and an answer of at most http_limits.MAX_BODY_BYTES (read as it
        arrives); ZeusdConnectionError when the daemon cannot be reached, is
        too slow or answers too much."""

        def fetch():
            with self._client.stream(method, self._config.url(path), params=params) as resp:
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > http_limits.MAX_BODY_BYTES:
                        raise http_limits.AnswerTooLargeError(
                            f"answer body larger than {http_limits.MAX_BODY_BYTES} bytes")
                return httpx.Response(resp.status_code, headers=resp.headers,
                                      content=bytes(body), request=resp.request)

        if self._client.is_closed:
            raise ZeusdConnectionError(f"ZeusdClient of Zeusd at {self._config.endpoint} was "
                                       "closed")
        try:
            return http_limits.with_deadline(fetch, REQUEST_TIMEOUT_S)
        except http_limits.DeadlineExceededError:
            raise ZeusdConnectionError(
                f"Zeusd at {self._config.endpoint} did not answer {method} {path} within "
                f"{REQUEST_TIMEOUT_S:g} s") from None
        except http_limits.AnswerTooLargeError as e:
            raise ZeusdConnectionError(
                f"Zeusd at {self._config.endpoint}, {method} {path}: {e}") from None
        except httpx.TransportError as e:
            raise ZeusdConnectionError(
                f"Cannot reach Zeusd at {self._config.endpoint}: {e}") from e

    def _call(self, method: str, path: str, operation: str, params: Dict[str, str]):
        resp = self._send(method, path, params)
        if resp.status_code != 200:
            raise _zeusd_error(f"Failed to {operation}: {resp.text}")
        return resp

    def _get(self, path, operation, params):
        return self._call("GET", path, operation, params).json()

    def _post(self, path, operation, params):
        self._call("POST", path, operation, params)

    @staticmethod
    def _maybe_ids(name, ids) -> Dict[str, str]:
        return {} if ids is None else {name: _ids(ids)}

    def get_gpu_energy(self, gpu_ids: list[int]) -> dict[int, int]:
        """Cumulative energy of each GPU, in mJ."""
        data = self._get("/gpu/get_cumulative_energy", "get_gpu_energy",
                         {"gpu_ids": _ids(gpu_ids)})
        return {int(k): v["energy_mj"] for k, v in data.items()}

    def get_gpu_power(self, gpu_ids: list[int] | None = None) -> GpuPowerSnapshot:
        data = self._get("/gpu/get_power", "get_gpu_power", self._maybe_ids("gpu_ids", gpu_ids))
        return GpuPowerSnapshot(timestamp_ms=data["timestamp_ms"],
                                power_mw={int(k): v for k, v in data["power_mw"].items()})

    def set_power_limit(self, gpu_ids: list[int], power_limit_mw: int,
                        block: bool = True) -> None:
        self._post("/gpu/set_power_limit", "set_power_limit",
                   {"gpu_ids": _ids(gpu_ids), "power_limit_mw": str(int(power_limit_mw)),
                    "block": _flag(block)})

    def set_persistence_mode(self, gpu_ids: list[int], enabled: bool, block: bool = True) -> None:
        self._post("/gpu/set_persistence_mode", "set_persistence_mode",
                   {"gpu_ids": _ids(gpu_ids), "enabled": _flag(enabled), "block": _flag(block)})

    def get_persistence_mode(self, gpu_ids: list[int] | None = None) -> dict[int, bool]:
        data = self._get("/gpu/get_persistence_mode", "get_persistence_mode",
                         self._maybe_ids("gpu_ids", gpu_ids))
        return {int(k): v["enabled"] for k, v in data.items()}

    def get_power_limit(self, gpu_ids: list[int] | None = None) -> dict[int, int]:
        """Power limit of each GPU, in mW."""
        data = self._get("/gpu/get_power_limit", "get_power_limit",
                         self._maybe_ids("gpu_ids", gpu_ids))
        return {int(k): v["power_limit_mw"] for k, v in data.items()}

    def get_power_limit_constraints(
            self, gpu_ids: list[int] | None = None) -> dict[int, tuple[int, int]]:
        """(min, max) power limit of each GPU, in mW."""
        data = self._get("/gpu/get_power_limit_constraints", "get_power_limit_constraints",
                         self._maybe_ids("gpu_ids", gpu_ids))
        return {int(k): (v["min_power_limit_mw"], v["max_power_limit_mw"])
                for k, v in data.items()}

    def _clocks(self, path, gpu_ids, min_clock_mhz, max_clock_mhz, block):
        self._post(path, path.rsplit("/", 1)[1],
                   {"gpu_ids": _ids(gpu_ids), "min_clock_mhz": str(int(min_clock_mhz)),
                    "max_clock_mhz": str(int(max_clock_mhz)), "block": _flag(block)})

    def set_gpu_locked_clocks(self, gpu_ids: list[int], min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        self._clocks("/gpu/set_gpu_locked_clocks", gpu_ids, min_clock_mhz, max_clock_mhz, block)

    def set_mem_locked_clocks(self, gpu_ids: list[int], min_clock_mhz: int, max_clock_mhz: int,
                              block: bool = True) -> None:
        self._clocks("/gpu/set_mem_locked_clocks", gpu_ids, min_clock_mhz, max_clock_mhz, block)

    def _reset(self, path, gpu_ids, block):
        self._post(path, path.rsplit("/", 1)[1], {"gpu_ids": _ids(gpu_ids), "block": _flag(block)})

    def reset_gpu_locked_clocks(self, gpu_ids: list[int], block: bool = True) -> None:
        self._reset("/gpu/reset_gpu_locked_clocks", gpu_ids, block)

    def reset_mem_locked_clocks(self, gpu_ids: list[int], block: bool = True) -> None:
        self._reset("/gpu/reset_mem_locked_clocks", gpu_ids, block)

    def reset_locked_clocks(self, gpu_ids: list[int], block: bool = True) -> None:
        """Resets both the GPU and the memory locked clocks."""
        self._reset("/gpu/reset_locked_clocks", gpu_ids, block)

    def get_cpu_energy(self, cpu_ids: list[int] | None = None, cpu: bool = True,
                       dram: bool = True) -> dict[int, CpuEnergyResult]:
        """Cumulative energy of each CPU package and its DRAM, in uJ."""
        params = {"cpu": _flag(cpu), "dram": _flag(dram)}
        params.update(self._maybe_ids("cpu_ids", cpu_ids))
        data = self._get("/cpu/get_cumulative_energy", "get_cpu_energy", params)
        return {int(k): CpuEnergyResult(cpu_energy_uj=v.get("cpu_energy_uj"),
                                        dram_energy_uj=v.get("dram_energy_uj"))
                for k, v in data.items()}

    def get_cpu_power(self, cpu_ids: list[int] | None = None) -> CpuPowerSnapshot:
        data = self._get("/cpu/get_power", "get_cpu_power", self._maybe_ids("cpu_ids", cpu_ids))
        return CpuPowerSnapshot(
            timestamp_ms=data["timestamp_ms"],
            power_mw={int(k): CpuDramPower(cpu_mw=v["cpu_mw"], dram_mw=v.get("dram_mw"))
                      for k, v in data["power_mw"].items()})

    def get_time(self) -> float:
        """The daemon's Unix time, in seconds."""
        return self._get("/time", "get_time", {})["timestamp_ms"] / 1000.0

    def close(self) -> None:
        """(extra) Closes the connection kept to the daemon; a later request
        fails with ZeusdConnectionError."""
        self._client.close()

    def make_client(self) -> httpx.Client:
        """A new httpx.Client with this daemon's transport and token (for streams)."""
        return self._config.make_client()

    def url(self, path: str) -> str:
        return self._config.url(path)


def require_capabilities(client: ZeusdClient, *, read_gpu: bool = False,
                         control_gpu: bool = False, read_cpu: bool = False,
                         gpu_ids: list[int] | None = None,
                         cpu_ids: list[int] | None = None) -> None:
    """Raises ZeusdAuthError when authentication failed, and
    ZeusdCapabilityError listing every unmet need: an API group the daemon
    does not enable, a scope the token lacks, GPU or CPU ids it does not serve."""
    if client.auth_error:
        raise ZeusdAuthError(client.auth_error)
    problems = []
    for wanted, group in ((read_gpu, "gpu-read"), (control_gpu, "gpu-control"),
                          (read_cpu, "cpu-read")):
        if not wanted or client._can(group):
            continue
        if group not in client._enabled_api_groups:
            problems.append(f"API group '{group}' is not enabled on this server")
        else:
            problems.append(f"Token lacks required scope '{group}' "
                            f"(granted: {sorted(client.granted_scopes)})")
    for kind, wanted_ids, served in (("GPU", gpu_ids, client.gpu_ids),
                                     ("CPU", cpu_ids, client.cpu_ids)):
        if wanted_ids is not None:
            missing = sorted(set(wanted_ids) - set(served))
            if missing:
                problems.append(f"{kind} indices {missing} not available "
                                f"(available: {sorted(served)})")
    if problems:
        raise ZeusdCapabilityError(f"Zeusd at {client.endpoint}: " + "; ".join(problems))
