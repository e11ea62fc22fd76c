"""Pages of the documentation site generated from the code, so they cannot drift.

Each module renders one kind of reference page as Markdown from the objects it
documents (the click group, the rule catalog, the hook specs, the contract
models, the host policy, the public facade). `pages.generated_pages` collects
them; `mkdocs_hooks` hands them to MkDocs at build time. Nothing generated is
committed: the site is built from this code and ``docs/`` on every build.
"""
