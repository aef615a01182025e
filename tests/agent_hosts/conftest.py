"""PostgreSQL for the agent-host tests: the store tests' fixture (a fresh schema per test on
FLOWC_TEST_POSTGRES_URL, which ./test.sh provides)."""

from store.conftest import postgres_url

__all__ = ["postgres_url"]
