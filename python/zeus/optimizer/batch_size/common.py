"""The models and routes shared by the batch-size optimizer client and
server (field names, types and defaults of the original Zeus package).

The models are pydantic-style (zeus.optimizer._model.Model, standard library
only): JobSpec(...).copy(update={...}), .dict(), .json(), JobSpec.parse_obj
and the v2 names all work; every construction validates and raises
ValidationError (an InvalidArgumentError and a ValueError) naming the field.
Beyond the original's checks, floats must be finite (the server refuses NaN
and infinity: better said here), ids and names may not hold control
characters, batch sizes must be distinct and >= 1, and mab_prior_precision
>= 0 (the server's rules).
"""

from typing import List, Optional

from zeus.optimizer._model import Field, Model, ValidationError

REGISTER_JOB_URL = "/jobs"
DELETE_JOB_URL = "/jobs"
GET_NEXT_BATCH_SIZE_URL = "/jobs/batch_size"
REPORT_RESULT_URL = "/report"
REPORT_END_URL = "/trials"

# The batch-size policies `zeus serve` knows (an extra of this package).
POLICIES = ("zeus", "frugal", "swarm")

__all__ = [
    "REGISTER_JOB_URL", "DELETE_JOB_URL", "GET_NEXT_BATCH_SIZE_URL", "REPORT_RESULT_URL",
    "REPORT_END_URL", "POLICIES", "JobParams", "GpuConfig", "JobSpec", "JobSpecFromClient",
    "CreatedJob", "TrialId", "TrainingResult", "ReportResponse", "ValidationError"
]


class JobParams(Model):
    """The parameters of a recurring job, as the server stores them.

    Attributes:
        job_id: Unique id of the job.
        job_id_prefix: Non-empty; job_id starts with it.
        batch_sizes: Candidate batch sizes (distinct, >= 1; kept sorted).
        default_batch_size: One of batch_sizes, tried first.
        eta_knob: Weight of energy in the cost eta * E + (1 - eta) *
            MaxPower * T, in [0, 1].
        beta_knob: A run stops once its cost passes beta_knob x the best cost
            so far (> 0); None disables early stopping.
        target_metric: The validation metric a run must reach.
        higher_is_better_metric: Whether reaching means >= (else <=).
        max_epochs: A run stops at this epoch (> 0).
        num_pruning_rounds: Rounds of batch-size pruning before the bandit.
        window_size: Recent observations per batch size the bandit uses; 0:
            all of them.
        mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed:
            The Gaussian Thompson-sampling bandit's prior, static
            explorations and seed.
        policy: (extra of this package) How `zeus serve` explores batch
            sizes: "zeus" (the paper's), "frugal" (cheaper exploration) or
            "swarm" (frugal that also explores on concurrent submissions).
            Other servers ignore it.
    """

    job_id: str = Field(description="unique id")
    job_id_prefix: str
    batch_sizes: List[int]
    default_batch_size: int = Field(gt=0)
    eta_knob: float = Field(0.5, ge=0.0, le=1.0)
    beta_knob: Optional[float] = Field(2.0, gt=0.0)
    target_metric: float = 0.5
    higher_is_better_metric: bool = True
    max_epochs: int = Field(100, gt=0)
    num_pruning_rounds: int = Field(2, ge=0)
    window_size: int = Field(0, ge=0)
    mab_prior_mean: float = 0.0
    mab_prior_precision: float = Field(0.0, ge=0.0)
    mab_num_explorations: int = Field(2, ge=0)
    mab_seed: Optional[int] = None
    policy: str = "zeus"

    def _validate_model(self):
        if not self.job_id_prefix:
            self._invalid("field 'job_id_prefix': must not be empty")
        if not self.batch_sizes:
            self._invalid("field 'batch_sizes': must not be empty")
        sizes = sorted(self.batch_sizes)
        for size in sizes:
            if size < 1:
                self._invalid(f"field 'batch_sizes': {size} must be >= 1")
        duplicates = sorted({s for s in sizes if sizes.count(s) > 1})
        if duplicates:
            self._invalid(f"field 'batch_sizes': {duplicates} appear more than once")
        self.batch_sizes = sizes
        if self.default_batch_size not in sizes:
            self._invalid(f"default_batch_size {self.default_batch_size} is not one of "
                          f"batch_sizes {sizes}")
        if self.job_id is not None:
            if not self.job_id:
                self._invalid("field 'job_id': must not be empty (None lets the server "
                              "create one)")
            if not self.job_id.startswith(self.job_id_prefix):
                self._invalid(f"job_id {self.job_id!r} does not start with job_id_prefix "
                              f"{self.job_id_prefix!r}")
        if self.policy not in POLICIES:
            self._invalid(f"policy {self.policy!r} is not one of {', '.join(POLICIES)}")


class GpuConfig(Model):
    """The GPUs of the job.

    Attributes:
        max_power: Sum of the GPUs' maximum power limits, W (> 0).
        number_of_gpus: > 0.
        gpu_model: The GPUs' name (non-empty).
    """

    max_power: float = Field(gt=0)
    number_of_gpus: int = Field(gt=0)
    gpu_model: str

    def _validate_model(self):
        if not self.gpu_model:
            self._invalid("field 'gpu_model': must not be empty")


class JobSpec(JobParams):
    """A recurring job as the user specifies it.

    Attributes:
        job_id: None lets the server create "<job_id_prefix>-<8 hex
            chars>"; else it must start with job_id_prefix. Recurrences of
            a job pass the same id (e.g. from $ZEUS_JOB_ID).

    Every other field is JobParams'.
    """

    job_id: Optional[str] = None


class JobSpecFromClient(JobSpec, GpuConfig):
    """What the client registers: the JobSpec and its GPUs."""

    def _validate_model(self):
        JobSpec._validate_model(self)
        GpuConfig._validate_model(self)


class CreatedJob(JobParams, GpuConfig):
    """The job as the server stored it (job_id always set)."""

    def _validate_model(self):
        JobParams._validate_model(self)
        GpuConfig._validate_model(self)


class TrialId(Model):
    """One run of a job with a batch size.

    Attributes:
        job_id, batch_size, trial_number: Its identity.
    """

    job_id: str
    batch_size: int
    trial_number: int


class TrainingResult(TrialId):
    """A run's report after an epoch.

    Attributes:
        time: Seconds since the run began (finite).
        energy: Joules since the run began (finite).
        metric: The validation metric after current_epoch (finite).
        current_epoch: Epochs done (1-based).
    """

    time: float
    energy: float
    metric: float
    current_epoch: int


class ReportResponse(Model):
    """The server's answer to a report.

    Attributes:
        stop_train: Whether the run must stop.
        converged: Whether it reached the target metric.
        message: Why (free text).
    """

    stop_train: bool
    converged: bool
    message: str = Field("", allow_control=True)
