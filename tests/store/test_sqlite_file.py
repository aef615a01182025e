"""The SQLite store on a real file: durability settings, readers behind a writer, and files
that are not (or no longer) a database."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.runtime.store import open_store
from flowc.runtime.store.sqlite import SQLiteStore


def synchronous_of(store: object) -> int:
    assert isinstance(store, SQLiteStore)
    row = store._conn().execute("PRAGMA synchronous").fetchone()
    return int(row[0])


def test_every_commit_is_synced_by_default(tmp_path: Path) -> None:
    # SQLite's codes: 1 NORMAL, 2 FULL.
    store = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    assert synchronous_of(store) == 2
    store.close()
    assert synchronous_of(SQLiteStore(tmp_path / "b.db")) == 2


@pytest.mark.parametrize("given", ["normal", "NORMAL", "Normal"])
def test_normal_is_an_option(tmp_path: Path, given: str) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'a.db'}?synchronous={given}")
    assert synchronous_of(store) == 1
    store.close()
