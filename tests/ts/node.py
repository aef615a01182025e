"""Running a script of runtime-ts/test/interop/ over the shared vectors on the TypeScript
runtime (with vite-node, a dev tool of the package: no build step), for the interop tests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runtime-ts"
VECTORS = sorted((PACKAGE / "test" / "vectors").glob("*.vectors.json"))
RUNNER = PACKAGE / "node_modules" / ".bin" / "vite-node"


def interop_lines(script: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The JSON lines `runtime-ts/test/interop/SCRIPT` prints for every vectors file, by
    (file name, vector name)."""
    return {(item["file"], item["vector"]): item for item in run_script(script, VECTORS)}


def run_script(script: str, args: list[Path]) -> list[dict[str, Any]]:
    """The JSON lines `runtime-ts/test/interop/SCRIPT ARGS...` prints."""
    if shutil.which("node") is None or not RUNNER.exists():
        pytest.fail("node and runtime-ts/node_modules are needed: run `npm ci` in runtime-ts/")
    done = subprocess.run(
        [str(RUNNER), str(PACKAGE / "test" / "interop" / script), *map(str, args)],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
