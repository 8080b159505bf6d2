"""Callback: the training-loop hooks every Zeus optimizer offers."""


class Callback:
    """Base class of training-loop callbacks; every hook does nothing."""

    def on_train_begin(self) -> None:
        pass

    def on_train_end(self) -> None:
        pass

    def on_epoch_begin(self) -> None:
        pass

    def on_epoch_end(self) -> None:
        pass

    def on_step_begin(self) -> None:
        pass

    def on_step_end(self) -> None:
        pass

    def on_evaluate(self, metric: float) -> None:
        pass


class CallbackSet(Callback):
    """Calls each hook on every callback, in order."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks)

    def on_train_begin(self):
        for c in self.callbacks:
            c.on_train_begin()

    def on_train_end(self):
        for c in self.callbacks:
            c.on_train_end()

    def on_epoch_begin(self):
        for c in self.callbacks:
            c.on_epoch_begin()

    def on_epoch_end(self):
        for c in self.callbacks:
            c.on_epoch_end()

    def on_step_begin(self):
        for c in self.callbacks:
            c.on_step_begin()

    def on_step_end(self):
        for c in self.callbacks:
            c.on_step_end()

    def on_evaluate(self, metric):
        for c in self.callbacks:
            c.on_evaluate(metric)
