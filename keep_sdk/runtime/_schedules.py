"""When a producer is next due, from the schedule its script declares."""

from __future__ import annotations

import datetime as dt
from typing import Any

from croniter import croniter

__all__ = ["next_run_at"]


def next_run_at(schedule: Any, after: dt.datetime) -> dt.datetime:
    """The first time strictly after `after` at which `schedule` fires.

    `schedule` is an interval schedule (``seconds``) or a cron schedule
    (``cron``, five fields, evaluated in UTC) from the workflow manifest.
    """
    if getattr(schedule, "kind", None) == "cron":
        fired: dt.datetime = croniter(schedule.cron, after).get_next(dt.datetime)
        return fired if fired.tzinfo else fired.replace(tzinfo=dt.UTC)
    return after + dt.timedelta(seconds=float(schedule.seconds))
