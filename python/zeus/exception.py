"""Exceptions. Every error of the C++ core raises one ZeusError subclass per
status code, carrying the core's message ("context: detail")."""


class ZeusBaseError(Exception):
    """Base of every exception Zeus raises (the original's name and shape:
    `ZeusBaseError(message)`, with the text in `.message`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ZeusError(ZeusBaseError):
    """A non-OK status of the C++ core; `code` is its numeric code."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgumentError(ZeusError, ValueError):
    code = 1


class NotFoundError(ZeusError, KeyError):
    code = 2

    def __str__(self):  # KeyError would quote the message.
        return self.message


class NotSupportedError(ZeusError):
    code = 3


class PermissionDeniedError(ZeusError, PermissionError):
    code = 4


class UnavailableError(ZeusError):
    code = 5


class FailedPreconditionError(ZeusError, RuntimeError):
    code = 6


class IoError(ZeusError, OSError):
    code = 7

    def __str__(self):
        return self.message


class InternalError(ZeusError):
    code = 8


class AlreadyExistsError(ZeusError, ValueError):
    code = 9


class AbortedError(ZeusError):
    code = 10


ERRORS_BY_CODE = {
    cls.code: cls
    for cls in (InvalidArgumentError, NotFoundError, NotSupportedError, PermissionDeniedError,
                UnavailableError, FailedPreconditionError, IoError, InternalError,
                AlreadyExistsError, AbortedError)
}
