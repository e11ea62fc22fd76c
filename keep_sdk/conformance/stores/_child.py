"""Child-process side of the store suite's process tests.

``python -m keep_sdk.conformance.stores._child ACTION URL ARGS...`` opens the
store at URL as ``keep`` does (any scheme of the installed plugins) and performs
ACTION, printing one JSON line:

- ``hold-intent RUN_ID``: record the run's mutation intent, print the entry,
  then wait to be killed;
- ``consume WORKFLOW HANDLER``: race other workers consuming every pending event;
- ``begin WORKFLOW HANDLER START_AT``: at START_AT (epoch seconds) try to begin a run;
- ``acquire WORKFLOW OWNER START_AT``: at START_AT try to take the workflow's lease;
- ``deploy-if-changed WORKFLOW START_AT``: at START_AT deploy the source ``same`` unless
  it is the current version's.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time

from keep_sdk.conformance.stores._support import STANDARD_HANDLERS, open_url
from keep_sdk.conformance.stores._workers import consume_all, try_begin

__all__ = ["main"]


def main(argv: list[str]) -> int:
    action, url, *args = argv
    store = open_url(url)
    if action == "hold-intent":
        (run_id,) = args
        entry = store.record_mutation_intent(
            run_id,
            connector="sheets",
            operation="appendRow",
            params={"values": ["from child"]},
            idempotency_key=f"key:{run_id}",
        )
        print(entry.model_dump_json(), flush=True)
        time.sleep(120)
        return 1
    if action == "consume":
        workflow, handler = args
        print(json.dumps(consume_all(store, workflow, handler)), flush=True)
    elif action == "begin":
        workflow, handler, start_at = args
        print(json.dumps({"began": try_begin(store, workflow, handler, float(start_at))}))
    elif action == "acquire":
        workflow, owner, start_at = args
        time.sleep(max(0.0, float(start_at) - time.time()))
        lease = store.acquire_lease(workflow, owner, ttl=dt.timedelta(seconds=60))
        print(json.dumps({"acquired": lease is not None}))
    elif action == "deploy-if-changed":
        workflow, start_at = args
        time.sleep(max(0.0, float(start_at) - time.time()))
        version, deployed = store.deploy_if_changed(
            workflow, "same", {}, handlers=list(STANDARD_HANDLERS)
        )
        print(json.dumps({"version": version, "deployed": deployed}))
    else:
        print(f"unknown action {action!r}", file=sys.stderr)
        return 2
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
