"""Which keep.toml applies: --config, $KEEP_CONFIG, the working folder and its parents, then
next to the store; and the answer says why, or where keep looked."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.config import CONFIG_NAME, ConfigSource, find_config, load_config
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from keep_sdk.errors import ConfigurationError

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}


def _beyond(root: Path) -> Path | None:
    """The keep.toml that a walk up from `root` (exclusive) would find outside the test's
    folder, so the expectation holds whatever the machine has above it."""
    for folder in root.parents:
        if (folder / CONFIG_NAME).is_file():
            return folder / CONFIG_NAME
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.integers(min_value=0, max_value=4),
    in_chain=st.sets(st.integers(min_value=0, max_value=4)),
    store=st.sampled_from(["none", "inside", "beside"]),
    store_has_file=st.booleans(),
    explicit=st.booleans(),
    env=st.booleans(),
)
def test_the_first_found_wins_in_the_documented_order(
    depth: int,
    in_chain: set[int],
    store: str,
    store_has_file: bool,
    explicit: bool,
    env: bool,
) -> None:
    with tempfile.TemporaryDirectory() as raw:
        root = Path(raw).absolute()
        chain = [root]
        for level in range(depth):
            chain.append(chain[-1] / f"d{level}")
        cwd = chain[-1]
        cwd.mkdir(parents=True, exist_ok=True)
        for level in in_chain:
            if level < len(chain):
                (chain[level] / CONFIG_NAME).write_text("")
        store_dir = {"none": None, "inside": cwd / ".keep", "beside": root / "elsewhere"}[store]
        if store_dir is not None:
            store_dir.mkdir(parents=True)
            if store_has_file:
                (store_dir / CONFIG_NAME).write_text("")
        named = root / "named.toml"
        named.write_text("")
        by_env = root / "by-env.toml"
        by_env.write_text("")

        found = find_config(
            explicit=named if explicit else None,
            store_dir=store_dir,
            environ={"KEEP_CONFIG": str(by_env)} if env else {},
            cwd=cwd,
        )

        nearest = next(
            (f / CONFIG_NAME for f in reversed(chain) if (f / CONFIG_NAME).is_file()),
            _beyond(root),
        )
        if explicit:
            expected: tuple[Path | None, str] = (named, "--config")
        elif env:
            expected = (by_env, "KEEP_CONFIG")
        elif nearest is not None:
            expected = (nearest, "working folder" if nearest.parent == cwd else "parent folder")
        elif store_dir is not None and store_has_file:
            expected = (store_dir / CONFIG_NAME, "next to the store")
        else:
            expected = (None, "none found")
        assert (found.path, found.reason) == expected
        if found.reason == "none found":
            assert found.looked[0] == cwd / CONFIG_NAME
            assert Path("/") / CONFIG_NAME in found.looked
            if store_dir is not None:
                assert found.looked[-1] == store_dir / CONFIG_NAME
            assert "no keep.toml found (looked in " in found.describe()
            assert f"{cwd} and its parents" in found.describe()
        else:
            assert str(found.path) in found.describe()


def test_a_relative_explicit_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "mine.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    found = find_config(explicit=Path("conf/mine.toml"), environ={})
    assert found == ConfigSource(path=tmp_path / "conf" / "mine.toml", reason="--config")


@pytest.mark.parametrize("how", ["--config", "KEEP_CONFIG"])
def test_a_named_file_that_does_not_exist_is_one_message(tmp_path: Path, how: str) -> None:
    missing = tmp_path / "nope.toml"
    explicit = missing if how == "--config" else None
    environ = {"KEEP_CONFIG": str(missing)} if how == "KEEP_CONFIG" else {}
    with pytest.raises(ConfigurationError, match=f"{how} names {missing}, which is not a file"):
        find_config(explicit=explicit, environ=environ, cwd=tmp_path)


def test_the_loaded_configuration_carries_where_it_came_from(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text('[policy]\nmutate_reads = "by_id"\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    config = load_config(find_config(environ={}, cwd=sub), types=TYPES, environ={})
    assert config.path == tmp_path / CONFIG_NAME
    assert config.source is not None
    assert config.source.reason == "parent folder"
    assert config.source.looked == (sub / CONFIG_NAME, tmp_path / "a" / CONFIG_NAME)
    assert config.policy.mutate_reads == "by_id"

    none = find_config(environ={}, cwd=Path("/"), store_dir=tmp_path / "store")
    assert none.path is None
    assert none.looked[-1] == tmp_path / "store" / CONFIG_NAME
    config = load_config(none, types=TYPES, environ={})
    assert config.path is None
    assert config.source == none

    given_path = load_config(tmp_path / CONFIG_NAME, types=TYPES, environ={})
    assert given_path.source == ConfigSource(path=tmp_path / CONFIG_NAME, reason="given")
