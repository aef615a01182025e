"""Authoring speed: what an editor and a CI check wait for.

    python bench/authoring.py [--edit-states 1000] [--check-states 10000] [--repeat 5]

1. The language server (`flowc lsp`, the real process over stdio): a file of --edit-states
   states is opened, then one line of it is edited again and again (a rule's target changed
   back and forth); the time from sending `didChange` to receiving its diagnostics is reported
   (median and worst of --repeat edits). Target: within 300 ms for 1,000 states.
2. `flowc check` on a file of --check-states states, as a user runs it (a fresh process:
   interpreter start, imports, compile, lint, output). Target: under 2 s for 10,000 states.
   Reported as wall time and as CPU time (user + system, of the process and of the child it
   forks to type-check a large file beside lowering and lint), median and best of --repeat
   runs, with the load average: on a shared machine the wall time also counts waiting for a
   core. Then the same run held to one core (where available: no child is forked there, as on
   a one-core machine), and the same compile in-process, split by stage (wall and CPU), with the
   parse's speed in tokens per second and the start-up cost (interpreter and the imports
   `flowc check` needs) on its own. flowc's bytecode is compiled first (`compileall`), as an
   installed flowc has it: where PYTHONDONTWRITEBYTECODE is set, every run would otherwise
   compile flowc's modules from source again (a tenth of a second).

The flows are bench/compile.py's generator: a ring of stages with three guarded transitions
each, typed events and a context.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).parent))
from compile import generate, stage_times


class Server:
    """Just enough of an LSP client to time diagnostics."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flowc.compiler.cli", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        stream: IO[bytes] | None = self.proc.stdout
        assert stream is not None
        length = 0
        while True:
            line = stream.readline().strip()
            if not line:
                if length:
                    break
                if stream.closed:
                    raise EOFError
                continue
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message: dict[str, Any] = json.loads(stream.read(length))
        return message

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id and "method" not in message:
                return message.get("result")

    def diagnostics(self, version: int) -> list[Any]:
        while True:
            message = self.receive()
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                if params.get("version") == version:
                    return list(params["diagnostics"])

    def close(self) -> None:
        self.request("shutdown", None)
        self.send({"method": "exit"})
        self.proc.wait(timeout=30)


def edit_latency(states: int, repeat: int) -> dict[str, float]:
    text = generate(states)
    uri = Path(tempfile.gettempdir(), f"bench_{states}.flow").as_uri()
    # The line to edit: the retry rule of a state in the middle of the file.
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith(f"state S{states // 2} "))
    row += 4
    assert "on retry" in lines[row], lines[row]
    server = Server()
    try:
        server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        server.send({"method": "initialized", "params": {}})
        started = time.perf_counter()
        server.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "flow", "version": 1, "text": text}
                },
            }
        )
        assert server.diagnostics(1) == []
        opened = time.perf_counter() - started
        times = []
        for version in range(2, repeat + 2):
            edited = list(lines)
            target = "S0" if version % 2 else f"S{states // 2 - 2}"
            edited[row] = edited[row].rsplit("->", 1)[0] + f"-> {target} do attempts += 1"
            change = {"textDocument": {"uri": uri, "version": version}}
            change["contentChanges"] = [{"text": "\n".join(edited)}]  # type: ignore[assignment]
            started = time.perf_counter()
            server.send({"method": "textDocument/didChange", "params": change})
            server.diagnostics(version)
            times.append(time.perf_counter() - started)
    finally:
        server.close()
    # What one edit would cost without the server's shortcuts (a full compile, hashed).
    from flowc.compiler import compile_source

    full = []
    for _ in range(repeat):
        started = time.perf_counter()
        compile_source(text, "bench.flow")
        full.append(time.perf_counter() - started)
    return {
        "open": opened,
        "median": statistics.median(times),
        "worst": max(times),
        "full": statistics.median(full),
    }


def timed_process(command: list[str], cores: set[int] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `command` (on `cores` only, if given); the CPU time is
    the user + system time of it and its children."""

    def pin() -> None:
        if cores is not None:
            os.sched_setaffinity(0, cores)

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=pin)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stdout + done.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def check_time(states: int, repeat: int) -> dict[str, Any]:
    import flowc.compiler
    import flowc.runtime

    for package in (flowc.compiler, flowc.runtime):
        for folder in package.__path__:
            compileall.compile_dir(folder, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, f"bench_{states}.flow")
        source = generate(states)
        path.write_text(source, encoding="utf-8")
        command = [sys.executable, "-m", "flowc.compiler.cli", "check", str(path)]
        runs = [timed_process(command) for _ in range(repeat)]
        one_core = (
            [timed_process(command, cores={min(os.sched_getaffinity(0))}) for _ in range(repeat)]
            if hasattr(os, "sched_setaffinity")
            else []
        )
    imports = "import flowc.compiler.commands.check, flowc.compiler.lint"
    startup = min(
        (timed_process([sys.executable, "-c", imports]) for _ in range(3)),
        key=lambda run: run[1],
    )
    from flowc.compiler.fastparse import parse_module, token_count

    return {
        "wall": statistics.median(wall for wall, _ in runs),
        "cpu": statistics.median(cpu for _, cpu in runs),
        "best_wall": min(wall for wall, _ in runs),
        "best_cpu": min(cpu for _, cpu in runs),
        "runs": len(runs),
        "one_core_wall": statistics.median(wall for wall, _ in one_core) if one_core else None,
        "load": os.getloadavg()[0],
        "startup_wall": startup[0],
        "startup_cpu": startup[1],
        "tokens": token_count(source),
        "fast_path": parse_module(source) is not None,
        "stages": stage_times(source),
        "stages_cpu": stage_times(source, cpu=True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edit-states", type=int, default=1_000)
    parser.add_argument("--check-states", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from flowc.compiler.parse import flow_parser

    flow_parser()
    edit = edit_latency(args.edit_states, args.repeat)
    print(
        f"lsp, {args.edit_states} states: open {edit['open'] * 1000:.0f} ms; diagnostics after a "
        f"one-line edit: median {edit['median'] * 1000:.0f} ms, worst {edit['worst'] * 1000:.0f} "
        f"ms (target 300 ms); a full in-process compile: {edit['full'] * 1000:.0f} ms",
        flush=True,
    )
    check = check_time(args.check_states, args.repeat)
    wall, cpu = check["stages"], check["stages_cpu"]
    stages = ", ".join(
        f"{k} {wall[k]:.2f}/{cpu[k]:.2f}" for k in ("parse", "check", "lower", "lint")
    )
    print(
        f"flowc check, {args.check_states} states, median of {check['runs']}: "
        f"{check['wall']:.2f} s wall, {check['cpu']:.2f} s CPU (target 2 s); best "
        f"{check['best_wall']:.2f} s wall, {check['best_cpu']:.2f} s CPU; load average "
        f"{check['load']:.1f}; start-up (interpreter and imports) "
        f"{check['startup_wall']:.2f} s wall, {check['startup_cpu']:.2f} s CPU"
    )
    if check["one_core_wall"] is not None:
        print(
            f"  held to one core (no forked type check), median: {check['one_core_wall']:.2f} "
            "s wall"
        )
    print(
        f"  in-process compile {wall['total']:.2f} s wall, {cpu['total']:.2f} s CPU; "
        f"stage wall/CPU: {stages}; (content hash, not run by check: {cpu['hash']:.2f} s CPU)"
    )
    print(
        f"  parse: {check['tokens']:,} tokens, {check['tokens'] / cpu['parse']:,.0f} tokens/s "
        f"CPU ({'fast path' if check['fast_path'] else 'Lark'})"
    )


if __name__ == "__main__":
    main()
