"""Callback: the training-loop hooks every Zeus optimizer offers (the
original's `zeus.callback`). Every hook of the base class does nothing;
`CallbackSet` calls each hook on its callbacks in list order (an exception
stops the loop and propagates)."""

from __future__ import annotations


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

    def on_instruction_begin(self, name: str) -> None:
        """Before a named instruction of a training step (e.g. "forward")."""

    def on_instruction_end(self, name: str) -> None:
        """After a named instruction of a training step."""


class CallbackSet(Callback):
    """Calls each hook on every callback, in order."""

    def __init__(self, callbacks: list[Callback]) -> None:
        self.callbacks = list(callbacks)

    def on_train_begin(self) -> None:
        for c in self.callbacks:
            c.on_train_begin()

    def on_train_end(self) -> None:
        for c in self.callbacks:
            c.on_train_end()

    def on_epoch_begin(self) -> None:
        for c in self.callbacks:
            c.on_epoch_begin()

    def on_epoch_end(self) -> None:
        for c in self.callbacks:
            c.on_epoch_end()

    def on_step_begin(self) -> None:
        for c in self.callbacks:
            c.on_step_begin()

    def on_step_end(self) -> None:
        for c in self.callbacks:
            c.on_step_end()

    def on_evaluate(self, metric: float) -> None:
        for c in self.callbacks:
            c.on_evaluate(metric)

    def on_instruction_begin(self, name: str) -> None:
        for c in self.callbacks:
            c.on_instruction_begin(name)

    def on_instruction_end(self, name: str) -> None:
        for c in self.callbacks:
            c.on_instruction_end(name)
