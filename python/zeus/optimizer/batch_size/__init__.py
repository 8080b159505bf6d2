"""The batch-size optimizer client: BatchSizeOptimizer and JobSpec."""

from zeus.optimizer.batch_size.client import BatchSizeOptimizer
from zeus.optimizer.batch_size.common import JobSpec

__all__ = ["BatchSizeOptimizer", "JobSpec"]
