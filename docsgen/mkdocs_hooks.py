"""MkDocs hooks (``hooks:`` in mkdocs.yml): add the generated pages at build time.

- `on_config` puts the repository root on ``sys.path`` (MkDocs loads this file
  by path) and lists each rule page under the nav's "Rule catalog" section.
- `on_files` adds every page of `docsgen.pages.generated_pages` as a generated
  file (nothing is written to ``docs/``).
- `on_page_markdown` appends to each hand-written rule page what the rule
  declares, and turns the info string ```` ```python example ```` (used by
  tests that run a page's examples) into plain ```` ```python ````.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs.structure.files import File, Files  # noqa: E402

from docsgen.pages import generated_pages, rule_sections  # noqa: E402

RULES_SECTION = "Rule catalog"
_EXAMPLE_FENCE = re.compile(r"^(\s*```+\s*python) example\s*$", re.MULTILINE)


def on_config(config: Any) -> Any:
    """Expand the nav's "Rule catalog" section to the index and one page per rule."""
    from keep_sdk.validator.rules import BUILTIN_RULES

    pages = ["rules/index.md", *(f"rules/{rule.id}.md" for rule in BUILTIN_RULES)]
    if not _expand(config["nav"] or [], RULES_SECTION, pages):
        raise RuntimeError(f"mkdocs.yml: the nav has no section {RULES_SECTION!r}")
    return config


def _expand(nav: list[Any], title: str, pages: list[str]) -> bool:
    """Set the section `title` (at any depth of `nav`) to `pages`; False if absent."""
    for entry in nav:
        if not isinstance(entry, dict):
            continue
        if title in entry:
            entry[title] = list(pages)
            return True
        if any(isinstance(v, list) and _expand(v, title, pages) for v in entry.values()):
            return True
    return False


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages; a generated page never replaces a hand-written one."""
    for page in generated_pages(Path(config["docs_dir"])):
        if files.get_file_from_path(page.path) is not None:
            raise RuntimeError(f"docs/{page.path} is generated; remove the hand-written file")
        files.append(File.generated(config, page.path, content=page.content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Append the rule's declared metadata to its page; normalise example fences."""
    markdown = _EXAMPLE_FENCE.sub(r"\1", markdown)
    section = rule_sections().get(page.file.src_uri)
    if section is not None and not page.file.generated_by:
        markdown = markdown.rstrip() + "\n\n" + section
    return markdown
