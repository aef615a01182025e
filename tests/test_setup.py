"""What a new user meets first: setup.sh's output, and the files the README's commands leave."""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).parents[1]

#: Options of the README's commands that name a file they write.
OUTPUT_OPTIONS = {"-o", "--out-dir", ">"}
#: The files SQLite writes beside a database while it is open.
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def readme_use_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def written_paths(command: list[str]) -> list[str]:
    paths = [after for before, after in itertools.pairwise(command) if before in OUTPUT_OPTIONS]
    for word in command:
        found = re.fullmatch(r"sqlite:///(.+)", word)
        if found:
            paths += [found.group(1), *(found.group(1) + side for side in SQLITE_SIDE_FILES)]
    return paths


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_every_file_the_readme_commands_write_is_ignored_or_tracked() -> None:
    paths = sorted({p for command in readme_use_commands() for p in written_paths(command)})
    assert {"flowc.db", "flowc.sarif", "attempt.json", "attempt.svg", "door_lock.flow"} <= set(
        paths
    )
    for path in paths:
        tracked = git("ls-files", "--error-unmatch", path).returncode == 0  # docs/flows: kept
        ignored = git("check-ignore", "--no-index", "-q", path).returncode == 0
        assert tracked or ignored, f"{path}: the README writes it and git would offer to add it"


def run_quietly(*command: str) -> subprocess.CompletedProcess[str]:
    """setup.sh's `quietly` function, on its own."""
    script = (ROOT / "setup.sh").read_text(encoding="utf-8")
    function = re.search(r"^quietly\(\) \{\n.*?^\}\n", script, re.MULTILINE | re.DOTALL)
    assert function is not None, "setup.sh defines quietly()"
    return subprocess.run(
        ["bash", "-c", f'set -euo pipefail\n{function.group(0)}quietly "$@"', "bash", *command],
        capture_output=True,
        text=True,
    )


def test_setup_keeps_a_step_quiet_when_it_succeeds() -> None:
    done = run_quietly("a step", "bash", "-c", "echo 'WARNING: Location x is ignored' >&2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_setup_shows_a_failing_steps_whole_log_and_its_status() -> None:
    done = run_quietly(
        "pip install", "bash", "-c", "echo resolving; echo 'no such package' >&2; exit 3"
    )
    assert done.returncode == 3
    assert done.stdout == ""
    assert (
        done.stderr
        == "setup: pip install failed (exit 3); its output:\nresolving\nno such package\n"
    )


def test_setup_runs_apt_and_pip_through_quietly() -> None:
    script = (ROOT / "setup.sh").read_text(encoding="utf-8")
    lines = script.splitlines()
    for previous, line in itertools.pairwise(lines):
        if re.search(r"\b(apt-get|pip) (install|update)", line) and "quietly" not in line:
            assert previous.endswith("\\") and "quietly" in previous, line
    # sudo resets the environment: the frontend must be set inside it, or debconf talks.
    assert "env DEBIAN_FRONTEND=noninteractive apt-get" in script


def test_setup_installs_node_and_npm_when_missing(tmp_path: Path) -> None:
    """The lines of setup.sh that look for Node.js and npm ask Debian for both when neither is
    on the PATH, and for nothing when both are."""
    script = (ROOT / "setup.sh").read_text(encoding="utf-8")
    checks = [line for line in script.splitlines() if re.match(r"command -v (node|npm)\b", line)]
    assert len(checks) == 2
    for name in ("node", "npm"):
        (tmp_path / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (tmp_path / name).chmod(0o755)
    program = "missing=()\n" + "\n".join(checks) + '\necho "${missing[@]}"'
    bash = shutil.which("bash") or "/bin/bash"
    for path, expected in ((str(tmp_path / "none"), "nodejs npm"), (str(tmp_path), "")):
        done = subprocess.run(
            [bash, "-c", program], capture_output=True, text=True, env={"PATH": path}
        )
        assert done.stdout.strip() == expected


def test_setup_installs_and_test_runs_the_typescript_checks() -> None:
    setup = (ROOT / "setup.sh").read_text(encoding="utf-8")
    assert 'quietly "npm ci" npm --prefix runtime-ts ci' in setup
    test = (ROOT / "test.sh").read_text(encoding="utf-8")
    assert "npm --prefix runtime-ts run --silent check" in test
