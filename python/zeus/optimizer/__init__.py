"""Energy optimizers: zeus.optimizer.power_limit, zeus.optimizer.frequency and
zeus.optimizer.batch_size."""
