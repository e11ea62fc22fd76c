"""``keep config``: the configuration in effect, which file and why, and where each policy value
came from."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from keep_sdk.cli._options import configuration, json_option, store_option
from keep_sdk.cli.support import print_json, reports_errors
from keep_sdk.cli.text import console, styled

__all__ = ["config_command"]


@click.command("config")
@store_option
@click.option(
    "--workflow", default=None, help="Show the policy of this workflow (with its overrides)."
)
@json_option
@reports_errors
def config_command(store_url: str | None, workflow: str | None, as_json: bool) -> None:
    """Show the keep.toml in effect and why it is the one (--config, $KEEP_CONFIG, the
    working folder or a parent, next to the store), or where keep looked; its connectors
    (secrets masked) and every policy value with its source (default, keep.toml, workflow)."""
    config = configuration(store_url)
    source = config.source
    values = config.policy_values(workflow)
    connectors: list[dict[str, Any]] = [
        {
            "name": name,
            "type": instance.type.name,
            "settings": instance.settings.model_dump(mode="json", exclude={"operations"}),
            "operations": sorted(getattr(instance.settings, "operations", {}) or {}),
        }
        for name, instance in sorted(config.connectors.items())
    ]
    if as_json:
        print_json(
            {
                "file": str(config.path) if config.path else None,
                "reason": source.reason if source is not None else None,
                "looked": [str(p) for p in source.looked] if source is not None else [],
                "workflow": workflow,
                "connectors": connectors,
                "policy": [{"key": v.key, "value": v.value, "source": v.source} for v in values],
            }
        )
        return
    out = console()
    if config.path is not None:
        why = f" ({source.why})" if source is not None else ""
        out.print(styled(f"configuration: {config.path}{why}", "bold"), soft_wrap=True)
    else:
        out.print(styled("configuration: none (built-in defaults)", "bold"))
        if source is not None and source.looked:
            out.print(
                styled(
                    f"no keep.toml found; looked in {source.places()}. Put one in the "
                    "working folder, or pass keep --config PATH, or set KEEP_CONFIG"
                ),
                soft_wrap=True,
            )
    for connector in connectors:
        ops = ", ".join(connector["operations"]) or "none"
        out.print(styled(f"connector {connector['name']} ({connector['type']}): {ops}"))
    table = Table(title=f"policy{f' of workflow {workflow}' if workflow else ''}")
    for column in ("key", "value", "source"):
        table.add_column(column, overflow="fold")
    for value in values:
        table.add_row(styled(value.key), styled(value.value), styled(value.source))
    out.print(table)
