"""Store URLs, and the promise that psycopg is imported only for PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flowc.runtime.store import MemoryStore, StoreURLError, open_store
from flowc.runtime.store.sqlite import SQLiteStore


def test_sqlite_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    relative = open_store("sqlite:///rel.db")
    assert isinstance(relative, SQLiteStore) and relative.path == "rel.db"
    relative.close()
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db?busy_timeout=50&synchronous=full")
    assert isinstance(absolute, SQLiteStore) and absolute.path == f"{tmp_path}/abs.db"
    absolute.close()
    plain = open_store(str(tmp_path / "plain.db"))
    assert isinstance(plain, SQLiteStore)
    plain.close()
    assert {p.name for p in tmp_path.iterdir()} >= {"rel.db", "abs.db", "plain.db"}


@pytest.mark.parametrize(
    "url",
    [
        "",
        "mysql://x/y",
        "sqlite://host/x.db",
        "sqlite:///",
        "sqlite:///x.db?busy_timeout=soon",
        "sqlite:///x.db?nosuch=1",
        "sqlite:///x.db?synchronous=sometimes",
    ],
)
def test_bad_urls(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises((StoreURLError, ValueError)):
        open_store(url)


def test_named_memory_stores_are_shared() -> None:
    a, b, c = open_store("memory://one"), open_store("memory://one"), open_store("memory:")
    assert a is b and a is not c and isinstance(c, MemoryStore)


def test_psycopg_is_imported_only_for_postgresql(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from flowc.runtime.store import open_store\n"
        "import flowc.runtime.store.durable\n"
        f"open_store('sqlite:///{tmp_path}/x.db').close()\n"
        "assert 'psycopg' not in sys.modules and 'psycopg_pool' not in sys.modules\n"
        "assert 'lark' not in sys.modules and 'networkx' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
