"""Options the host commands share (`--store`, `--flow`, `--journal`)."""

from __future__ import annotations

import argparse

from flowc.hosts.operations import DEFAULT_STORE


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///PATH (three slashes before a relative path, four before an absolute "
        "one), postgresql://USER@HOST:PORT/DB or memory: "
        f"(default: $FLOWC_STORE, else {DEFAULT_STORE})",
    )


def add_flow_option(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--flow",
        metavar="PATH",
        action="append",
        default=[],
        required=required,
        help="a .flow or compiled .json file, or a directory of them; repeat for several "
        "flows or versions"
        + ("" if required else " (default: the graph the store keeps for the instance)"),
    )


def add_journal_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--journal",
        metavar="NAME=FILE",
        action="append",
        default=[],
        help=f"append journal NAME of {what} to FILE (each step once, also across runs and "
        "replays); repeat for several journals",
    )


def add_step_options(parser: argparse.ArgumentParser) -> None:
    """`--key` and `--reason` of a command that takes one step, and its `--journal`."""
    parser.add_argument(
        "--key", metavar="KEY", help="idempotency key: resending it changes nothing"
    )
    parser.add_argument("--reason", metavar="TEXT", help="recorded in the history")
    add_journal_option(parser, "the step")


def add_child_option(parser: argparse.ArgumentParser) -> None:
    """`--child PATH`: the step goes to a child flow of the instance (hosts/tree.py)."""
    parser.add_argument(
        "--child",
        metavar="PATH",
        help="to the instance's child flow at PATH: child ids from the instance, `/` between "
        "levels (`pay.1`); an invoke's id names its current child (`pay`), `ID[K]` the K-th "
        "of a fan-out (`reviews[0]/fraud`); none there: refused (`unknown_child`)",
    )
