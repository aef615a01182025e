"""Fixtures of the inspector, fork and replay tests: the store fixtures of tests/store (one
SQLite file, or a fresh PostgreSQL schema; reused, not copied) and the ticket flow."""

from __future__ import annotations

import pytest
from store.conftest import postgres_url, shared_store_url, sqlite_url

from flowc.runtime import FakeClock, Machine
from inspector.flows import TICKET

__all__ = ["postgres_url", "shared_store_url", "sqlite_url"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ticket(clock: FakeClock) -> Machine:
    return Machine.from_file(TICKET, clock=clock)
