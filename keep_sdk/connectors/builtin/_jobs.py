"""`jobs`: a durable double polled to completion; ``submit`` answers pending N times, then done."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.connectors.builtin._double import Doc, ServiceDouble
from keep_sdk.connectors.operation import operation
from keep_sdk.contract.durable import Done, InvocationContext, Pending
from keep_sdk.errors import InternalError
from keep_sdk.model import OperationKind

__all__ = ["JobSubmit", "Jobs"]


class JobSubmit(BaseModel):
    """Arguments of ``ctx.jobs.submit``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=200)]
    input: JsonValue = None


class Jobs(ServiceDouble):
    """A batch system: ``submit`` starts a job once per invocation token; polling it answers
    ``pending`` ``pendingPolls`` times (state, default 2), then ``done``: ok with
    ``{"job": id, "output": input}``, or an error for a job name listed in ``"failing"``."""

    name = "jobs"

    @classmethod
    def empty_state(cls) -> Doc:
        return {"effects": [], "jobs": {}, "pendingPolls": 2, "failing": []}

    @operation(
        kind=OperationKind.DURABLE,
        permission="jobs.submit",
        args=JobSubmit,
        timeout="P1D",
        result={
            "type": "object",
            "properties": {
                "job": {"type": "string", "description": "The job's id."},
                "output": {"description": "What the job produced (the double: its input)."},
            },
            "required": ["job", "output"],
            "additionalProperties": False,
        },
    )
    def submit(self, args: JobSubmit, *, invocation: InvocationContext) -> Pending:
        """Submit a job; the host polls it until it is done."""
        params = args.model_dump(mode="json", by_alias=True)

        def apply(state: Doc) -> Doc:
            job_id = f"job-{len(state['jobs']) + 1}"
            state["jobs"][job_id] = {"name": args.name, "input": args.input, "polls": 0}
            return {"job": job_id}

        result, _ = self._start_once("submit", invocation.invocation_id, params, apply)
        assert isinstance(result, dict)
        job = str(result["job"])
        return Pending(token=job, external_id=job)

    @submit.poller
    def poll_submit(self, args: JobSubmit, *, invocation: InvocationContext) -> Pending | Done:
        """How the job is going: pending until it has been polled ``pendingPolls`` times."""
        self._before_effect("poll:submit", self.faults.take("poll:submit"), is_mutation=False)
        job_id = invocation.token
        with self._state() as state:
            job = state["jobs"].get(job_id or "")
            if job is None:
                raise InternalError(f"jobs has no job {job_id!r}")
            job["polls"] += 1
            if job["polls"] <= int(state["pendingPolls"]):
                return Pending(token=job_id)
            if job["name"] in state["failing"]:
                return Done(ok=False, error=f"job {job_id} ({job['name']}) failed: exit 1")
            return Done(ok=True, result={"job": job_id, "output": job["input"]})
