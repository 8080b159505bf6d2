"""asyncio helpers (the original's `zeus.utils.async_utils`).

`create_task(coroutine, logger=None)` schedules `coroutine` on the running
loop (RuntimeError without one, as `asyncio.get_running_loop`) and returns
the Task; if the task dies with an exception, the exception and its
traceback are logged (to `logger`, default the `zeus.utils.async_utils`
logger) instead of vanishing until the task is awaited. Cancellation is not
logged. The task's result or exception stays available to awaiters.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")
_default_logger = logging.getLogger(__name__)


def _log_failure(task: "asyncio.Task", logger: logging.Logger) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        logger.error("Task %s died with an exception", task.get_name(),
                     exc_info=(type(error), error, error.__traceback__))


def create_task(coroutine: Coroutine[Any, Any, T],
                logger: logging.Logger | None = None) -> "asyncio.Task[T]":
    """Schedules `coroutine`; its exception, if any, is logged when it ends."""
    task = asyncio.get_running_loop().create_task(coroutine)
    task.add_done_callback(functools.partial(_log_failure, logger=logger or _default_logger))
    return task
