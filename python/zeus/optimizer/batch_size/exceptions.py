"""Exceptions of the batch-size optimizer client. Errors the server or the
connection report raise the zeus.exception class of their status code."""

from zeus.exception import ZeusBaseError


class ZeusBSOConfigError(ZeusBaseError):
    """The job or the machine cannot be used (e.g. GPUs with different
    power-limit ranges)."""


class ZeusBSOOperationOrderError(ZeusBaseError):
    """Hooks called out of order (e.g. on_evaluate before get_batch_size)."""


class ZeusBSORuntimError(ZeusBaseError):
    """The server answered something unusable. (Spelling of the original.)"""


ZeusBSORuntimeError = ZeusBSORuntimError


class ZeusBSOTrainFailError(ZeusBaseError):
    """The server stopped this run before it converged (its cost passed
    beta_knob times the best, or max_epochs was reached): relaunch training
    and the next run gets another batch size."""


class ZeusBSOBadOperationError(ZeusBaseError):
    """An operation this rank may not do: only rank 0 asks the server for
    the batch size (the other ranks get it from rank 0, e.g. by a
    broadcast, and set current_batch_size and trial_number)."""
