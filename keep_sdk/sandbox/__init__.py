"""The capability-scoped QuickJS sandbox: run one handler phase of a workflow script.

```python
from keep_sdk.sandbox import PhaseRequest, run_phase

result = run_phase(PhaseRequest(source=src, handler="pollEmail", phase="producer",
                                manifest=manifest, publish_topics=("email.received",),
                                call_sites=workflow.call_sites("pollEmail", "producer")),
                   host)
result.outcome   # Completed | MutationRequested | LogicFailure | LimitFailure | CallFailed
                 # | InternalFailure
result.trace     # console lines, every ctx call, jobs, JS time and wall time
```

`call_sites` are the validator's approved ctx call sites of the phase (`workflow` is the
validated `WorkflowManifest`); without them no ctx call is performed.
`ProcessIsolation` runs the same phase in a killable worker process.
"""

from keep_sdk.sandbox._host import HostInterface
from keep_sdk.sandbox._isolation import InProcessIsolation, Isolation
from keep_sdk.sandbox.capabilities import Capabilities
from keep_sdk.sandbox.engine import run_phase
from keep_sdk.sandbox.outcome import (
    CallFailed,
    Completed,
    ConsoleLine,
    Determinism,
    HostCall,
    InternalFailure,
    Limit,
    LimitFailure,
    LogicFailure,
    MutationRequested,
    Outcome,
    PhaseRequest,
    PhaseResult,
    Trace,
)
from keep_sdk.sandbox.process import ProcessIsolation

__all__ = [
    "CallFailed",
    "Capabilities",
    "Completed",
    "ConsoleLine",
    "Determinism",
    "HostCall",
    "HostInterface",
    "InProcessIsolation",
    "InternalFailure",
    "Isolation",
    "Limit",
    "LimitFailure",
    "LogicFailure",
    "MutationRequested",
    "Outcome",
    "PhaseRequest",
    "PhaseResult",
    "ProcessIsolation",
    "Trace",
    "run_phase",
]
