"""Fixtures of the inspector, fork and replay tests: the store fixtures of tests/store (one
SQLite file, or a fresh PostgreSQL schema) and the ticket flow.

This folder cannot be a package: its name would shadow the standard library's `inspect`. So
pytest puts this folder, not tests/, on the import path, and tests/ is added here to reach
tests/store's fixtures (reused, not copied)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowc.runtime import FakeClock, Machine

sys.path.insert(0, str(Path(__file__).parents[1]))

from inspect_flows import TICKET
from store.conftest import postgres_url, shared_store_url, sqlite_url

__all__ = ["postgres_url", "shared_store_url", "sqlite_url"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ticket(clock: FakeClock) -> Machine:
    return Machine.from_file(TICKET, clock=clock)
