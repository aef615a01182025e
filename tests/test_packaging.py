"""The wheel carries every package and data file: an editable install would hide omissions."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
MAPPING = {"compiler": "flowc.compiler", "runtime": "flowc.runtime", "grammar": "flowc.grammar"}


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for folder, name in MAPPING.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([name, *parts]))
    assert found == listed


def test_built_wheel_contains_the_packages_and_the_grammar(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("flowc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "flowc/grammar/flow.lark",
        "flowc/compiler/lint/__init__.py",
        "flowc/compiler/emit/__init__.py",
        "flowc/compiler/commands/check.py",
        "flowc/runtime/model.py",
        "flowc/runtime/store/__init__.py",
    ):
        assert required in names, required
    assert any(n.startswith("flowc/compiler/templates/") for n in names)
