"""What rules ask the handler walk to record: the walk itself knows no rule's words.

A rule that needs facts about particular calls declares a `WalkVocabulary`
in its own module and passes it with its `Rule`. The engine merges the
vocabularies of the rules it runs with those of the built-in rules and hands
the result to the walk, which treats every entry the same neutral way:

- `calls`: a call of a global path (``Date.now``, also as a template tag) is
  recorded as a `GlobalUse` of the given kind, named by the path;
- `constructions`: ``new <path>()`` without arguments is recorded as a
  `GlobalUse` of the given kind named ``new <path>()``;
- `receiver_writers`: methods that change the object they are called on
  (``push``): called on an object held by a module-level binding, recorded as
  a ``mutate`` `SharedStateAccess` of that binding;
- `argument_writers`: global functions that change their first argument
  (``Object.assign``): recorded the same way for that argument;
- `inspecting_globals`: global objects whose methods only read their
  arguments (``console``): handing ctx to them is not recorded as an escape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from keep_sdk.validator.facts import GlobalUseKind

__all__ = ["WalkVocabulary"]


@dataclass(frozen=True, slots=True, eq=False)
class WalkVocabulary:
    """Callee and method names a rule wants the walk to record facts about (see module doc)."""

    calls: Mapping[str, GlobalUseKind] = field(default_factory=dict)
    constructions: Mapping[str, GlobalUseKind] = field(default_factory=dict)
    receiver_writers: frozenset[str] = frozenset()
    argument_writers: frozenset[str] = frozenset()
    inspecting_globals: frozenset[str] = frozenset()
    global_roots: frozenset[str] = field(init=False, repr=False)
    """The global names whose calls or constructions this vocabulary records facts for."""

    def __post_init__(self) -> None:
        paths = [*self.calls, *self.constructions, *self.argument_writers]
        roots = frozenset(path.split(".")[0] for path in paths)
        object.__setattr__(self, "global_roots", roots)

    def merge(self, *others: WalkVocabulary) -> WalkVocabulary:
        """One vocabulary holding every entry of this one and of `others`.

        A path two vocabularies record with different kinds keeps the first kind.
        """
        calls = dict(self.calls)
        constructions = dict(self.constructions)
        receiver_writers = set(self.receiver_writers)
        argument_writers = set(self.argument_writers)
        inspecting = set(self.inspecting_globals)
        for other in others:
            for path, kind in other.calls.items():
                calls.setdefault(path, kind)
            for path, kind in other.constructions.items():
                constructions.setdefault(path, kind)
            receiver_writers |= other.receiver_writers
            argument_writers |= other.argument_writers
            inspecting |= other.inspecting_globals
        return WalkVocabulary(
            calls,
            constructions,
            frozenset(receiver_writers),
            frozenset(argument_writers),
            frozenset(inspecting),
        )
