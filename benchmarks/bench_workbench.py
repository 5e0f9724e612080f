"""Benchmark Workbench on a store of 100,000 traces (issue 20, "Scale").

    python benchmarks/bench_workbench.py [--cases N] [--store PATH] [--rounds R] [-j J]
                                         [--json OUT]

1. Builds the store (or reuses ``--store PATH`` when it already holds ``N`` cases): ``N``
   questions made from the shipped sample's by writing other numbers into them, so every
   question is distinct and so is every trace; answered directly, through practice and refused
   in the sample's proportions. The cases are run by ``run_lines`` (what ``practice-loop run``
   does) in ``J`` processes, each into a store of its own, and the shards are then copied into
   one store with SQL.
2. Starts ``practice-loop workbench --store PATH --port 0`` in a process of its own and times
   its start-up: from launch to the line that gives the address, and to the first list page
   answered.
3. Times, over HTTP, ``R`` requests of each kind after one warm-up request of each: the first
   list page; one list page per request spread over the whole store (each new to the server,
   so every row on it is verified then: the cold case); a page deep in the list; an outcome
   filter; a refusal-reason filter; a search; one trace page. The median and the slowest are
   reported for each, with the mean CPU time the server spent on one (from ``/proc``: what
   other jobs on a shared machine do to the wall times does not move it much), and the load
   average before and after.
4. Reads the server's peak resident memory (``VmHWM`` in ``/proc``) before stopping it.

Targets (issue 20, on 2 cores): list and trace page medians under 200 ms, start-up under 10 s,
peak memory under 500 MB. Figures are reported against them, never asserted: the machines
here are shared and noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from practice_loop.product.runner import run_lines
from practice_loop.product.store import ReadOnlyTraceStore, TraceStore

_NUMBER = re.compile(r"\d+(?:,\d{3})*")
TARGET_PAGE_MS = 200.0
TARGET_START_S = 10.0
TARGET_PEAK_MB = 500.0


def _templates() -> list[tuple[str, str | None]]:
    """The sample's questions that hold a number, each with the operation its gold answer
    shows (``+`` or ``-`` of the first two numbers), or ``None`` where it shows neither."""
    sample = resources.files("practice_loop").joinpath("data/sample.jsonl").read_text()
    found = []
    for line in sample.splitlines():
        record = json.loads(line)
        numbers = [int(n.replace(",", "")) for n in _NUMBER.findall(record["question"])]
        if not numbers:
            continue  # numbers in words only: every copy would be the same question
        gold = int(record["answer"].rsplit("####", 1)[1].strip().replace(",", "").split(".")[0])
        operation = None
        if len(numbers) >= 2 and gold == numbers[0] + numbers[1]:
            operation = "+"
        elif len(numbers) >= 2 and gold == numbers[0] - numbers[1]:
            operation = "-"
        found.append((record["question"], operation))
    return found


def question_lines(count: int) -> list[bytes]:
    """``count`` JSON lines, each a distinct question: template ``i % T`` with its first
    number ``100 + i // T`` (distinct for each copy) and the others small; a gold answer
    where the template's own gold is the sum or difference of its first two numbers."""
    templates = _templates()
    lines = []
    for index in range(count):
        question, operation = templates[index % len(templates)]
        copy = index // len(templates)
        numbers: list[int] = []

        def renumber(match: re.Match[str], numbers: list[int] = numbers, copy: int = copy) -> str:
            value = 100 + copy if not numbers else 1 + (copy * 7 + len(numbers)) % 89
            numbers.append(value)
            return str(value)

        text = _NUMBER.sub(renumber, question)
        record: dict[str, object] = {"id": f"bench-{index:06d}", "question": text}
        if operation is not None:
            gold = numbers[0] + numbers[1] if operation == "+" else numbers[0] - numbers[1]
            record["answer"] = f"#### {gold}"
        lines.append(json.dumps(record).encode() + b"\n")
    return lines


def _run_shard(job: tuple[Path, list[bytes]]) -> int:
    path, lines = job
    with TraceStore(path) as store:
        summary = run_lines(lines, source="bench_workbench", store=store)
    if summary.skipped or summary.interrupted or summary.stopped:
        raise RuntimeError(f"shard {path}: {summary.to_json()}")
    return summary.cases


def build_store(path: Path, count: int, jobs: int) -> float:
    """Write ``count`` cases into a new store at ``path``; the seconds it took."""
    started = time.perf_counter()
    lines = question_lines(count)
    with tempfile.TemporaryDirectory(dir=path.parent) as folder:
        shards = [Path(folder) / f"shard-{n}.sqlite" for n in range(jobs)]
        work = [(shard, lines[n::jobs]) for n, shard in enumerate(shards)]
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            done = sum(pool.map(_run_shard, work))
        assert done == count, (done, count)
        TraceStore(path).close()  # the store, created as ``run`` creates it
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            for n, shard in enumerate(shards):
                db.execute(f"ATTACH DATABASE ? AS shard{n}", (str(shard),))
                db.execute(f"INSERT OR IGNORE INTO traces SELECT * FROM shard{n}.traces")
                db.execute(f"INSERT INTO cases SELECT * FROM shard{n}.cases")
            db.execute("COMMIT")
            for n in range(len(shards)):
                db.execute(f"DETACH DATABASE shard{n}")
    return time.perf_counter() - started


def _store_holds(path: Path, count: int) -> bool:
    if not path.exists():
        return False
    with ReadOnlyTraceStore(path) as store:
        return store.count("cases") == count and store.count("traces") == count


def _get(port: int, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _timed_get(port: int, path: str) -> float:
    started = time.perf_counter()
    status, body = _get(port, path)
    elapsed = time.perf_counter() - started
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
    return elapsed * 1000


def _cpu_s(pid: int) -> float:
    """The CPU seconds (user and system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    kilobytes = int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE).group(1))
    return kilobytes / 1024


def _first_trace(port: int) -> str:
    _, body = _get(port, "/?outcome=answered_practice")
    return re.search(rb'href="/trace/([0-9a-f]{64})"', body).group(1).decode()


def measure(path: Path, rounds: int) -> dict[str, object]:
    command = [sys.executable, "-u", "-m", "practice_loop", "workbench", "--store", str(path)]
    command += ["--port", "0", "--quiet"]
    started = time.perf_counter()
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        ready_s = time.perf_counter() - started
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))
        _timed_get(port, "/")
        first_page_s = time.perf_counter() - started
        _, body = _get(port, "/")
        pages = int(re.search(rb'data-pages="(\d+)"', body).group(1))
        trace_id = _first_trace(port)
        kinds = {
            "list, first page": lambda n: "/",
            "list, a new page each time (cold)": lambda n: f"/?page={1 + (n * 97) % pages}",
            "list, last page": lambda n: f"/?page={pages}",
            "list, outcome filter": lambda n: "/?outcome=answered_practice&page=3",
            "list, reason filter": lambda n: (
                "/?outcome=refused&reason=original_refusal_stands%3Aproposal_missing"
            ),
            "list, search": lambda n: "/?q=marbles",
            "trace page": lambda n: f"/trace/{trace_id}",
        }
        timings, cpu = {}, {}
        for name, url in kinds.items():
            _timed_get(port, url(rounds))  # warm-up
            before = _cpu_s(server.pid)
            timings[name] = [_timed_get(port, url(n)) for n in range(rounds)]
            cpu[name] = (_cpu_s(server.pid) - before) * 1000 / rounds
        peak = _peak_mb(server.pid)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()
    return {
        "ready_s": round(ready_s, 3),
        "first_page_s": round(first_page_s, 3),
        "peak_mb": round(peak, 1),
        "pages_ms": {
            name: {
                "median": round(statistics.median(values), 1),
                "max": round(max(values), 1),
                "server_cpu_mean": round(cpu[name], 1),
            }
            for name, values in timings.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=None, help="build here, or reuse")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    with contextlib.ExitStack() as cleanup:
        if args.store is None:
            folder = Path(cleanup.enter_context(tempfile.TemporaryDirectory()))
            args.store = folder / "bench-workbench.sqlite"
        if _store_holds(args.store, args.cases):
            print(f"store: {args.store} (reused, {args.cases} cases and traces)")
            built_s = None
        else:
            if args.store.exists():
                parser.error(f"{args.store} exists and does not hold {args.cases} cases")
            built_s = round(build_store(args.store, args.cases, args.jobs), 1)
            print(f"store: {args.store} ({args.cases} cases and traces, built in {built_s:.0f} s)")
        size_mb = args.store.stat().st_size / 2**20
        load_before = os.getloadavg()[0]
        report = measure(args.store, args.rounds)
        load_after = os.getloadavg()[0]
    report = {
        "cases": args.cases,
        "store_mb": round(size_mb, 1),
        "built_s": built_s,
        "load_average": [round(load_before, 2), round(load_after, 2)],
        **report,
    }
    print(
        f"store size: {size_mb:.0f} MB; cores: {os.cpu_count()}; load average (1 min) "
        f"{load_before:.1f} before the measurements, {load_after:.1f} after"
    )
    print(
        f"start-up: {report['ready_s']:.2f} s to listening, {report['first_page_s']:.2f} s to "
        f"the first list page (target under {TARGET_START_S:g} s)"
    )
    heading = f"request ({args.rounds} after one warm-up)"
    print(f"{heading:<40} {'median ms':>9} {'max ms':>7} {'server CPU ms, mean':>20}")
    for name, figures in report["pages_ms"].items():
        print(
            f"{name:<40} {figures['median']:>9.1f} {figures['max']:>7.1f} "
            f"{figures['server_cpu_mean']:>20.1f}"
        )
    print(f"target: list and trace page medians under {TARGET_PAGE_MS:g} ms")
    print(
        f"peak resident memory of the server: {report['peak_mb']:.0f} MB "
        f"(target under {TARGET_PEAK_MB:g} MB)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
