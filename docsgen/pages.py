"""Every generated page of the site, from the installed keep_sdk."""

from __future__ import annotations

from pathlib import Path

from docsgen import api_ref, cli_ref, hooks_ref, policy_ref, rules_ref, schemas_ref
from docsgen.page import Page

__all__ = ["generated_pages", "rule_sections"]


def generated_pages(docs_dir: Path) -> list[Page]:
    """The reference pages, plus a page for each rule with no ``docs/rules/<id>.md``."""
    import keep_sdk
    import keep_sdk.errors
    import keep_sdk.plugins.hookspecs
    from keep_sdk.cli import cli
    from keep_sdk.model import BackoffPolicy, HostPolicy, SandboxLimits
    from keep_sdk.validator.rules import BUILTIN_RULES

    pages = [
        api_ref.api_page(keep_sdk, dict(keep_sdk._HOMES), keep_sdk.errors),
        cli_ref.cli_page(cli),
        hooks_ref.hooks_page(keep_sdk.plugins.hookspecs),
        schemas_ref.schemas_page(),
        policy_ref.policy_page(
            HostPolicy,
            {SandboxLimits: "sandbox.*", BackoffPolicy: "backoff.*, reconcile_backoff.*"},
        ),
        rules_ref.index_page(BUILTIN_RULES),
    ]
    pages += [
        rules_ref.standalone_page(rule)
        for rule in BUILTIN_RULES
        if not (docs_dir / rules_ref.page_path(rule)).is_file()
    ]
    return pages


def rule_sections() -> dict[str, str]:
    """For each built-in rule's page path, the generated section appended to it."""
    from keep_sdk.validator.rules import BUILTIN_RULES

    return {rules_ref.page_path(r): rules_ref.metadata_section(r) for r in BUILTIN_RULES}
