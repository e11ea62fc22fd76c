"""A `ConnectorSet` with connectors built on first use: names never build, a first use
builds once however many threads race, a failed build is retried, close closes what was built.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from keep_sdk.connectors import Connector, ConnectorSet, operation
from keep_sdk.errors import ConfigurationError, TransientError, UnknownConnector
from keep_sdk.model import OperationKind

THREADS = 4


class Nothing(BaseModel):
    pass


class Probe(Connector):
    """A connector that counts how often it was closed."""

    name = "probe"

    def __init__(self) -> None:
        self.closed = 0

    @operation(kind=OperationKind.READ, permission="probe.read", args=Nothing)
    def ping(self, args: Nothing) -> object:
        return {"from": self.name}

    def close(self) -> None:
        self.closed += 1


_CLASSES: dict[str, type[Probe]] = {}


def probe(name: str) -> Probe:
    klass = _CLASSES.get(name)
    if klass is None:
        klass = _CLASSES[name] = type(f"Probe_{name}", (Probe,), {"name": name})
    return klass()


class Builders:
    """Builders that fail their first `failures[name]` attempts, recording every attempt."""

    def __init__(self, failures: dict[str, int]) -> None:
        self.failures = dict(failures)
        self.attempts: Counter[str] = Counter()
        self.made: dict[str, list[Probe]] = {name: [] for name in failures}

    def __call__(self, name: str) -> Callable[[], Connector]:
        def build() -> Connector:
            self.attempts[name] += 1
            time.sleep(0.001)
            if self.failures[name] > 0:
                self.failures[name] -= 1
                raise ConfigurationError(f"connector {name!r}: the server is down")
            instance = probe(name)
            self.made[name].append(instance)
            return instance

        return build


names = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)


@settings(max_examples=40, deadline=None)
@given(
    entries=st.dictionaries(names, st.one_of(st.none(), st.integers(0, 2)), max_size=6),
    data=st.data(),
)
def test_names_never_build_first_use_builds_once_and_close_closes_what_was_built(
    entries: dict[str, int | None], data: st.DataObject
) -> None:
    eager = {name: probe(name) for name, failures in entries.items() if failures is None}
    failures = {name: n for name, n in entries.items() if n is not None}
    builders = Builders(failures)
    connectors = ConnectorSet(
        list(eager.values()), deferred={name: builders(name) for name in failures}
    )

    assert list(connectors) == sorted(entries)
    assert len(connectors) == len(entries)
    assert all(name in connectors for name in entries)
    assert "absent-name" not in connectors
    assert connectors.built() == {name: eager[name] for name in sorted(eager)}
    assert not builders.attempts

    used = data.draw(st.sets(st.sampled_from(sorted(failures))) if failures else st.just(set()))
    start = threading.Barrier(THREADS)
    answers: list[object] = []

    def call(name: str) -> None:
        start.wait()
        try:
            answers.append(connectors.invoke(name, "ping", {}))
        except TransientError as exc:
            answers.append(str(exc))

    for name in sorted(used):
        threads = [threading.Thread(target=call, args=(name,)) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        while connectors.built().get(name) is None:
            if builders.failures[name] > 0:
                with pytest.raises(TransientError, match=f"connector {name!r}: the server is down"):
                    connectors.invoke(name, "ping", {})
            else:
                assert connectors.invoke(name, "ping", {}) == {"from": name}
        assert len(builders.made[name]) == 1
        assert builders.attempts[name] == failures[name] + 1

    assert {name for name, made in builders.made.items() if made} == used
    assert set(connectors.built()) == set(eager) | used
    connectors.close()
    for name, made in builders.made.items():
        assert [instance.closed for instance in made] == ([1] if name in used else [])
    assert all(instance.closed == 0 for instance in eager.values())


def test_the_manifest_needs_every_connector_and_reports_a_build_failure_as_is() -> None:
    builders = Builders({"crm": 1, "desk": 0})
    connectors = ConnectorSet(
        [probe("mail")], deferred={"crm": builders("crm"), "desk": builders("desk")}
    )
    with pytest.raises(ConfigurationError, match="connector 'crm': the server is down"):
        connectors.manifest()
    assert [c.name for c in connectors.manifest().connectors] == ["crm", "desk", "mail"]
    assert set(connectors.built()) == {"crm", "desk", "mail"}


def test_an_unknown_name_is_refused_without_building() -> None:
    builders = Builders({"crm": 0})
    connectors = ConnectorSet([], deferred={"crm": builders("crm")})
    with pytest.raises(
        UnknownConnector, match="there is no connector 'desk'; registered connectors: crm"
    ):
        connectors["desk"]
    assert not builders.attempts
