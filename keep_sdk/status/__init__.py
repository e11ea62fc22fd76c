"""The status read model: what came in, what went out, what waits for a person, and what
they can do about it, read from a store in one snapshot.

The command line (``keep status``, ``keep run``) and the web console render the same
`StatusReport`; it holds what a person can do as data (`Remedy`), and only the
command line spells that as ``keep`` commands.

```python
from keep_sdk.status import build_status

report = build_status(store, store_url=url, now=clock())   # or Installation.status()
for workflow in report.workflows:
    for item in workflow.waiting:
        print(item.subject, item.why, [r.kind for r in item.remedies])
```
"""

from keep_sdk.status._build import build_status
from keep_sdk.status._report import (
    Input,
    Output,
    Remedy,
    RemedyKind,
    StatusReport,
    Waiting,
    WorkflowStatus,
)
from keep_sdk.status._waiting import Reconcilable

__all__ = [
    "Input",
    "Output",
    "Reconcilable",
    "Remedy",
    "RemedyKind",
    "StatusReport",
    "Waiting",
    "WorkflowStatus",
    "build_status",
]
