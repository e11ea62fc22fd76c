"""The reference scheduler: when runs happen, on one worker or many sharing a store.

```python
from keep_sdk.scheduler import Scheduler

scheduler = Scheduler(runtime)          # runtime: keep_sdk.runtime.Runtime
scheduler.run_until_idle()              # everything due now (tests: with a fake clock)
scheduler.run_forever(stop=event)       # a worker: sleeps until the next due time
Scheduler(runtime, concurrency=8)       # runs of up to 8 workflows at once
```
"""

from keep_sdk.scheduler._drain import DEFAULT_DRAIN_RUNS, DEFAULT_DRAIN_S
from keep_sdk.scheduler._leases import LeaseKeeper
from keep_sdk.scheduler._planner import Planner, QuietConsumers, is_superseded
from keep_sdk.scheduler._retry import (
    WORKER_RETRY,
    Outage,
    OutageWatcher,
    RetryPolicy,
    is_transient,
    retrying,
)
from keep_sdk.scheduler._scheduler import DEFAULT_LEASE_TTL_S, Scheduler, default_worker_name
from keep_sdk.scheduler._tasks import Activity, Task, TaskKind

__all__ = [  # noqa: RUF022 (plain sorted(), as the facade tests check)
    "Activity",
    "DEFAULT_DRAIN_RUNS",
    "DEFAULT_DRAIN_S",
    "DEFAULT_LEASE_TTL_S",
    "LeaseKeeper",
    "Outage",
    "OutageWatcher",
    "Planner",
    "QuietConsumers",
    "RetryPolicy",
    "Scheduler",
    "Task",
    "TaskKind",
    "WORKER_RETRY",
    "default_worker_name",
    "is_superseded",
    "is_transient",
    "retrying",
]
