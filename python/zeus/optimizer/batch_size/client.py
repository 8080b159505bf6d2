"""BatchSizeOptimizer: the client of the batch-size optimizer server
(`zeus serve`, or the original Zeus server) for one recurring job.

The documented loop (the original's):

    bso = BatchSizeOptimizer(monitor, "http://127.0.0.1:8000", JobSpec(...))
    batch_size = bso.get_batch_size()
    bso.on_train_begin()
    for epoch in range(max_epochs):
        for batch in batches(batch_size):
            train_step(batch)
            bso.on_step_end()         # optional (an extra): may raise ZeusBSOTrainFailError
        bso.on_evaluate(validate())   # raises ZeusBSOTrainFailError if stopped early
        if bso.training_finished:
            break

on_step_end (an extra; a no-op in the original) checks in with `zeus serve` at
most every check_in_s seconds (default 10) during an epoch, so that a run past
its cost bound stops there rather than at the end of an epoch that may last
hours. Between check-ins it costs one clock read.

Data parallelism (the original's protocol): every rank creates a
BatchSizeOptimizer with the same JobSpec and its `rank`. Only rank 0 asks
for the batch size (get_batch_size raises ZeusBSOBadOperationError on the
others); the script broadcasts rank 0's current_batch_size and trial_number
and sets them on the other ranks. Every rank then calls on_train_begin and
on_evaluate: each reports its own measurement of the epoch, the server keeps
the first report of each epoch and answers the others with the trial's
state, so every rank sees training_finished turn True at the same epoch.
Check-ins would stop rank 0 alone, mid-epoch, and leave the other ranks
waiting in their next collective: only rank 0 checks in, and not at all in a
torch.distributed group of more than one process unless check_in_s is passed
explicitly (the script must then tell every rank of the stop, e.g. broadcast
a flag each step).
With several ranks, JobSpec.job_id must be set (e.g. from $ZEUS_JOB_ID):
otherwise each rank would register a job of its own (a rank other than 0
refuses that with ZeusBSOConfigError).

HTTP goes through zeus.optimizer.batch_size.http (standard library only, so
libzeus_c.so stays free of an HTTP/TLS stack): the routes and the error
mapping of the C++ client, with retries of idempotent calls within a time
budget (timeout_s / $ZEUS_BSO_TIMEOUT_S, default 10 s per call; max_attempts
/ $ZEUS_BSO_MAX_ATTEMPTS, default 3). Server and connection errors raise the
zeus.exception class of their status code, e.g. UnavailableError when the
server is down or silent past the budget.
"""

import atexit
import logging
import math
import os
import sys
import time
import weakref

from zeus.callback import Callback
from zeus.device import get_gpus
from zeus.exception import InvalidArgumentError, UnavailableError, ZeusBaseError
from zeus.monitor.energy import ZeusMonitor
from zeus.optimizer.batch_size.common import (CreatedJob, JobSpec, JobSpecFromClient,
                                              ReportResponse, TrainingResult, TrialId)
from zeus.optimizer.batch_size.exceptions import (ZeusBSOBadOperationError, ZeusBSOConfigError,
                                                  ZeusBSOOperationOrderError,
                                                  ZeusBSORuntimError, ZeusBSOTrainFailError)
from zeus.optimizer.batch_size.http import BatchSizeServer, NoSuchRouteError

logger = logging.getLogger(__name__)

_WINDOW = "zeus.batch_size_optimizer"
# The most an end-of-trial report at interpreter exit may take.
_EXIT_TIMEOUT_S = 3.0
# Check-ins during an epoch (on_step_end): at most one per this many seconds.
DEFAULT_CHECK_IN_S = 10.0
# A check-in stalls training for at most this long (one attempt): a silent
# server leaves the run to its next epoch report.
_CHECK_IN_TIMEOUT_S = 2.0
CHECK_IN_ENV = "ZEUS_BSO_CHECK_IN_S"
# Which try of its submission this run is (1: the first), for the server's
# rule that a submission stopped twice gets a run that may finish
# (docs/BATCH_SIZE_POLICY.md): $ZEUS_BSO_ATTEMPT, else Slurm's requeue
# count + 1 ($SLURM_RESTART_COUNT), else 1.
ATTEMPT_ENV = "ZEUS_BSO_ATTEMPT"
_MAX_ATTEMPT = 1000


def _resolve_attempt():
    """The try of this submission from the environment (see ATTEMPT_ENV);
    InvalidArgumentError naming the variable when it is not an integer in
    [1, 1000] ($SLURM_RESTART_COUNT: [0, 999])."""
    for name, offset in ((ATTEMPT_ENV, 0), ("SLURM_RESTART_COUNT", 1)):
        text = os.environ.get(name, "").strip()
        if not text:
            continue
        try:
            attempt = int(text) + offset
        except ValueError:
            attempt = 0
        if not 1 <= attempt <= _MAX_ATTEMPT:
            raise InvalidArgumentError(
                f"BatchSizeOptimizer: ${name}={text!r} must be an integer giving a try in "
                f"[1, {_MAX_ATTEMPT}]")
        return attempt
    return 1


def _resolve_check_in_s(value):
    """Seconds between check-ins: `value` when given, else $ZEUS_BSO_CHECK_IN_S,
    else 10; 0 disables them. Not a finite number >= 0: InvalidArgumentError
    naming where it came from."""
    source = "check_in_s"
    if value is None:
        text = os.environ.get(CHECK_IN_ENV, "").strip()
        if not text:
            return DEFAULT_CHECK_IN_S
        source = f"${CHECK_IN_ENV}={text!r}"
        try:
            value = float(text)
        except ValueError:
            raise InvalidArgumentError(
                f"BatchSizeOptimizer: {source} is not a number of seconds") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not (math.isfinite(value) and value >= 0):
        raise InvalidArgumentError(
            f"BatchSizeOptimizer: {source} must be a finite number of seconds >= 0 (0: no "
            f"check-ins), got {value!r}")
    return float(value)


def _in_process_group():
    """Whether this process is one of several in a torch.distributed group
    (False without torch.distributed imported)."""
    dist = sys.modules.get("torch.distributed")
    try:
        return bool(dist is not None and dist.is_available() and dist.is_initialized() and
                    dist.get_world_size() > 1)
    except Exception:  # A half-initialized or foreign module: no group we can see.
        return False


def _end_trial_at_exit(ref):
    bso = ref()
    if bso is None:
        return
    try:
        bso._end_trial_if_running(timeout_s=min(_EXIT_TIMEOUT_S, bso._server.timeout_s))
    except Exception as e:  # At exit: say it, never raise.
        logger.warning("BatchSizeOptimizer: could not tell the server that trial %d ended: %s",
                       bso.trial_number, e)


class BatchSizeOptimizer(Callback):
    """Registers `job` with the server at `server_url` and runs its trials.

    Args:
        monitor: Measures each run's energy; its GPUs (all one model, same
            power-limit range) define max_power, number_of_gpus and
            gpu_model of the job.
        server_url: e.g. "http://127.0.0.1:8000".
        job: The JobSpec. Its job_id is filled in with the registered id
            when it was None (so the same object registers the same job
            again).
        rank: This process's data-parallel rank (see the module doc).
        token: (extra) Bearer token when the server requires one.
        timeout_s: (extra) The most one server call may take, retries
            included. Default $ZEUS_BSO_TIMEOUT_S, else 10 s.
        max_attempts: (extra) Attempts of a register/report/end-trial call
            while the server is unavailable. Default $ZEUS_BSO_MAX_ATTEMPTS,
            else 3. (A check-in makes one attempt of at most 2 s.)
        check_in_s: (extra) on_step_end checks in with the server once at
            least this many seconds (wall time) passed since the run's last
            contact with it, and stops the run there when it passed its
            bound. Default $ZEUS_BSO_CHECK_IN_S, else 10 s; 0: never. Only
            rank 0 checks in, and, unless check_in_s is passed here, not in a
            torch.distributed group of several processes (see the module
            doc). A server without the route (the original) turns check-ins
            off with a warning; one unavailable during a check-in is warned
            about and the run goes on (its epoch report judges it).

    Attributes (the original's): monitor, server_url, cur_epoch,
    running_time (s), consumed_energy (J), training_finished, trial_number,
    rank, job_spec (the JobSpecFromClient registered), current_batch_size
    (0 until known), job (the CreatedJob the server stored).

    Raises:
        ZeusBSOConfigError: no GPU, GPUs of different power-limit ranges, or
            a rank other than 0 without a job_id.
        InvalidArgumentError: check_in_s or $ZEUS_BSO_CHECK_IN_S is not a
            finite number >= 0 (also timeout_s, max_attempts).
        InvalidArgumentError, UnavailableError, ...: the server refused the
            job or could not be reached.
    """

    def __init__(self, monitor: ZeusMonitor, server_url: str, job: JobSpec, rank: int = 0, *,
                 token=None, timeout_s=None, max_attempts=None, check_in_s=None):
        if not isinstance(job, JobSpec):
            raise InvalidArgumentError("BatchSizeOptimizer: job must be a JobSpec")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise InvalidArgumentError(f"BatchSizeOptimizer: rank must be an int >= 0, got "
                                       f"{rank!r}")
        self.monitor = monitor
        self.server_url = server_url.rstrip("/") if isinstance(server_url, str) else server_url
        self.cur_epoch = 0
        self.running_time = 0.0
        self.consumed_energy = 0.0
        self.training_finished = False
        self.trial_number = 0
        self.rank = rank
        self.current_batch_size = 0
        self._exit_hook = None
        # Seconds between check-ins (0: none) and when the next is due
        # (time.monotonic(); inf: none until on_train_begin or on_evaluate arms it).
        self._check_in_s = _resolve_check_in_s(check_in_s)
        if rank != 0:
            self._check_in_s = 0.0
        self._check_in_asked = check_in_s is not None
        self._check_in_at = math.inf
        # The monitor window of the run (one per rank, should ranks share a monitor).
        self._window = _WINDOW if rank == 0 else f"{_WINDOW}.rank{rank}"

        if rank != 0 and job.job_id is None:
            raise ZeusBSOConfigError(
                f"BatchSizeOptimizer: rank {rank} needs JobSpec.job_id (e.g. from $ZEUS_JOB_ID): "
                f"without it every rank would register a job of its own, and its reports would "
                f"not reach rank 0's trial")
        indices = list(monitor.gpu_indices)
        if not indices:
            raise ZeusBSOConfigError("BatchSizeOptimizer: the monitor measures no GPU")
        gpus = get_gpus()
        ranges = {tuple(gpus.getPowerManagementLimitConstraints(i)) for i in indices}
        if len(ranges) != 1 or None in next(iter(ranges)):
            raise ZeusBSOConfigError(
                f"BatchSizeOptimizer: power limit ranges differ or are unknown across GPUs "
                f"{indices}: {sorted(ranges, key=str)}")
        max_power_w = next(iter(ranges))[1] // 1000
        self.job_spec = JobSpecFromClient(**job.dict(), max_power=max_power_w * len(indices),
                                          number_of_gpus=len(indices),
                                          gpu_model=gpus.getName(indices[0]) or "unknown")

        self._server = BatchSizeServer(self.server_url, token=token, timeout_s=timeout_s,
                                       max_attempts=max_attempts)
        self._check_in_server = BatchSizeServer(
            self.server_url, token=token,
            timeout_s=min(_CHECK_IN_TIMEOUT_S, self._server.timeout_s), max_attempts=1)
        stored = self._server.register(self.job_spec.dict())
        self.job = self._parse(CreatedJob, stored, "the registered job")
        if job.job_id is None:
            job.job_id = self.job.job_id
        logger.info("Job is registered: %s", self.job.job_id)

    @staticmethod
    def _parse(model, answer, what):
        try:
            return model.parse_obj(answer)
        except ZeusBaseError as e:
            raise ZeusBSORuntimError(
                f"BatchSizeOptimizer: the server's answer is not {what}: {e}") from None

    @property
    def train_end(self) -> bool:
        """(extra, earlier name) training_finished."""
        return self.training_finished

    def get_batch_size(self) -> int:
        """The batch size of this run: asks the server the first time, then
        returns the same size. Only rank 0 may ask (ZeusBSOBadOperationError
        on the others)."""
        if self.rank != 0:
            raise ZeusBSOBadOperationError(
                f"BatchSizeOptimizer: only rank 0 asks for the batch size (this is rank "
                f"{self.rank}); broadcast rank 0's current_batch_size and trial_number and set "
                f"them here")
        if self.current_batch_size != 0:
            return self.current_batch_size
        trial = self._parse(TrialId,
                            self._server.next_batch_size(self.job.job_id, _resolve_attempt()),
                            "a trial")
        if trial.batch_size not in self.job.batch_sizes or trial.job_id != self.job.job_id:
            raise ZeusBSORuntimError(
                f"BatchSizeOptimizer: the server answered {trial!r}, not a trial of job "
                f"{self.job.job_id!r} with one of the batch sizes {self.job.batch_sizes}")
        self.cur_epoch = 0
        self.running_time = 0.0
        self.consumed_energy = 0.0
        self.training_finished = False
        self.current_batch_size = trial.batch_size
        self.trial_number = trial.trial_number
        if self._exit_hook is None:
            # A run that ends without its final report (a crash, Ctrl-C) is
            # ended on the server at exit, so its trial does not stay open.
            self._exit_hook = atexit.register(_end_trial_at_exit, weakref.ref(self))
        logger.info("Chosen batch size: %d (trial %d)", trial.batch_size, trial.trial_number)
        return trial.batch_size

    def on_train_begin(self) -> None:
        """Starts measuring the run."""
        self.training_finished = False
        if self.monitor.is_window_open(self._window):
            self.monitor.end_window(self._window, cancel=True)
        self.monitor.begin_window(self._window)
        self._arm_check_in()

    def _arm_check_in(self):
        """The next check-in is due check_in_s from now (never when off)."""
        self._check_in_at = time.monotonic() + self._check_in_s if self._check_in_s else math.inf

    def on_evaluate(self, metric: float) -> None:
        """Reports the run after one more epoch. When the server stops the
        run, training_finished turns True, and ZeusBSOTrainFailError is
        raised if it did not converge. Later calls of the same run do
        nothing. A metric that is not a finite number raises
        InvalidArgumentError before anything is measured or sent."""
        if self.current_batch_size == 0:
            raise ZeusBSOOperationOrderError(
                "BatchSizeOptimizer: call get_batch_size before on_evaluate" +
                ("" if self.rank == 0 else
                 f" (rank {self.rank}: set current_batch_size and trial_number from rank 0)"))
        if self.training_finished:
            return
        if isinstance(metric, bool) or not isinstance(metric, (int, float)):
            try:
                metric = float(metric)  # e.g. a 0-d tensor or numpy scalar.
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"BatchSizeOptimizer.on_evaluate: metric must be a number, got "
                    f"{metric!r}") from None
        if not math.isfinite(metric):
            raise InvalidArgumentError(
                f"BatchSizeOptimizer.on_evaluate: metric must be a finite number, got {metric} "
                f"(a diverged run? nothing was reported; the run's measurement goes on)")
        if not self.monitor.is_window_open(self._window):
            raise ZeusBSOOperationOrderError(
                "BatchSizeOptimizer: call on_train_begin before on_evaluate")
        self.cur_epoch += 1
        measurement = self.monitor.end_window(self._window)
        self.running_time += measurement.time
        self.consumed_energy += measurement.total_energy
        try:
            result = TrainingResult(job_id=self.job.job_id, batch_size=self.current_batch_size,
                                    trial_number=self.trial_number, time=self.running_time,
                                    energy=self.consumed_energy, metric=float(metric),
                                    current_epoch=self.cur_epoch)
            answer = self._parse(ReportResponse, self._server.report(result.dict()),
                                 "a report response")
        except Exception:
            # Nothing measured is lost: the totals keep this stretch and a new
            # window continues the run, so a retried on_evaluate reports all.
            self.cur_epoch -= 1
            self.monitor.begin_window(self._window)
            self._arm_check_in()
            raise
        if not answer.stop_train:
            self.monitor.begin_window(self._window)
            self._arm_check_in()
            return
        self._stopped(answer, f"after epoch {self.cur_epoch}")

    def _stopped(self, answer, when):
        """The server stopped the run: ZeusBSOTrainFailError unless it converged."""
        self.training_finished = True
        self._check_in_at = math.inf
        logger.info("Run stopped %s: %s", when, answer.message)
        if not answer.converged:
            # The original's words.
            raise ZeusBSOTrainFailError(
                f"Train failed: {answer.message} This batch size will not be selected again. "
                "Please re-launch the training")

    def on_step_end(self) -> None:
        """(extra) Checks in with the server when check_in_s passed since the
        run's last contact with it (one clock read otherwise): the run's
        time and energy so far go into running_time and consumed_energy (the
        measurement goes on; on_evaluate reports the same totals as without
        check-ins) and the server judges them against the run's bound. When
        it stops the run, training_finished turns True and
        ZeusBSOTrainFailError is raised. Does nothing before on_train_begin
        or after the run ended. Raises the server's error (not an
        unavailable server: that is logged) as on_evaluate does; nothing
        measured is lost then."""
        if time.monotonic() < self._check_in_at:
            return
        self._check_in_at = math.inf
        if (not self.current_batch_size or self.training_finished or
                not self.monitor.is_window_open(self._window)):
            return
        if not self._check_in_asked and _in_process_group():
            logger.info("BatchSizeOptimizer: no check-ins in a torch.distributed group of several "
                        "processes (a stop on rank 0 alone would hang the others); pass "
                        "check_in_s to check in and broadcast the stop yourself")
            self._check_in_s = 0.0
            return
        measurement = self.monitor.end_window(self._window)
        self.running_time += measurement.time
        self.consumed_energy += measurement.total_energy
        self.monitor.begin_window(self._window)
        body = dict(job_id=self.job.job_id, batch_size=self.current_batch_size,
                    trial_number=self.trial_number, time=self.running_time,
                    energy=self.consumed_energy)
        try:
            answer = self._parse(ReportResponse, self._check_in_server.check_in(body),
                                 "a check-in response")
        except NoSuchRouteError as e:
            logger.warning("BatchSizeOptimizer: the server has no check-in route (the original "
                           "Zeus server?): check-ins are off, epoch reports judge the run (%s)", e)
            self._check_in_s = 0.0
            return
        except UnavailableError as e:
            logger.warning("BatchSizeOptimizer: check-in failed, training goes on and the next "
                           "epoch report judges the run: %s", e)
            return
        finally:
            self._arm_check_in()
        if answer.stop_train:
            self.monitor.end_window(self._window, cancel=True)
            self._stopped(answer, f"during epoch {self.cur_epoch + 1}")

    def _end_trial_if_running(self, timeout_s=None):
        if not self.current_batch_size or self.training_finished:
            return
        server = self._server
        if timeout_s is not None:
            server = BatchSizeServer(self.server_url, token=server.token, timeout_s=timeout_s,
                                     max_attempts=1)
        server.end_trial(dict(job_id=self.job.job_id, batch_size=self.current_batch_size,
                              trial_number=self.trial_number))
        self.training_finished = True

    def end_trial(self) -> None:
        """(extra) Ends the run in progress early on the server (its trial
        fails); a no-op when none is. Also done at interpreter exit for a
        run that got its batch size here and never finished."""
        self._end_trial_if_running()

    def close(self) -> None:
        """Nothing to free (kept for symmetry with the other optimizers)."""
