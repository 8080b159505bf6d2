"""Logging helpers (the original's `zeus.utils.logging`).

`FileAndConsole(filepath)`: a stream that writes everything to both a file
(truncated on open) and the process's stdout of the moment of construction,
flushing both after every write (use as `sys.stdout = FileAndConsole(p)`).
`get_logger(name, level, propagate)`: a logger writing to stdout with Zeus's
format; the level comes from `ZEUS_LOG_LEVEL` when set (a name such as
`debug`, or a number; ValueError naming the variable otherwise). Calling it again for
the same name returns the same logger without adding a second handler.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path


class FileAndConsole:
    """Like tee(1), for Python's prints."""

    def __init__(self, filepath: Path) -> None:
        self.file = open(filepath, "w")
        self.stdout = sys.stdout

    def write(self, message):
        self.file.write(message)
        self.stdout.write(message)
        self.flush()

    def flush(self):
        self.file.flush()
        self.stdout.flush()

    def close(self):
        """Closes the file (stdout stays open)."""
        self.file.close()


def get_logger(name: str, level: int = logging.INFO, propagate: bool = False) -> logging.Logger:
    """A logger named `name` printing `[time] [name](file:line) message` to stdout."""
    if name in logging.Logger.manager.loggerDict:
        return logging.getLogger(name)
    logger = logging.getLogger(name)
    logger.propagate = propagate
    env_level = os.environ.get("ZEUS_LOG_LEVEL")
    try:
        if env_level:
            logger.setLevel(int(env_level) if env_level.isdigit() else env_level.upper())
        else:
            logger.setLevel(level)
    except ValueError:
        raise ValueError(f"ZEUS_LOG_LEVEL={env_level!r} is not a logging level "
                         "(DEBUG, INFO, WARNING, ERROR, CRITICAL)") from None
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(
        "[%(asctime)s] [%(name)s](%(filename)s:%(lineno)d) %(message)s"))
    logger.addHandler(handler)
    return logger
