"""`Lanes`: runs of different workflows carried out at once, one workflow per lane.

A worker with `concurrency` > 1 plans on its own thread and hands each task it leased to
a free lane (a thread of its own, kept while the scheduler lives). A workflow is in at most
one lane at a time, so it still has at most one active run on this worker, as the lease
gives it at most one across workers. A lane stays the workflow's until the planner has seen
it finish (`harvest`), so a plan made while the lane ran is never started beside it. A
workflow goes back to the lane that ran it last when that lane is free: the sandbox keeps a
workflow's realm per thread, so a workflow that wanders between threads builds a realm in
each.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait

from keep_sdk.errors import InternalError
from keep_sdk.scheduler._tasks import Activity

__all__ = ["Lanes"]

_Work = Callable[[], list[Activity]]


class _Lane:
    """One thread taking work from its own queue until it gets None."""

    def __init__(self, index: int) -> None:
        self.inbox: queue.SimpleQueue[tuple[Future[list[Activity]], _Work] | None] = (
            queue.SimpleQueue()
        )
        self.thread = threading.Thread(target=self._serve, name=f"keep-lane-{index}", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while (item := self.inbox.get()) is not None:
            future, work = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:
                future.set_exception(exc)


class Lanes:
    """Up to `width` workflows worked on at once, on threads named ``keep-lane-N``."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._lanes: list[_Lane] = []
        self._running: dict[str, tuple[int, Future[list[Activity]]]] = {}
        self._home: dict[str, int] = {}

    @property
    def busy(self) -> frozenset[str]:
        """The workflows a lane holds (finished but not yet harvested included)."""
        return frozenset(self._running)

    def full(self) -> bool:
        """Whether every lane holds a workflow."""
        return len(self._running) >= self.width

    def idle(self) -> bool:
        """Whether no lane holds a workflow."""
        return not self._running

    def start(self, workflow: str, work: _Work) -> None:
        """Run `work` for `workflow` in a free lane: the one that ran it last if it is free."""
        if workflow in self._running or self.full():
            raise InternalError(f"no free lane for workflow {workflow!r}")
        taken = {index for index, _ in self._running.values()}
        home = self._home.get(workflow)
        if home is None or home in taken:
            home = next(i for i in range(self.width) if i not in taken)
        while len(self._lanes) <= home:
            self._lanes.append(_Lane(len(self._lanes)))
        future: Future[list[Activity]] = Future()
        self._running[workflow] = (home, future)
        self._home[workflow] = home
        self._lanes[home].inbox.put((future, work))

    def wait(self, timeout: float) -> None:
        """Return when a lane finished, or after `timeout` seconds."""
        if self._running:
            futures = [future for _, future in self._running.values()]
            wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)

    def harvest(self) -> list[Activity]:
        """What the finished lanes did, freeing them; the first error a lane raised is raised
        here once every finished lane was freed."""
        done: list[Activity] = []
        error: BaseException | None = None
        for workflow, (_, future) in list(self._running.items()):
            if not future.done():
                continue
            del self._running[workflow]
            failed = future.exception()
            if failed is None:
                done.extend(future.result())
            elif error is None:
                error = failed
        if error is not None:
            raise error
        return done

    def settle(self) -> list[Activity]:
        """Wait for every lane to finish and free them all; what they did (a lane's error is
        dropped: the caller is stopping or already failing)."""
        wait([future for _, future in self._running.values()])
        done: list[Activity] = []
        for _, future in self._running.values():
            if future.exception() is None:
                done.extend(future.result())
        self._running.clear()
        return done

    def close(self) -> None:
        """Let every lane finish, then end their threads."""
        self.settle()
        for lane in self._lanes:
            lane.inbox.put(None)
        for lane in self._lanes:
            lane.thread.join()
        self._lanes.clear()
