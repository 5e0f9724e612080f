"""The adaptive search of ``practice-loop fuzz`` (issue 19): long-lived workers, one per core.

The campaign starts ``fuzz_worker`` processes that collect the Hypothesis tests once and
share them out (every N-th test to worker K); each spends its time where its tests still
find new behaviour (``fuzz_worker``'s docstring). This module runs them to the end of the
search, reads their records while they run (the live table), restarts a worker whose
process a test hung or crashed (without that test, which is reported as such), and sums
up what happened: per property examples, time, discoveries and findings, the coverage and
examples over time, every worker's seed. The campaign then hands the tests that failed,
hung or crashed, and those the workers cannot run (they take fixtures), to one pytest round
that replays each failure from the example database and shrinks it once, as the reports
and regressions want (``fuzz.py``).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

POLL_SECONDS = 0.25
SAMPLE_SECONDS = 1.0
RECENT_SECONDS = 60.0  # "new behaviour in the last minute"
STOP_GRACE_SECONDS = 3.0
MIN_RESTART_SECONDS = 2.0  # a worker lost with less left is not restarted
WORKER_MODULE = "practice_loop.harness.fuzz_worker"


class WorkerRefused(ValueError):
    """A worker refused the selection or the profile (the campaign's usage error)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PropertyStats:
    nodeid: str
    worker: int
    examples: int
    valid: int
    seconds: float
    discoveries: int
    recent_discoveries: int  # in the last minute of the search
    last_discovery: float | None  # seconds after the search started
    findings: int

    def to_json(self) -> dict[str, Any]:
        rate = self.examples / self.seconds if self.seconds > 0 else None
        return {
            "nodeid": self.nodeid,
            "worker": self.worker,
            "examples": self.examples,
            "valid": self.valid,
            "seconds": round(self.seconds, 3),
            "examples_per_second": round(rate, 1) if rate is not None else None,
            "discoveries": self.discoveries,
            "recent_discoveries": self.recent_discoveries,
            "last_discovery": self.last_discovery,
            "findings": self.findings,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class AdaptiveFinding:
    """A failure a worker saw: its origin, the error, and how it was found: the fuzz input
    that raised it, or Hypothesis's own generation (its example is then in the database
    under the test's key, with no input of the worker's)."""

    nodeid: str
    origin: str
    error: str
    input_hex: str
    how: str  # "fuzz_one_input", "generated", or "database" (a known one, replayed)
    seconds: float  # after the search started
    known: bool  # replayed from an earlier campaign's record
    worker: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerLoss:
    """A test that ended its worker's process: hung (past the timeout) or crashed."""

    nodeid: str
    outcome: str  # "hung" or "crashed", as fuzz_report.RunOutcome names them
    detail: str
    stacks: str
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "outcome": self.outcome,
            "detail": self.detail,
            "stacks": self.stacks,
            "seconds": round(self.seconds, 3),
        }


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerSummary:
    index: int
    seeds: tuple[int, ...]  # one per process: the first, then each restart's
    records: tuple[str, ...]
    interrupted: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "seeds": list(self.seeds),
            "records": list(self.records),
            "interrupted": self.interrupted,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class AdaptiveSummary:
    seconds: float
    workers: tuple[WorkerSummary, ...]
    properties: tuple[PropertyStats, ...]
    findings: tuple[AdaptiveFinding, ...]
    losses: tuple[WorkerLoss, ...]
    unfuzzable: tuple[tuple[str, str], ...]
    # (seconds after the search started, arcs summed over the workers, examples in all)
    timeline: tuple[tuple[float, int, int], ...]
    faults: tuple[tuple[str, str], ...]  # (a fuzz_report.Fault value, the detail)
    interrupted: bool  # Ctrl-C stopped the search
    collected: tuple[str, ...]  # every property some worker collected
    # the longest a worker took from its start to its first property: what the confirmation
    # round's reserve pays for each worker it will lose again
    worker_start_seconds: float

    @property
    def examples(self) -> int:
        return sum(p.examples for p in self.properties)

    @property
    def to_confirm(self) -> tuple[str, ...]:
        """The tests the confirmation round runs under pytest, in node id order."""
        nodeids = {f.nodeid for f in self.findings} | {loss.nodeid for loss in self.losses}
        nodeids |= {nodeid for nodeid, _ in self.unfuzzable}
        return tuple(sorted(nodeids))

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "examples": self.examples,
            "workers": [w.to_json() for w in self.workers],
            "properties": [p.to_json() for p in self.properties],
            "findings": [f.to_json() for f in self.findings],
            "losses": [loss.to_json() for loss in self.losses],
            "unfuzzable": [{"nodeid": n, "why": why} for n, why in self.unfuzzable],
            "timeline": [list(point) for point in self.timeline],
            "faults": [{"fault": kind, "detail": detail} for kind, detail in self.faults],
            "interrupted": self.interrupted,
            "collected": len(self.collected),
            "worker_start_seconds": round(self.worker_start_seconds, 3),
        }


# -- reading a worker's record ---------------------------------------------------------------


class _Tail:
    """The complete lines a running process has appended to its record so far."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def lines(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        found = []
        for line in complete:
            try:
                found.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a killed process: nothing in it is relied on
        return found


@dataclasses.dataclass
class _Process:
    index: int
    seed: int
    record: Path
    hang: Path
    log: Path
    popen: subprocess.Popen[bytes]
    tail: _Tail
    spawned: float  # monotonic, when its process started
    running: str | None = None  # the property of the last slice
    ended: bool = False  # its `end` line was read
    refused: str | None = None
    internal_error: str | None = None


@dataclasses.dataclass
class _Live:
    """What the controller knows while the search runs."""

    started: float
    properties: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    owner: dict[str, int] = dataclasses.field(default_factory=dict)
    history: dict[str, collections.deque[tuple[float, int]]] = dataclasses.field(
        default_factory=dict
    )
    arcs: dict[int, int] = dataclasses.field(default_factory=dict)  # per worker, its latest
    # the arcs of each worker's last process that ended, so the sum never drops on a restart
    arcs_before: dict[int, int] = dataclasses.field(default_factory=dict)
    findings: list[Any] = dataclasses.field(default_factory=list)
    unfuzzable: dict[str, str] = dataclasses.field(default_factory=dict)
    collected: set[str] = dataclasses.field(default_factory=set)
    faults: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (Fault value, why)
    timeline: list[tuple[float, int, int]] = dataclasses.field(default_factory=list)
    base: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def now(self) -> float:
        return time.monotonic() - self.started

    def read(self, process: _Process) -> None:
        for line in process.tail.lines():
            event = line.get("event")
            if event == "collected":
                self.collected |= set(line["nodeids"])
                for nodeid in line["nodeids"]:
                    self.owner[nodeid] = process.index
                    # a restarted worker counts from zero: add what the last process did
                    self.base[nodeid] = dict(self.properties.get(nodeid, {}))
                self.unfuzzable.update({n: why for n, why in line.get("unfuzzable", [])})
            elif event == "slice":
                process.running = line["nodeid"]
            elif event in ("status", "end"):
                # a restarted worker reaches the same arcs again: its share is the larger
                self.arcs[process.index] = max(self.arcs_before.get(process.index, 0), line["arcs"])
                for nodeid, stats in line["properties"].items():
                    self._update(nodeid, stats)
                process.ended = process.ended or event == "end"
            elif event == "finding":
                self.findings.append((process.index, self.now(), line))
            elif event == "refused":
                process.refused = line["detail"]
            elif event == "internal_error":
                process.internal_error = line["detail"]
            elif event == "database_fault":
                detail = f"{line['nodeid']}: the example database failed: {line['detail']}"
                self.faults.append(("database_fault", detail))

    def _update(self, nodeid: str, stats: dict[str, Any]) -> None:
        base = self.base.get(nodeid, {})
        total = {
            key: (value or 0) + (base.get(key) or 0) if key != "last_discovery" else value
            for key, value in stats.items()
        }
        if total.get("last_discovery") is None:
            total["last_discovery"] = base.get("last_discovery")
        self.properties[nodeid] = total
        history = self.history.setdefault(nodeid, collections.deque())
        now = self.now()
        history.append((now, total["discoveries"]))
        # Keep one point at or before a minute ago: the baseline of ``recent``.
        while len(history) > 1 and history[1][0] <= now - RECENT_SECONDS:
            history.popleft()

    def recent(self, nodeid: str) -> int:
        """Discoveries of the property in the last minute."""
        history = self.history.get(nodeid, ())
        since = self.now() - RECENT_SECONDS
        baseline = 0
        for at, discoveries in history:
            if at <= since:
                baseline = discoveries
        return history[-1][1] - baseline if history else 0

    def sample(self) -> None:
        examples = sum(stats.get("examples", 0) for stats in self.properties.values())
        self.timeline.append((round(self.now(), 2), sum(self.arcs.values()), examples))


class LiveTable:
    """The per-property table: redrawn in place every second on a terminal, printed every
    minute in a CI log (the busiest properties first)."""

    ROWS = 12

    def __init__(self, stream: IO[str], budget: float) -> None:
        self.stream = stream
        self.budget = budget
        self.tty = stream.isatty()
        self._last = time.monotonic()  # the first table once there is something in it
        self._drawn = 0

    def due(self) -> bool:
        return time.monotonic() - self._last >= (1.0 if self.tty else 60.0)

    def lines(self, live: _Live) -> list[str]:
        rows = sorted(
            live.properties.items(),
            key=lambda item: (-live.recent(item[0]), -item[1].get("examples", 0)),
        )
        findings = {}
        for _, _, line in live.findings:
            findings[line["nodeid"]] = findings.get(line["nodeid"], 0) + 1
        total = sum(stats.get("examples", 0) for stats in live.properties.values())
        head = (
            f"fuzz: {live.now():5.0f}/{self.budget:.0f} s  {len(live.collected)} properties  "
            f"{total:,} examples  {sum(live.arcs.values()):,} arcs  "
            f"{len(live.findings)} finding(s)"
        )
        out = [head, f"  {'property':<58} {'examples':>9} {'ex/s':>7} {'new/min':>7} {'found':>5}"]
        for nodeid, stats in rows[: self.ROWS]:
            seconds = stats.get("seconds", 0) or 0
            rate = stats.get("examples", 0) / seconds if seconds > 0 else 0.0
            shown = nodeid if len(nodeid) <= 58 else "..." + nodeid[-55:]
            out.append(
                f"  {shown:<58} {stats.get('examples', 0):>9,} {rate:>7.0f} "
                f"{live.recent(nodeid):>7} {findings.get(nodeid, 0):>5}"
            )
        return out

    def show(self, live: _Live) -> None:
        self._last = time.monotonic()
        lines = self.lines(live)
        if self.tty:
            if self._drawn:
                self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self.stream.write("\n".join(lines) + "\n")
            self._drawn = len(lines)
        else:
            self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()


# -- running the workers ---------------------------------------------------------------------


def worker_command(
    *,
    index: int,
    of: int,
    seed: int,
    seconds: float,
    record: Path,
    hang: Path,
    profile: str,
    test_timeout: float,
    keyword: str | None,
    tests: Sequence[str],
    exclude: Sequence[str],
) -> list[str]:
    command = [sys.executable, "-m", WORKER_MODULE, "--record", str(record), "--hang", str(hang)]
    command += ["--worker", str(index), "--of", str(of), "--seed", str(seed)]
    command += ["--seconds", f"{seconds:.3f}", "--test-timeout", f"{test_timeout:g}"]
    command += ["--profile", profile]
    for nodeid in exclude:
        command += ["--exclude", nodeid]
    if keyword is not None:
        command += ["-k", keyword]
    return command + list(tests)


def run_search(
    *,
    workers: int,
    end: float,
    out: Path,
    environ: dict[str, str],
    profile: str,
    test_timeout: float,
    keyword: str | None,
    tests: Sequence[str],
    table: LiveTable,
    reserve: Callable[[Sequence[WorkerLoss], float], float] | None = None,
) -> AdaptiveSummary:
    """Run ``workers`` worker processes until ``end`` (monotonic); when a test needs the
    confirmation round, stop them ``reserve(losses, start_seconds)`` seconds before it
    instead (``start_seconds``: the longest a worker took from its start to its first
    property). On Ctrl-C the workers are stopped and the summary of what ran says it was
    interrupted. Raises ``WorkerRefused`` when the workers refuse the selection or the
    profile."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    live = _Live(started)
    seeds = random.SystemRandom()
    processes: dict[int, _Process] = {}
    history: dict[int, list[_Process]] = collections.defaultdict(list)
    losses: list[WorkerLoss] = []
    lost: list[str] = []
    start_seconds = 0.0

    def start(index: int) -> None:
        restart = len(history[index])
        stem = f"worker-{index}" + (f"-restart-{restart}" if restart else "")
        seed = seeds.randrange(2**32)
        record, hang, log = (out / f"{stem}{suffix}" for suffix in (".jsonl", ".hang", ".log"))
        command = worker_command(
            index=index, of=workers, seed=seed, seconds=max(end - time.monotonic(), 0.1),
            record=record, hang=hang, profile=profile, test_timeout=test_timeout,
            keyword=keyword, tests=tests, exclude=lost,
        )  # fmt: skip
        with open(log, "wb") as log_file:
            log_file.write((" ".join(command) + "\n").encode())
            log_file.flush()
            popen = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, env=environ,
                start_new_session=True,
            )  # fmt: skip
        process = _Process(index, seed, record, hang, log, popen, _Tail(record), time.monotonic())
        processes[index] = process
        history[index].append(process)

    interrupted = False
    try:
        for index in range(workers):
            start(index)
        last_sample = 0.0
        while processes:
            for index, process in list(processes.items()):
                starting = process.running is None
                live.read(process)
                if starting and process.running is not None:
                    start_seconds = max(start_seconds, time.monotonic() - process.spawned)
                status = process.popen.poll()
                if status is None:
                    continue
                live.read(process)
                del processes[index]
                live.arcs_before[index] = live.arcs.get(index, 0)
                if process.refused is not None:
                    _stop_all(processes)
                    raise WorkerRefused(process.refused)
                if status in (0, 130) and process.ended:
                    continue
                if process.internal_error is not None or process.running is None:
                    # its own code failed, or it died before any test ran: no test's doing
                    live.faults.append(
                        (
                            "worker_fault",
                            f"worker {index} exited with status {status}: "
                            f"{(process.internal_error or '').strip().splitlines()[-1:]} "
                            f"(see {process.log})",
                        )
                    )
                    continue
                loss = _loss_of(process, status, live.now())
                losses.append(loss)
                lost.append(loss.nodeid)
                if end - time.monotonic() > MIN_RESTART_SECONDS:
                    start(index)
            now = time.monotonic()
            if now - last_sample >= SAMPLE_SECONDS:
                live.sample()
                last_sample = now
            if table.due():
                table.show(live)
            needs_round = live.findings or losses or live.unfuzzable
            if reserve is not None and needs_round and now >= end - reserve(losses, start_seconds):
                _stop_all(processes, live)
                break
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        interrupted = True
        _stop_all(processes, live)
    live.sample()
    seconds = time.monotonic() - started
    return _summary(live, history, losses, seconds, interrupted, start_seconds)


def _stop_all(processes: dict[int, _Process], live: _Live | None = None) -> None:
    """SIGINT to every worker (each writes its `end` line), then SIGKILL what remains."""
    for process in processes.values():
        try:
            os.killpg(process.popen.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for process in processes.values():
        try:
            process.popen.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.popen.wait()
        if live is not None:
            live.read(process)
    processes.clear()


def _loss_of(process: _Process, status: int, seconds: float) -> WorkerLoss:
    assert process.running is not None
    stacks = process.hang.read_text(errors="replace") if process.hang.is_file() else ""
    if stacks.strip():
        return WorkerLoss(process.running, "hung", "ran past the test timeout",
                          stacks, seconds)  # fmt: skip
    detail = f"its worker process exited with status {status} while it ran"
    return WorkerLoss(process.running, "crashed", detail, "", seconds)


def _summary(
    live: _Live,
    history: dict[int, list[_Process]],
    losses: list[WorkerLoss],
    seconds: float,
    interrupted: bool,
    start_seconds: float,
) -> AdaptiveSummary:
    properties = tuple(
        PropertyStats(
            nodeid=nodeid,
            worker=live.owner.get(nodeid, 0),
            examples=stats.get("examples", 0),
            valid=stats.get("valid", 0),
            seconds=stats.get("seconds", 0.0),
            discoveries=stats.get("discoveries", 0),
            recent_discoveries=live.recent(nodeid),
            last_discovery=stats.get("last_discovery"),
            findings=stats.get("findings", 0),
        )
        for nodeid, stats in sorted(live.properties.items())
    )
    findings = []
    seen: set[tuple[str, str]] = set()
    for worker, at, line in live.findings:
        if (line["nodeid"], line["origin"]) in seen:
            continue  # the same failure again, after a restart
        seen.add((line["nodeid"], line["origin"]))
        findings.append(
            AdaptiveFinding(
                nodeid=line["nodeid"],
                origin=line["origin"],
                error=line["error"],
                input_hex=line["input"],
                how=line.get("how", "fuzz_one_input"),
                seconds=round(at, 3),
                known=line["known"],
                worker=worker,
            )  # fmt: skip
        )
    workers = tuple(
        WorkerSummary(
            index,
            tuple(p.seed for p in processes),
            tuple(str(p.record) for p in processes),
            any(p.popen.returncode == 130 for p in processes),
        )
        for index, processes in sorted(history.items())
    )
    return AdaptiveSummary(
        seconds=seconds,
        workers=workers,
        properties=properties,
        findings=tuple(findings),
        losses=tuple(losses),
        unfuzzable=tuple(sorted(live.unfuzzable.items())),
        timeline=tuple(live.timeline),
        faults=tuple(live.faults),
        interrupted=interrupted,
        collected=tuple(sorted(live.collected)),
        worker_start_seconds=start_seconds,
    )
