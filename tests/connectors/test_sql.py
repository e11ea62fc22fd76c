"""The SQL connector on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import keep_sdk
from keep_sdk.config import load_config
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from keep_sdk.errors import ConfigurationError
from keep_sdk.model import ReconcileStatus

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}

CONFIG = """
[connectors.orders]
type = "sql"
url = "${ORDERS_URL}"

[connectors.orders.operations.openOrders]
kind = "read"
sql = "SELECT id, customer, total FROM orders WHERE status = :status ORDER BY id"
arguments = { properties = { status = { type = "string" } }, required = ["status"] }

[connectors.orders.operations.getOrder]
kind = "read_by_id"
sql = "SELECT id, customer, note FROM orders WHERE id = :id"
arguments = { properties = { id = { type = "string" } }, required = ["id"] }

[connectors.orders.operations.createOrder]
kind = "mutation"
sql = "INSERT INTO orders (id, customer, total, status, note, idem_key) VALUES (:id, :customer, :total, 'open', :note, :idempotency_key)"
arguments = { properties = { id = { type = "string" }, customer = { type = "string" }, total = { type = "number" }, note = { type = "string" } }, required = ["id", "customer", "total", "note"] }
reconcile = "orderByKey"

[connectors.orders.lookups.orderByKey]
sql = "SELECT id, customer FROM orders WHERE idem_key = :idempotency_key"
"""

SCHEMA = (
    "CREATE TABLE orders (id VARCHAR(40) PRIMARY KEY, customer VARCHAR(200) NOT NULL, "
    "total NUMERIC(10, 2) NOT NULL, status VARCHAR(20) NOT NULL, note TEXT, "
    "idem_key VARCHAR(60) UNIQUE)"
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'orders.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        url = server.create_database("orders").replace("postgresql://", "postgresql+psycopg://")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(SCHEMA))
    engine.dispose()
    return url


@pytest.fixture
def orders(database_url: str, tmp_path: Path) -> Iterator[Connector]:
    path = tmp_path / "keep.toml"
    path.write_text(CONFIG)
    config = load_config(path, types=TYPES, environ={"ORDERS_URL": database_url})
    [connector] = config.build_connectors()
    yield connector
    connector.close()  # type: ignore[attr-defined]


def create(orders: Connector, order_id: str, key: str, note: str = "n") -> object:
    args = {"id": order_id, "customer": "Ada", "total": 12.5, "note": note}
    return orders.invoke("createOrder", args, idempotency_key=key)


def test_reads_return_rows_as_json(orders):
    create(orders, "o1", "keep-1")
    create(orders, "o2", "keep-2")
    rows = orders.invoke("openOrders", {"status": "open"})
    assert rows == [
        {"id": "o1", "customer": "Ada", "total": 12.5},
        {"id": "o2", "customer": "Ada", "total": 12.5},
    ]
    assert orders.invoke("getOrder", {"id": "o2"}) == {"id": "o2", "customer": "Ada", "note": "n"}
    assert orders.invoke("getOrder", {"id": "nope"}) is None


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    note=st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
)
def test_arguments_reach_the_database_only_as_bound_values(orders, note):
    hostile = f"x'); DROP TABLE orders; -- {note}"
    order_id = f"o-{abs(hash(note))}"
    if orders.invoke("getOrder", {"id": order_id}) is None:
        create(orders, order_id, f"keep-{order_id}", note=hostile)
    assert orders.invoke("getOrder", {"id": order_id})["note"] == hostile


def test_a_constraint_violation_is_a_definite_failure_that_changed_nothing(orders):
    create(orders, "o1", "keep-1")
    with pytest.raises(keep_sdk.PreconditionFailed) as caught:
        create(orders, "o1", "keep-2")
    assert "constraint" in str(caught.value)
    assert len(orders.invoke("openOrders", {"status": "open"})) == 1


def test_reconcile_finds_the_row_by_idempotency_key(orders):
    create(orders, "o1", "keep-1")
    applied = orders.reconcile(
        "createOrder", {"id": "o1", "customer": "Ada", "total": 1, "note": ""}, "keep-1"
    )
    assert applied.status is ReconcileStatus.APPLIED
    assert applied.result == {"id": "o1", "customer": "Ada"}
    missing = orders.reconcile(
        "createOrder", {"id": "o9", "customer": "Ada", "total": 1, "note": ""}, "keep-9"
    )
    assert missing.status is ReconcileStatus.FAILED


def test_arguments_are_checked_before_the_database_is_touched(orders):
    with pytest.raises(keep_sdk.InvalidArguments) as caught:
        orders.invoke("openOrders", {"status": 3, "sql": "DELETE FROM orders"})
    assert "`sql` is not a known field" in str(caught.value)


def test_a_database_that_cannot_be_reached_is_transient(tmp_path):
    path = tmp_path / "keep.toml"
    path.write_text(CONFIG)
    url = f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}"
    [connector] = load_config(path, types=TYPES, environ={"ORDERS_URL": url}).build_connectors()
    try:
        with pytest.raises(keep_sdk.TransientError) as caught:
            connector.invoke("openOrders", {"status": "open"})
        assert "cannot connect" in str(caught.value)
    finally:
        connector.close()  # type: ignore[attr-defined]


def test_a_refused_connection_is_one_message_naming_the_server_not_the_password(tmp_path):
    path = tmp_path / "keep.toml"
    path.write_text(CONFIG)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql+psycopg://app:Pa55-not-shown@127.0.0.1:{port}/shop"
    [connector] = load_config(path, types=TYPES, environ={"ORDERS_URL": url}).build_connectors()
    try:
        for op, args, key in (
            ("openOrders", {"status": "open"}, None),
            ("createOrder", {"id": "o1", "customer": "Ada", "total": 1, "note": "n"}, "keep-1"),
        ):
            with pytest.raises(keep_sdk.TransientError) as caught:
                connector.invoke(op, args, idempotency_key=key)
            message = str(caught.value)
            assert message.startswith(
                f"ctx.orders.{op}: cannot connect to the database of connector 'orders'"
            )
            assert f"port {port} failed: Connection refused" in message
            assert "nothing was run" in message
            assert "Pa55" not in message
    finally:
        connector.close()  # type: ignore[attr-defined]


@pytest.mark.postgres
def test_a_wrong_password_is_one_message_without_the_password(postgres_server, tmp_path):
    path = tmp_path / "keep.toml"
    path.write_text(CONFIG)
    url = postgres_server.create_database("orders").replace(
        "postgresql://", "postgresql+psycopg://"
    )
    password = "Wr0ng-pa55word-xyz"
    user_host = url.split("://", 1)[1].split("@")[-1]
    bad = f"postgresql+psycopg://nobody_here:{password}@{user_host}"
    [connector] = load_config(path, types=TYPES, environ={"ORDERS_URL": bad}).build_connectors()
    try:
        with pytest.raises(keep_sdk.TransientError) as caught:
            connector.invoke("openOrders", {"status": "open"})
        assert password not in str(caught.value)
        assert "cannot connect" in str(caught.value)
    finally:
        connector.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM orders WHERE id = :other", ":other, which is not an argument"),
        ("SELECT * FROM orders WHERE k = :idempotency_key", "only mutations get"),
    ],
)
def test_a_statement_binding_an_undeclared_parameter_is_refused_at_load(tmp_path, sql, expected):
    path = tmp_path / "keep.toml"
    path.write_text(CONFIG.replace("SELECT id, customer, note FROM orders WHERE id = :id", sql))
    with pytest.raises(ConfigurationError) as caught:
        load_config(path, types=TYPES, environ={"ORDERS_URL": "sqlite://"})
    assert "connectors.orders.operations.getOrder" in str(caught.value)
    assert expected in str(caught.value)
