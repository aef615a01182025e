"""The wheel carries every package and data file: an editable install would hide omissions."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
#: Each source folder and the package it installs as: src/flowc/ links to each top-level
#: package folder (compiler/, runtime/, hosts/, grammar/).
MAPPING = {
    link.resolve().name: f"flowc.{link.name}"
    for link in sorted((ROOT / "src" / "flowc").iterdir())
    if link.is_symlink()
}


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for folder, name in MAPPING.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([name, *parts]))
    assert found <= listed


def test_every_folder_with_files_is_a_listed_package() -> None:
    """A folder of data files (templates) that is not listed makes setuptools warn at install."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    for folder, name in MAPPING.items():
        for directory in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if not directory.is_dir() or directory.name == "__pycache__":
                continue
            if any(f.is_file() for f in directory.iterdir()):
                parts = directory.relative_to(ROOT / folder).parts
                assert ".".join([name, *parts]) in listed, directory


def test_an_editable_build_is_quiet_and_adds_only_src_to_the_path(tmp_path: Path) -> None:
    """What `pip install -e .` asks setuptools for, with every warning shown: setuptools warns
    ("BuildBackendWarning: Editable installation") for any layout but a plain src one."""
    build = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            "import sys, setuptools.build_meta as b; b.build_editable(sys.argv[1])",
            str(tmp_path),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    assert re.findall(r"\b\w+Warning\b.*", build.stdout + build.stderr) == []
    (wheel,) = tmp_path.glob("flowc-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (pth,) = [n for n in archive.namelist() if n.endswith(".pth")]
        assert archive.read(pth).decode().split() == [str((ROOT / "src").resolve())]


def test_built_wheel_contains_the_packages_and_the_grammar(tmp_path: Path) -> None:
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-v",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    # A new user's install must be quiet: no BuildBackendWarning, SetuptoolsDeprecationWarning...
    warnings = re.findall(r"\b\w+Warning: .*", build.stdout + build.stderr)
    assert warnings == []
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


def test_src_links_every_top_level_package() -> None:
    """A package folder without its link in src/flowc/ would be left out of every install."""
    assert MAPPING == {
        "compiler": "flowc.compiler",
        "runtime": "flowc.runtime",
        "hosts": "flowc.hosts",
        "grammar": "flowc.grammar",
    }
