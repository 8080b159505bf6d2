"""Energy optimizers: zeus.optimizer.power_limit and zeus.optimizer.batch_size."""
