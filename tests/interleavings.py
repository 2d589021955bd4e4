"""A deterministic scheduler of threads at FileIO calls: every IO call of every actor is a
step, and a seeded random choice (with runs of one actor of random length, so that an
actor can also stall for long) says which actor makes the next step. One seed is one
interleaving, replayed exactly (the actors' own randomness aside).

```python
s = Scheduler(seed)
s.run({"a": lambda: mp.open_table(path, io=s.io(base_io)).write(...), "b": ...})
s.errors  # [(actor, exception)]; s.trace: [(actor, (method, path))]
```
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any


class Scheduler:
    """Runs actors (callables) in threads, one FileIO call at a time."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._switch = self._rng.choice([0.5, 0.1, 0.02, 0.005])  # how long runs are
        self._cv = threading.Condition()
        self._waiting: dict[str, tuple[str, str]] = {}
        self._live: set[str] = set()
        self._turn: str | None = None
        self._current: str | None = None
        self.trace: list[tuple[str, tuple[str, str]]] = []
        self.errors: list[tuple[str, BaseException]] = []

    def io(self, inner: Any) -> ScheduledIO:
        """``inner`` (a FileIO) whose every call waits for its actor's turn."""
        return ScheduledIO(self, inner)

    def step(self, what: tuple[str, str]) -> None:
        me = threading.current_thread().name
        with self._cv:
            if me not in self._live:
                return  # not an actor (setup or checks on the main thread)
            self._waiting[me] = what
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._turn == me)
            self._turn = None
            del self._waiting[me]

    def run(self, actors: dict[str, Callable[[], None]]) -> None:
        threads = [threading.Thread(target=self._body, args=(name, fn), name=name)
                   for name, fn in actors.items()]
        self._live = set(actors)
        for t in threads:
            t.start()
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._turn is None and self._live <= set(self._waiting))
                if not self._live:
                    break
                if self._current not in self._live or self._rng.random() < self._switch:
                    self._current = self._rng.choice(sorted(self._live))
                self.trace.append((self._current, self._waiting[self._current]))
                self._turn = self._current
                self._cv.notify_all()
        for t in threads:
            t.join()

    def _body(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self.errors.append((name, e))
        finally:
            with self._cv:
                self._live.discard(name)
                self._cv.notify_all()


class ScheduledIO:
    """A FileIO whose calls are steps of a :class:`Scheduler`."""

    def __init__(self, scheduler: Scheduler, inner: Any) -> None:
        self._scheduler = scheduler
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            where = args[0] if args and isinstance(args[0], str) else ""
            self._scheduler.step((name, where))
            return attr(*args, **kwargs)
        return call


class Gates:
    """A FileIO whose thread stops at chosen calls until the test lets it go: each gate is a
    predicate over (method, path); the first call matching the next gate (in order) signals
    ``reached`` and waits for :meth:`release` before it runs. A directed interleaving:

    ```python
    g = Gates(LocalFileIO(), lambda m, p: m == "write_if_absent" and "snapshot-3" in p)
    t = threading.Thread(target=lambda: mp.open_table(path, io=g).write(...)); t.start()
    g.wait()          # the writer is about to create snapshot-3
    ...               # what happens meanwhile
    g.release()       # it creates it and runs on
    ```

    With ``every``, each call matching the (single) gate waits, not only the first: the
    calls one operation makes concurrently (an expiration's marker creates) all stand at it
    until :meth:`release`, which lets them all pass and opens the gate for good.
    """

    def __init__(self, inner: Any, *gates: Callable[[str, str], bool], timeout: float = 120,
                 every: bool = False) -> None:
        assert not every or len(gates) == 1, "every: one gate"
        self.inner = inner
        self._gates = list(gates)
        self._timeout = timeout
        self._every = every
        self._reached = threading.Event()
        self._go = threading.Event()

    def wait(self) -> None:
        """Block until the thread stands at the current gate."""
        assert self._reached.wait(self._timeout), "the gate was never reached"
        self._reached.clear()

    def release(self) -> None:
        """Let the thread pass the gate it stands at."""
        if self._every:
            self._gates.clear()
        self._go.set()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            where = args[0] if args and isinstance(args[0], str) else ""
            gates = list(self._gates)
            if gates and gates[0](name, where):
                if not self._every:
                    self._gates.pop(0)
                self._reached.set()
                assert self._go.wait(self._timeout), "the gate was never released"
                if not self._every:
                    self._go.clear()
            return attr(*args, **kwargs)
        return call


def expiration_standing_at(path: str, gate: Callable[[str, str], bool], every: bool = False
                           ) -> tuple[threading.Thread, Gates, list]:
    """An expiration of the table at ``path`` down to its latest snapshot, on a thread that
    stands at the first FileIO call matching ``gate`` (``every``: at every one, as
    :class:`Gates`; for its marker creates, made concurrently); returns the thread, its
    gates (:meth:`Gates.release` lets it run on) and a list that receives its ExpireResult."""
    import minipaimon_core as mp
    from minipaimon_core.io.fileio import LocalFileIO
    from minipaimon_core.maintenance.expire import expire_snapshots
    from minipaimon_core.maintenance.files import TableFiles

    io = Gates(LocalFileIO(), gate, every=every)
    out: list = []
    thread = threading.Thread(target=lambda: out.append(expire_snapshots(
        TableFiles.of(mp.open_table(path, io=io)), retain_max=1)))
    thread.start()
    io.wait()
    return thread, io, out
