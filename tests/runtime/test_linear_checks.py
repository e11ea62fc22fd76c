"""The runtime's check of what prepare returns is linear in the number of reserved ids."""

from __future__ import annotations

import datetime as dt
import json

from keep_sdk.contract.workflow import ConsumerManifest
from keep_sdk.model import HostPolicy
from keep_sdk.runtime.checks import check_prepare_result
from tests.sandbox.test_linear import Action, assert_linear, ids_of


def test_checking_a_prepare_result_is_linear() -> None:
    consumer = ConsumerManifest.model_construct(name="c", subscribe=["a"])
    policy = HostPolicy()
    now = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)

    def operation(n: int) -> Action:
        raw = {"reservations": [{"topic": "a", "ids": ids_of(n)}], "data": {}}
        return lambda: check_prepare_result(
            raw, returned=True, consumer=consumer, policy=policy, now=now
        )

    def baseline(n: int) -> Action:
        text = json.dumps({"reservations": [{"topic": "a", "ids": ids_of(n)}]})
        return lambda: json.loads(text)

    assert_linear(operation, baseline, bound=60)
