"""JobSpec: the recurring job registered with the batch-size optimizer
server (field names and defaults of the original)."""

from dataclasses import asdict, dataclass
from typing import List, Optional

from zeus.exception import InvalidArgumentError

# The batch-size policies the server knows.
POLICIES = ("zeus", "frugal")


@dataclass
class JobSpec:
    """A recurring training job.

    Attributes:
        job_id: Unique id; None lets the server create
            "<job_id_prefix>-<8 hex chars>"; else it starts with the prefix.
        job_id_prefix: Non-empty.
        batch_sizes: Candidate batch sizes.
        default_batch_size: One of batch_sizes, tried first.
        eta_knob: Weight of energy in the cost, in [0, 1].
        beta_knob: A run stops once its cost passes beta_knob x the best
            cost so far; None disables early stopping.
        target_metric: The validation metric a run must reach.
        higher_is_better_metric: Whether reaching means >= (else <=).
        max_epochs: A run stops at this epoch.
        num_pruning_rounds: Rounds of batch-size pruning before the bandit.
        window_size: Recent observations per batch size the bandit keeps
            (0: all).
        mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed:
            The Gaussian Thompson-sampling bandit's prior and seed.
        policy: How the server explores batch sizes: "zeus" (the paper's) or
            "frugal" (cheaper exploration, docs/BATCH_SIZE_POLICY.md).
    """

    job_id_prefix: str
    batch_sizes: List[int]
    default_batch_size: int
    job_id: Optional[str] = None
    eta_knob: float = 0.5
    beta_knob: Optional[float] = 2.0
    target_metric: float = 0.50
    higher_is_better_metric: bool = True
    max_epochs: int = 100
    num_pruning_rounds: int = 2
    window_size: int = 10
    mab_prior_mean: float = 0.0
    mab_prior_precision: float = 0.0
    mab_num_explorations: int = 2
    mab_seed: Optional[int] = None
    policy: str = "zeus"

    def __post_init__(self):
        if not self.job_id_prefix:
            raise InvalidArgumentError("JobSpec: job_id_prefix must not be empty")
        self.batch_sizes = sorted(int(b) for b in self.batch_sizes)
        if self.default_batch_size not in self.batch_sizes:
            raise InvalidArgumentError(
                f"JobSpec: default_batch_size {self.default_batch_size} is not one of "
                f"batch_sizes {self.batch_sizes}")
        if self.policy not in POLICIES:
            raise InvalidArgumentError(
                f"JobSpec: policy {self.policy!r} is not one of {', '.join(POLICIES)}")

    def dict(self):
        return asdict(self)
