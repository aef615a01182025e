"""The TypeScript runtime (runtime-ts/), built once for the tests that run it under Node.

`built()` compiles the package with its own TypeScript compiler into runtime-ts/.test-build/
(ignored by git), under a file lock: pytest-xdist's workers share the one build, and a build
newer than every source file is used as it is. `npm ci` runs first where node_modules is
missing (./test.sh has already run it; a lone `pytest tests/ts` may not have)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runtime-ts"
BUILD = PACKAGE / ".test-build"
STAMP = BUILD / ".built"


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not installed: run ./setup.sh (it installs nodejs and npm)")
    return found


def _newest_source() -> float:
    sources = [*(PACKAGE / "src").rglob("*.ts"), PACKAGE / "package.json"]
    sources.append(PACKAGE / "tsconfig.json")
    return max(p.stat().st_mtime for p in sources)


def built() -> Path:
    """The folder holding the compiled package (its `cli.js`, `index.js`, ...)."""
    node()
    BUILD.mkdir(exist_ok=True)
    with (BUILD.parent / ".test-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if STAMP.exists() and STAMP.stat().st_mtime >= _newest_source():
            return BUILD
        if not (PACKAGE / "node_modules" / ".bin" / "tsc").exists():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True)
        tsc = [str(PACKAGE / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.build.json"]
        tsc += ["--outDir", str(BUILD), "--sourceMap", "false"]
        subprocess.run(tsc, cwd=PACKAGE, check=True)
        STAMP.touch()
    return BUILD
