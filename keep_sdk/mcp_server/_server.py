"""The MCP server: the tools, resources and transports of ``keep mcp``."""

from __future__ import annotations

import datetime as dt
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from keep_sdk.cases import schema_of
from keep_sdk.contract.typescript import declarations
from keep_sdk.errors import KeepError
from keep_sdk.mcp_server import _tools
from keep_sdk.mcp_server._outputs import CaseRun, ConnectorListing, DeployOutcome
from keep_sdk.mcp_server._workspace import Workspace
from keep_sdk.repair import ReplaySummary
from keep_sdk.repair.surface import SurfaceDiff
from keep_sdk.status import StatusReport
from keep_sdk.validator import ReportSet, Rule

__all__ = ["build_server", "serve_http", "serve_stdio"]

T = TypeVar("T")

INSTRUCTIONS = """\
keep validates, tests and durably runs JavaScript workflows (`export default
Keep.workflow({...})`). To write or repair one: read keep://connectors/keep.d.ts (what each
phase may call), validate the script (each diagnostic has a rule, a location and a fix
hint; keep://rules/<rule-id> explains the rule), fix it, validate again, then run its
*.keep.yaml cases and, when a store has recorded runs, replay it. A deploy never grants a
permission: a person does."""

_READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_PATH = "A file path, relative to the folder `keep mcp` runs in."


def _answer(call: Callable[[], T]) -> T:
    try:
        return call()
    except KeepError as exc:
        raise ToolError(str(exc)) from None


def _rule_page(rule: Rule) -> str:
    meta = rule.meta
    lines = [f"# {meta.id} ({meta.severity.value})", "", meta.description, ""]
    if meta.rationale:
        lines += ["## Why", "", meta.rationale, ""]
    lines += ["## How to fix it", "", meta.hint, "", "## Messages", ""]
    lines += [f"- `{key}`: {template}" for key, template in meta.messages.items()]
    return "\n".join(lines) + "\n"


def _page_of(rule: Rule) -> Callable[[], str]:
    def page() -> str:
        return _rule_page(rule)

    return page


def build_server(workspace: Workspace) -> FastMCP:
    """The FastMCP server of `workspace`: seven tools (deploy refuses unless
    `Workspace.allow_deploy`), every one with input and output JSON Schemas, the reads
    annotated ``readOnlyHint``; and the resources of the rules, the case format and the
    connector declarations (JSON and TypeScript)."""
    server = FastMCP("keep", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=_READ, structured_output=True)
    def validate(
        paths: Annotated[list[str], Field(min_length=1, description=f"Scripts. {_PATH}")],
        mutate_reads: Annotated[
            Literal["none", "by_id"],
            Field(description='Host policy: "by_id" allows read-by-id operations in mutate.'),
        ] = "none",
    ) -> ReportSet:
        """Check workflow scripts statically: each diagnostic has its rule id, location,
        related locations and a hint on how to fix it (keep validate --format json)."""
        return _answer(lambda: _tools.validate(workspace, paths, mutate_reads))

    @server.tool(annotations=_READ, structured_output=True)
    def connectors(
        name: Annotated[
            str | None, Field(description="One connector (sheets); all when absent.")
        ] = None,
    ) -> ConnectorListing:
        """What scripts can call: every connector operation, its kind, permission and the
        JSON Schema of its argument (keep connectors --format json)."""
        return _answer(lambda: _tools.connectors(workspace, name))

    @server.tool(annotations=_READ, structured_output=True)
    def run_cases(
        case_file: Annotated[str, Field(description=f"A *.keep.yaml case file. {_PATH}")],
        cases: Annotated[list[str], Field(description="Cases to run; all when empty.")] = [],  # noqa: B006
        script: Annotated[
            str | None,
            Field(description="A script to test instead of the one the file names."),
        ] = None,
    ) -> CaseRun:
        """Run a workflow's cases on a memory store with recording doubles (keep test);
        nothing leaves the process and nothing is written to the store."""
        return _answer(lambda: _tools.run_cases(workspace, case_file, cases, script))

    @server.tool(annotations=_READ, structured_output=True)
    def replay(
        script: Annotated[str, Field(description=f"The new version of the script. {_PATH}")],
        workflow: Annotated[
            str | None, Field(description="The recorded workflow (default: the script's).")
        ] = None,
        since: Annotated[
            dt.datetime | None, Field(description="Only runs created at or after this time.")
        ] = None,
        limit: Annotated[int | None, Field(ge=1, description="The most recent N runs.")] = None,
    ) -> ReplaySummary:
        """Run a script against the recorded traces of the store's past runs (keep replay):
        each run is same, changed (with a diff), would-fail or unreplayable."""
        return _answer(lambda: _tools.replay(workspace, script, workflow, since, limit))

    @server.tool(annotations=_READ, structured_output=True)
    def diff(
        old: Annotated[str, Field(description=f"The old script. {_PATH}")],
        new: Annotated[str, Field(description=f"The new script. {_PATH}")],
    ) -> SurfaceDiff:
        """How two versions differ in topics, handlers, schedules, the operations each
        phase reaches, and the permissions the new one needs that the old did not."""
        return _answer(lambda: _tools.diff(workspace, old, new))

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        ),
        structured_output=True,
    )
    def deploy(
        script: Annotated[str, Field(description=f"The script to deploy. {_PATH}")],
        name: Annotated[
            str | None, Field(description="Deploy under this name instead of the script's.")
        ] = None,
    ) -> DeployOutcome:
        """Validate a script and deploy it as a new version of its workflow (unchanged when
        it is the current one). Never grants a permission; refused unless the server was
        started with --allow-deploy."""
        return _answer(lambda: _tools.deploy(workspace, script, name))

    @server.tool(annotations=_READ, structured_output=True)
    def status(
        workflow: Annotated[str | None, Field(description="One workflow; all when absent.")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Items per list.")] = 10,
    ) -> StatusReport:
        """What came in, what went out and what waits for a person, and what they can do
        about it (keep status)."""
        return _answer(lambda: _tools.status(workspace, workflow, limit))

    _resources(server, workspace)
    return server


def _resources(server: FastMCP, workspace: Workspace) -> None:
    for rule in workspace.plugins.rules():
        server.resource(
            f"keep://rules/{rule.meta.id}",
            name=f"rule {rule.meta.id}",
            description=rule.meta.description,
            mime_type="text/markdown",
        )(_page_of(rule))

    @server.resource(
        "keep://cases/format",
        name="case format",
        description="The JSON Schema of a *.keep.yaml case file (keep schema keep-case).",
        mime_type="application/schema+json",
    )
    def case_format() -> str:
        return json.dumps(schema_of("keep-case"), indent=2)

    @server.resource(
        "keep://connectors/manifest.json",
        name="connector declarations",
        description="Every connector operation: kind, permission, argument JSON Schema.",
        mime_type="application/json",
    )
    def manifest() -> str:
        return workspace.manifest().model_dump_json(indent=2, by_alias=True)

    @server.resource(
        "keep://connectors/keep.d.ts",
        name="TypeScript declarations",
        description="Keep, ctx in each phase (only what it may call), operations, events.",
        mime_type="application/typescript",
    )
    def typescript() -> str:
        return declarations(workspace.manifest())


def serve_stdio(workspace: Workspace) -> None:
    """Serve `workspace` on standard input and output until the client goes away."""
    build_server(workspace).run("stdio")


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


def _bearer(app: ASGIApp, token: str) -> ASGIApp:
    """`app` behind ``Authorization: Bearer <token>``: any other HTTP request is a 401."""
    expected = f"bearer {token}".encode()

    async def guarded(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if not hmac.compare_digest(scheme.lower() + b" " + value.strip(), expected):
                body = b'{"error": "send the console token as Authorization: Bearer <token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def serve_http(workspace: Workspace, *, host: str, port: int, token: str) -> None:
    """Serve `workspace` over streamable HTTP at ``http://host:port/mcp``, every request
    carrying `token` (the console's) as a bearer token."""
    import uvicorn

    server = build_server(workspace)
    server.settings.host = host
    server.settings.port = port
    app = server.streamable_http_app()
    guarded = _bearer(app, token)

    async def lifespan_app(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        await (app if scope["type"] == "lifespan" else guarded)(scope, receive, send)

    uvicorn.run(lifespan_app, host=host, port=port, log_level="warning")
