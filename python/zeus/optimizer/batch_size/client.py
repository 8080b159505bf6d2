"""BatchSizeOptimizer: the client of the batch-size optimizer server
(`zeus serve`, or the original Zeus server) for one recurring job.

    bso = BatchSizeOptimizer(monitor, "http://127.0.0.1:8000", JobSpec(...))
    batch_size = bso.get_batch_size()
    bso.on_train_begin()
    for epoch in range(max_epochs):
        train_one_epoch(batch_size)
        bso.on_evaluate(validate())   # raises ZeusBSOTrainFailError if stopped early

HTTP goes through zeus.optimizer.batch_size.http (standard library only, so
libzeus_c.so stays free of an HTTP/TLS stack): the routes and the error
mapping of the C++ client (src/server/client/batch_size_client.cc), with
retries of idempotent calls while the server is unavailable. Server and
connection errors raise the zeus.exception class of their status code, e.g.
UnavailableError when the server is down.
"""

import logging

from zeus.callback import Callback
from zeus.device import get_gpus
from zeus.exception import InvalidArgumentError
from zeus.monitor.energy import ZeusMonitor
from zeus.optimizer.batch_size.common import JobSpec
from zeus.optimizer.batch_size.exceptions import (ZeusBSOConfigError, ZeusBSOOperationOrderError,
                                                  ZeusBSORuntimError, ZeusBSOTrainFailError)
from zeus.optimizer.batch_size.http import BatchSizeServer

logger = logging.getLogger(__name__)

_WINDOW = "zeus.batch_size_optimizer"


class BatchSizeOptimizer(Callback):
    """Registers `job` with the server at `server_url` and runs its trials.

    Args:
        monitor: Measures each run's energy (its GPUs define max_power,
            number_of_gpus and gpu_model of the job).
        server_url: e.g. "http://127.0.0.1:8000".
        job: The JobSpec.
        token: (extra) Bearer token when the server requires one.
    """

    def __init__(self, monitor: ZeusMonitor, server_url: str, job: JobSpec, *, token=None,
                 timeout_s: float = 30.0):
        if not isinstance(job, JobSpec):
            raise InvalidArgumentError("BatchSizeOptimizer: job must be a JobSpec")
        self.monitor = monitor
        self.server_url = server_url.rstrip("/")
        self.cur_epoch = 0
        self.running_time = 0.0
        self.consumed_energy = 0.0
        self.train_end = False
        self.current_batch_size = 0
        self.trial_number = 0

        if not monitor.gpu_indices:
            raise ZeusBSOConfigError("BatchSizeOptimizer: the monitor measures no GPU")
        gpus = get_gpus()
        infos = [gpus.info(gpus.position(index)) for index in monitor.gpu_indices]
        ranges = {(i["min_power_limit_mw"], i["max_power_limit_mw"]) for i in infos}
        if len(ranges) != 1 or None in next(iter(ranges)):
            raise ZeusBSOConfigError(
                f"BatchSizeOptimizer: power limit ranges differ or are unknown across GPUs "
                f"{monitor.gpu_indices}: {sorted(ranges, key=str)}")
        max_power_w = next(iter(ranges))[1] // 1000
        body = job.dict()
        body.update(max_power=max_power_w * len(infos), number_of_gpus=len(infos),
                    gpu_model=infos[0]["name"] or "unknown")

        self._server = BatchSizeServer(self.server_url, token=token, timeout_s=timeout_s)
        stored = self._server.register(body)
        if not isinstance(stored, dict) or not isinstance(stored.get("job_id"), str):
            raise ZeusBSORuntimError(f"BatchSizeOptimizer: the server answered {stored!r}")
        job.job_id = stored["job_id"]
        self.job = job
        self.job_params = stored
        logger.info("Job is registered: %s", stored)

    def get_batch_size(self) -> int:
        """The batch size of this run (asks the server once per run)."""
        if self.train_end:
            return self.current_batch_size
        self.cur_epoch = 0
        self.running_time = 0.0
        self.consumed_energy = 0.0
        trial = self._server.next_batch_size(self.job.job_id)
        batch_size = trial.get("batch_size") if isinstance(trial, dict) else None
        if (not isinstance(batch_size, int) or batch_size not in self.job.batch_sizes or
                not isinstance(trial.get("trial_number"), int)):
            raise ZeusBSORuntimError(
                f"BatchSizeOptimizer: the server answered {trial!r}, not a trial with one of "
                f"the batch sizes {self.job.batch_sizes}")
        self.current_batch_size = batch_size
        self.trial_number = trial["trial_number"]
        logger.info("Chosen batch size: %d (trial %d)", batch_size, self.trial_number)
        return batch_size

    def on_train_begin(self) -> None:
        """Starts measuring the run."""
        self.train_end = False
        if self.monitor.is_window_open(_WINDOW):
            self.monitor.end_window(_WINDOW, cancel=True)
        self.monitor.begin_window(_WINDOW)

    def on_evaluate(self, metric: float) -> None:
        """Reports the run after one more epoch. When the server stops the
        run: returns if it converged, else raises ZeusBSOTrainFailError.
        Later calls of the same run do nothing."""
        if self.current_batch_size == 0:
            raise ZeusBSOOperationOrderError(
                "BatchSizeOptimizer: call get_batch_size before on_evaluate")
        if self.train_end:
            return
        if not self.monitor.is_window_open(_WINDOW):
            raise ZeusBSOOperationOrderError(
                "BatchSizeOptimizer: call on_train_begin before on_evaluate")
        self.cur_epoch += 1
        measurement = self.monitor.end_window(_WINDOW)
        self.running_time += measurement.time
        self.consumed_energy += measurement.total_energy
        result = dict(job_id=self.job.job_id, batch_size=self.current_batch_size,
                      trial_number=self.trial_number, time=self.running_time,
                      energy=self.consumed_energy, metric=float(metric),
                      current_epoch=self.cur_epoch)
        try:
            answer = self._server.report(result)
            if not isinstance(answer, dict) or not isinstance(answer.get("stop_train"), bool):
                raise ZeusBSORuntimError(f"BatchSizeOptimizer: the server answered {answer!r}")
        except Exception:
            # Nothing measured is lost: the totals keep this stretch and a new
            # window continues the run, so a retried on_evaluate reports all.
            self.cur_epoch -= 1
            self.monitor.begin_window(_WINDOW)
            raise
        if not answer["stop_train"]:
            self.monitor.begin_window(_WINDOW)
            return
        self.train_end = True
        message = answer.get("message") or ""
        logger.info("Run stopped after epoch %d: %s", self.cur_epoch, message)
        if not answer.get("converged"):
            raise ZeusBSOTrainFailError(
                f"BatchSizeOptimizer: training stopped before converging ({message}); batch "
                f"size {self.current_batch_size} will not be tried again. Relaunch training.")

    def end_trial(self) -> None:
        """(extra) Ends the run in progress early on the server (its trial
        fails); a no-op when none is."""
        if self.current_batch_size and not self.train_end:
            self._server.end_trial(dict(job_id=self.job.job_id,
                                        batch_size=self.current_batch_size,
                                        trial_number=self.trial_number))
            self.train_end = True

    def close(self) -> None:
        """Nothing to free (kept for symmetry with the other optimizers)."""
