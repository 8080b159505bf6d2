"""Helpers shared by the device modules: the SYS_ADMIN check and the
deprecated camelCase aliases of the device classes."""

from __future__ import annotations

import abc
import functools
import logging
import warnings
from typing import Callable

logger = logging.getLogger(__name__)

_CAP_SYS_ADMIN_BIT = 21
_PROC_STATUS = "/proc/self/status"
_ALIAS_ATTR = "_zeus_deprecated_alias"


@functools.lru_cache(maxsize=1)
def has_sys_admin() -> bool:
    """Whether this process has the SYS_ADMIN capability in its effective set
    (needed to change GPU settings without the Zeus daemon). Read from
    /proc/self/status; False when it cannot be read."""
    try:
        with open(_PROC_STATUS) as status:
            for line in status:
                if line.startswith("CapEff:"):
                    mask = int(line.split(":", 1)[1].strip(), 16)
                    return bool(mask & (1 << _CAP_SYS_ADMIN_BIT))
    except (OSError, ValueError) as e:
        logger.info("zeus.device: cannot read capabilities from %s: %s", _PROC_STATUS, e)
    return False


def deprecated_alias(old_name: str) -> Callable[[Callable], Callable]:
    """Marks a method as also reachable under `old_name` (its camelCase name).

    Classes whose metaclass is DeprecatedAliasABCMeta get a method `old_name`
    that warns once (DeprecationWarning) and calls the new method by name, so
    a subclass overriding the new name is honoured through the old one too.
    """

    def mark(method: Callable) -> Callable:
        setattr(method, _ALIAS_ATTR, old_name)
        return method

    return mark


def _make_alias(old_name: str, new_name: str) -> Callable:
    warned = []

    def alias(self, *args, **kwargs):
        if not warned:
            warned.append(True)
            warnings.warn(f"'{old_name}' is deprecated; use '{new_name}' instead.",
                          DeprecationWarning, stacklevel=2)
        return getattr(self, new_name)(*args, **kwargs)

    alias.__name__ = old_name
    alias.__qualname__ = old_name
    alias.__doc__ = f"Deprecated alias of `{new_name}`."
    return alias


class DeprecatedAliasABCMeta(abc.ABCMeta):
    """abc.ABCMeta that also creates the aliases marked by deprecated_alias."""

    def __new__(mcs, name, bases, namespace, **kwargs):
        aliases = {}
        for attr, value in namespace.items():
            target = value.fget if isinstance(value, property) else value
            old = getattr(target, _ALIAS_ATTR, None)
            if isinstance(old, str) and old not in namespace:
                aliases[old] = _make_alias(old, attr)
        namespace = dict(namespace)
        namespace.update(aliases)
        return super().__new__(mcs, name, bases, namespace, **kwargs)
