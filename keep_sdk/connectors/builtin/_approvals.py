"""`approvals`: a durable double; ``request`` asks a person and completes by notification."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from keep_sdk.connectors.builtin._double import Doc, ServiceDouble
from keep_sdk.connectors.operation import operation
from keep_sdk.contract.durable import InvocationContext, Pending
from keep_sdk.errors import PreconditionFailed
from keep_sdk.model import OperationKind

__all__ = ["ApprovalRequest", "Approvals"]


class ApprovalRequest(BaseModel):
    """Arguments of ``ctx.approvals.request``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    to: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
    subject: Annotated[str, Field(min_length=1, max_length=500)]
    body: Annotated[str, Field(max_length=40_000)] = ""


class Approvals(ServiceDouble):
    """Ask a person for an approval, a document or an answer, and wait (durable).

    ``request`` sends the request once per invocation token and parks the run;
    the person's answer arrives as a notification with the request's correlation
    key (``keep notify KEY --result JSON``). Its state lists every request sent,
    ``{"requests": {id: {...}}}``; a recipient in ``"blocked"`` is refused.
    """

    name = "approvals"

    @classmethod
    def empty_state(cls) -> Doc:
        return {"effects": [], "requests": {}, "blocked": []}

    @operation(
        kind=OperationKind.DURABLE,
        permission="approvals.request",
        args=ApprovalRequest,
        timeout="P14D",
        result={"description": "The answer the person's notification carries: any JSON value."},
    )
    def request(self, args: ApprovalRequest, *, invocation: InvocationContext) -> Pending:
        """Send a request to a person; completes when their answer is notified."""
        params = args.model_dump(mode="json", by_alias=True)

        def apply(state: Doc) -> Doc:
            if args.to in state["blocked"]:
                raise PreconditionFailed(f"recipient {args.to!r} does not accept requests")
            request_id = f"req-{len(state['requests']) + 1}"
            state["requests"][request_id] = {
                **params,
                "correlationKey": invocation.correlation_key,
                "status": "sent",
            }
            return {"requestId": request_id}

        result, _ = self._start_once("request", invocation.invocation_id, params, apply)
        assert isinstance(result, dict)
        return Pending(external_id=str(result["requestId"]))

    @request.canceller
    def cancel_request(self, args: ApprovalRequest, *, invocation: InvocationContext) -> None:
        """Withdraw the request (the person no longer sees it)."""
        with self._state() as state:
            for request in state["requests"].values():
                if request.get("correlationKey") == invocation.correlation_key:
                    request["status"] = "withdrawn"
