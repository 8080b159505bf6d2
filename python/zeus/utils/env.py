"""Typed environment variables: the original's `zeus.utils.env.get_env`.

Contract: `get_env(name, valtype, default)` reads `os.environ[name]` and
converts it with `valtype` (bool: true/false, 1/0, yes/no, on/off, any case).
A set but malformed value raises `ValueError` naming the variable and the
value (never falls back to the default: a typo must not pass silently). A
missing variable returns `default`, or, when `default` is None, raises
`MissingEnvironmentVariableError`, which is both a `ValueError` (what the
original raises) and a `KeyError` (what `os.environ[name]` raises).
"""

from __future__ import annotations

import os
from typing import Type, TypeVar

T = TypeVar("T")

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class MissingEnvironmentVariableError(ValueError, KeyError):
    """A required environment variable is not set."""

    def __str__(self):  # KeyError would quote the message.
        return str(self.args[0]) if self.args else ""


def parse_bool(name: str, value: str) -> bool:
    """`value` of environment variable `name` as a bool; ValueError otherwise."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"environment variable {name}={value!r} is not a boolean "
                     f"(expected one of {', '.join(_TRUE + _FALSE)})")


def get_env(name: str, valtype: Type[T], default: T | None = None) -> T:
    """Environment variable `name` converted to `valtype`.

    Returns `default` when the variable is unset (`default` None: raises
    MissingEnvironmentVariableError). Raises ValueError naming the variable
    when the value cannot be converted.
    """
    try:
        value = os.environ[name]
    except KeyError:
        if default is not None:
            return default
        raise MissingEnvironmentVariableError(
            f"missing environment variable {name} (no default given)") from None
    if valtype is bool:
        return parse_bool(name, value)  # type: ignore[return-value]
    try:
        return valtype(value)  # type: ignore[call-arg]
    except (TypeError, ValueError) as e:
        type_name = getattr(valtype, "__name__", repr(valtype))
        raise ValueError(
            f"environment variable {name}={value!r} is not a valid {type_name}: {e}") from None
