"""``practice-loop fuzz-bytes``: coverage-guided fuzzing, byte by byte, of every surface that
reads untrusted bytes (issue 19), on atheris (libFuzzer's engine for Python).

Each target feeds one input to one surface and holds the answer to an oracle:

- ``canonical``: ``decode_canonical``, whose accepted values the standard library, with none
  of the decoder's hooks, must encode back to exactly the input, inside the hashable profile;
- ``trace``: ``load_sealed_trace``, verification and replay, as ``show`` serves a trace; bytes
  all three accept must be exactly what the loop makes of the trace's own frame;
- ``policy``: ``parse_budget_table`` on a policy file; an accepted table becomes a kernel
  policy or a typed ``RecordError``;
- ``run-line``: ``parse_line`` and ``run_case`` on one line of ``run``; a trace it stores
  must verify and replay;
- ``question``: ``read_question`` on question text (invalid UTF-8 arrives as lone
  surrogates, as the reader may meet it), then the loop, held as ``run-line`` is;
- ``store``: a SQLite file opened as ``verify`` and ``show`` open one; every row is read and
  every stored trace checked, and every failure must be a ``StoreError``.

A finding is an exception other than the surface's typed refusals, an oracle that fails
(``AcceptedCorruption``: bytes accepted that should not have been), an input that runs past
``--timeout`` (a hang) or past the memory limit. Each is saved under ``OUT/findings`` as the
input's bytes with a note holding the command that replays it
(``practice-loop fuzz-bytes --replay FILE --target NAME``).

The corpus of each target lives in ``--corpus`` (default ``.hypothesis/byte-corpus``, beside
the campaign's example database), seeded from the golden vectors, the shipped sample and the
example policy files; libFuzzer adds every input that reaches new code, so runs grow it.

Exit status: 0 when no target found anything; 1 when one did (reproducers written) or a worker
could not run; 2 for a usage error; 130 when interrupted, after writing the report.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..kernel import SealedPracticeTrace, TraceVerification, practice_case, verify_sealed_trace
from ..kernel.identity import MAX_DEPTH, MAX_SAFE_INT, CanonicalizationError, decode_canonical
from ..kernel.loop import replay_divergence
from ..kernel.trace import load_sealed_trace
from ..product.reader import ReaderRefusal, read_question
from ..product.runner import parse_line, run_case
from ..product.store import ReadOnlyTraceStore, StoreError, TraceStore
from . import vectors
from .policy_file import PolicyFileError, kernel_policy, parse_budget_table
from .report_context import context_line, run_context

DEFAULT_CORPUS = Path(".hypothesis/byte-corpus")
DEFAULT_OUT = Path("byte-fuzz-report")
DEFAULT_SECONDS = 60.0
DEFAULT_TIMEOUT = 10
DEFAULT_RSS_LIMIT_MB = 2048
# libFuzzer's exit codes: an uncaught exception (atheris), a hang, and what else it stops on.
CRASH_EXIT = 77
TIMEOUT_EXIT = 70
ARTIFACT_KINDS = ("crash", "timeout", "oom", "leak", "slow-unit")
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)$", re.MULTILINE)
_ROOT = Path(__file__).resolve().parents[3]  # the checkout, when run from one


class AcceptedCorruption(AssertionError):
    """An oracle failed: the surface accepted bytes that it should have refused."""


# --------------------------------------------------------------------------------------------
# The targets: one input, one surface, one oracle. Typed refusals return; anything else raises.


def _profile_violation(value: object) -> str | None:
    """Where ``value`` leaves the hashable profile (docs/adr/0003), read without the kernel:
    a float, an int outside the safe range, a lone surrogate, or nesting beyond the cap."""
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if type(item) is float:
            return "a float"
        if type(item) is int and not -MAX_SAFE_INT <= item <= MAX_SAFE_INT:
            return "an int outside the safe range"
        if type(item) is str and not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a lone surrogate"
        if type(item) in (dict, list):
            if depth >= MAX_DEPTH:
                return "nesting beyond MAX_DEPTH"
            members = item.items() if type(item) is dict else enumerate(item)  # type: ignore[union-attr]
            for key, member in members:
                pending.append((key, depth + 1))
                pending.append((member, depth + 1))
    return None


def check_canonical(data: bytes) -> None:
    try:
        value = decode_canonical(data)
    except CanonicalizationError:
        return
    found = _profile_violation(value)  # first: a lone surrogate cannot be encoded at all
    if found is not None:
        raise AcceptedCorruption(f"decode_canonical accepted {found}")
    again = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if again.encode("utf-8") != data:
        raise AcceptedCorruption("decode_canonical accepted bytes that are not canonical")


def _hold_trace(trace: SealedPracticeTrace) -> None:
    """A trace the loop sealed must verify, and replay byte for byte."""
    verification = verify_sealed_trace(trace)
    if not verification.valid:
        raise AcceptedCorruption(f"the loop sealed a trace that fails: {verification.failures}")
    divergence = replay_divergence(trace)
    if divergence is not None:
        raise AcceptedCorruption(f"the loop sealed a trace that does not replay: {divergence}")


def check_trace(data: bytes) -> None:
    loaded = load_sealed_trace(data)
    if type(loaded) is TraceVerification:
        if loaded.valid:
            raise AcceptedCorruption("load_sealed_trace refused with no failure")
        return
    if not verify_sealed_trace(loaded).valid or replay_divergence(loaded) is not None:
        return
    if practice_case(loaded.frame).canonical_bytes() != data:  # type: ignore[union-attr]
        raise AcceptedCorruption("a trace verified and replayed, yet is not the loop's own")


def check_policy(data: bytes) -> None:
    try:
        table = parse_budget_table(data, "fuzz")
    except PolicyFileError:
        return
    kernel_policy(table)  # a policy, or a typed RecordError it returns


def _practise(question: str) -> None:
    row, trace = run_case("fuzz", "fuzz", question, None)
    if trace is not None:
        _hold_trace(trace)
        if row.trace_id != trace.trace_id:
            raise AcceptedCorruption("the case row names another trace than its own")


def check_run_line(data: bytes) -> None:
    value = parse_line(data)
    if type(value) is dict:
        _practise(value["question"])  # type: ignore[arg-type]


def check_question(data: bytes) -> None:
    question = data.decode("utf-8", errors="surrogateescape")
    frame = read_question(question)
    if type(frame) is ReaderRefusal:
        return
    _practise(question)


def check_store(data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="practice-loop-fuzz-") as folder:
        path = Path(folder) / "fuzzed.sqlite"
        path.write_bytes(data)
        try:
            with ReadOnlyTraceStore(path, wait=0) as store:
                list(store.case_rows())
                for stored in list(store.stored_bodies()):
                    store.read_trace(stored.trace_id)
        except StoreError:
            return


# --------------------------------------------------------------------------------------------
# Seeds


def _sample_lines(name: str) -> list[bytes]:
    return (resources.files("practice_loop") / "data" / name).read_bytes().splitlines()


def _sample_questions() -> list[str]:
    questions = []
    for line in _sample_lines("sample.jsonl"):
        value = parse_line(line)
        if type(value) is dict:
            questions.append(value["question"])  # type: ignore[arg-type]
    return questions


def _sample_traces() -> list[bytes]:
    traces = []
    for question in _sample_questions():
        frame = read_question(question)
        if type(frame) is not ReaderRefusal:
            traces.append(practice_case(frame).canonical_bytes())  # type: ignore[union-attr]
    return traces


def _loader_inputs() -> list[bytes]:
    document = json.loads(
        (resources.files("practice_loop") / "data" / "vectors" / "loader.json").read_bytes()
    )
    return [
        vectors.bytes_of(test["input"]["bytes"])
        for group in document["testGroups"]
        for test in group["tests"]
        if "bytes" in test["input"] and not test["input"].get("as_text")
    ]


def _policy_examples() -> list[bytes]:
    # The example files live in the checkout (docs/examples), not in the installed package.
    return [path.read_bytes() for path in sorted((_ROOT / "docs" / "examples").glob("*.json"))]


def _store_seed() -> list[bytes]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.sqlite"
        with TraceStore(path) as store:
            for number, question in enumerate(_sample_questions()[:3]):
                row, trace = run_case(f"seed-{number}", "seed", question, None)
                store.put_case(row, trace)
        return [path.read_bytes()]


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    name: str
    surface: str  # what it reads, for the report
    check: Callable[[bytes], None]
    seeds: Callable[[], list[bytes]]
    # The largest input libFuzzer makes (``-max_len``); larger seeds stay out of the corpus,
    # since every mutation of one would cost as much as the seed (the vectors hold 8 MiB caps).
    max_len: int = 1 << 16


TARGETS: Mapping[str, Target] = types.MappingProxyType(
    {
        target.name: target
        for target in (
            Target(
                "canonical",
                "decode_canonical",
                check_canonical,
                lambda: [*_loader_inputs(), *_sample_traces()[:5], b"{}", b"[]", b"0", b'""'],
            ),
            Target("trace", "load_sealed_trace, verification, replay", check_trace, _sample_traces),
            Target("policy", "parse_budget_table", check_policy, _policy_examples),
            Target(
                "run-line",
                "parse_line, run_case",
                check_run_line,
                lambda: [*_sample_lines("sample.jsonl"), *_sample_lines("sample_malformed.jsonl")],
            ),
            Target(
                "question",
                "read_question, the loop",
                check_question,
                lambda: [question.encode("utf-8") for question in _sample_questions()],
            ),
            Target(
                "store",
                "a SQLite store, read as verify reads it",
                check_store,
                _store_seed,
                max_len=1 << 18,
            ),
        )
    }
)

TARGET_NAMES = tuple(TARGETS)


# --------------------------------------------------------------------------------------------
# The campaign: one libFuzzer worker process per target, ``--jobs`` at a time


@dataclasses.dataclass(slots=True)
class TargetRun:
    """What one target's worker did: its figures from libFuzzer, and what it found."""

    target: str
    surface: str
    seconds: float
    exit_code: int | None = None
    executions: int = 0
    executions_per_second: float = 0.0
    new_units: int = 0
    corpus_before: int = 0
    corpus_after: int = 0
    findings: list[dict[str, str]] = dataclasses.field(default_factory=list)
    fault: str | None = None  # the worker ended without doing its work, and why

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def seed_corpus(target: Target, folder: Path) -> int:
    """Write the target's seeds into its corpus folder, each named by its SHA-1 as libFuzzer
    names its own units (so seeding twice adds nothing); the number of units it holds."""
    folder.mkdir(parents=True, exist_ok=True)
    for seed in target.seeds():
        if len(seed) > target.max_len:
            continue
        unit = folder / hashlib.sha1(seed, usedforsecurity=False).hexdigest()
        if not unit.exists():
            _write_atomically(unit, seed)
    return _units(folder)


def _units(folder: Path) -> int:
    return sum(1 for path in folder.iterdir() if path.is_file()) if folder.is_dir() else 0


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)


def _worker_command(
    target: Target, corpus: Path, work: Path, seconds: float, timeout: int, rss_limit_mb: int
) -> list[str]:
    return [
        sys.executable, "-m", "practice_loop.harness.byte_fuzz_worker", target.name,
        str(corpus), f"-artifact_prefix={work}{os.sep}",
        f"-max_total_time={max(1, round(seconds))}", f"-timeout={timeout}",
        f"-rss_limit_mb={rss_limit_mb}", f"-max_len={target.max_len}", "-print_final_stats=1",
    ]  # fmt: skip


def _exception_text(log: str) -> str:
    """The exception atheris reported, as it printed it (the last one in the log)."""
    marker = "=== Uncaught Python exception: ==="
    start = log.rfind(marker)
    if start < 0:
        return ""
    start += len(marker)
    end = log.find("\n==", start)
    return log[start : end if end > 0 else None].strip()[:4000]


def _collect_findings(run: TargetRun, work: Path, out: Path, log: str) -> None:
    findings = out / "findings"
    for artifact in sorted(work.iterdir()):
        kind = artifact.name.partition("-")[0]
        if not artifact.is_file() or kind not in ARTIFACT_KINDS:
            continue
        data = artifact.read_bytes()
        name = f"{run.target}-{kind}-{hashlib.sha256(data).hexdigest()[:16]}"
        findings.mkdir(parents=True, exist_ok=True)
        reproducer = findings / f"{name}.bin"
        _write_atomically(reproducer, data)
        artifact.unlink()
        command = f"practice-loop fuzz-bytes --target {run.target} --replay {reproducer}"
        detail = _exception_text(log) if kind == "crash" else f"libFuzzer stopped on a {kind}"
        note = (
            f"# {name}\n\nTarget `{run.target}` ({run.surface}): a {kind}, {len(data)} bytes.\n\n"
            f"Replay it:\n\n    {command}\n\n```\n{detail}\n```\n"
        )
        _write_atomically(findings / f"{name}.md", note.encode("utf-8"))
        run.findings.append(
            {"kind": kind, "reproducer": str(reproducer), "replay": command, "detail": detail}
        )


def _read_figures(run: TargetRun, log: str, wall: float) -> None:
    stats = {name: int(value) for name, value in _STAT.findall(log)}
    run.executions = stats.get("number_of_executed_units", 0)
    run.new_units = stats.get("new_units_added", 0)
    rate = stats.get("average_exec_per_sec", 0)
    run.executions_per_second = float(rate) if rate else round(run.executions / max(wall, 1e-9), 1)


@dataclasses.dataclass(slots=True)
class _Running:
    run: TargetRun
    process: subprocess.Popen[bytes]
    work: Path
    log_path: Path
    started: float


def _finish(running: _Running, corpus: Path, out: Path) -> TargetRun:
    run = running.run
    run.exit_code = running.process.wait()
    log = running.log_path.read_text("utf-8", errors="replace")
    _read_figures(run, log, time.monotonic() - running.started)
    run.corpus_after = _units(corpus / run.target)
    _collect_findings(run, running.work, out, log)
    if run.exit_code not in (0, CRASH_EXIT, TIMEOUT_EXIT) and not run.findings:
        if run.exit_code != -signal.SIGINT and run.exit_code != 130:
            tail = "\n".join(log.strip().splitlines()[-5:])
            run.fault = f"the worker exited {run.exit_code} with no finding: {tail}"[:2000]
    elif run.exit_code == 0 and run.executions == 0:
        run.fault = "the worker ran no input"
    return run


def run_campaign(
    names: Sequence[str],
    *,
    seconds: float,
    jobs: int,
    corpus: Path,
    out: Path,
    timeout: int = DEFAULT_TIMEOUT,
    rss_limit_mb: int = DEFAULT_RSS_LIMIT_MB,
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[list[TargetRun], bool]:
    """Fuzz each named target for ``seconds``, ``jobs`` at a time; the runs, and whether it was
    interrupted (every worker is stopped then, and what it did so far is kept)."""
    pending = [TARGETS[name] for name in names]
    running: list[_Running] = []
    done: list[TargetRun] = []
    interrupted = False
    try:
        while pending or running:
            while pending and len(running) < jobs:
                target = pending.pop(0)
                before = seed_corpus(target, corpus / target.name)
                work = out / target.name
                work.mkdir(parents=True, exist_ok=True)
                log_path = work / "worker.log"
                command = _worker_command(
                    target, corpus / target.name, work, seconds, timeout, rss_limit_mb
                )
                with log_path.open("wb") as log:
                    process = subprocess.Popen(
                        command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                    )
                run = TargetRun(target.name, target.surface, seconds, corpus_before=before)
                running.append(_Running(run, process, work, log_path, time.monotonic()))
                progress(f"{target.name}: fuzzing {target.surface} for {seconds:g} s")
            time.sleep(0.2)
            for entry in [entry for entry in running if entry.process.poll() is not None]:
                running.remove(entry)
                finished = _finish(entry, corpus, out)
                done.append(finished)
                progress(_progress_line(finished))
    except KeyboardInterrupt:
        interrupted = True
        for entry in running:
            _stop(entry.process)
        for entry in running:
            done.append(_finish(entry, corpus, out))
    done.sort(key=lambda run: TARGET_NAMES.index(run.target))
    return done, interrupted


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a worker as Ctrl-C would (libFuzzer prints its figures), then for good."""
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def _progress_line(run: TargetRun) -> str:
    found = f", {len(run.findings)} finding(s)" if run.findings else ""
    fault = f", fault: {run.fault.splitlines()[0]}" if run.fault else ""
    return (
        f"{run.target}: {run.executions:,} executions ({run.executions_per_second:,.0f}/s), "
        f"{run.new_units} new units, corpus {run.corpus_before} -> {run.corpus_after}{found}{fault}"
    )


# --------------------------------------------------------------------------------------------
# Reports


def write_reports(
    out: Path, runs: Sequence[TargetRun], context: Mapping[str, str], interrupted: bool
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "schema": "practice_loop.byte_fuzz_report.v1",
        "context": dict(context),
        "interrupted": interrupted,
        "targets": [run.to_json() for run in runs],
        "findings": sum(len(run.findings) for run in runs),
        "faults": sum(1 for run in runs if run.fault),
    }
    json_path = out / "byte-fuzz.json"
    _write_atomically(json_path, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode())
    lines = [
        "# Byte fuzzing (issue 19)",
        "",
        context_line(dict(context)) + ("; interrupted" if interrupted else ""),
        "",
        "| target | surface | seconds | executions | per second | new units | corpus | findings |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for run in runs:
        lines.append(
            f"| `{run.target}` | {run.surface} | {run.seconds:g} | {run.executions:,} | "
            f"{run.executions_per_second:,.0f} | {run.new_units} | "
            f"{run.corpus_before} -> {run.corpus_after} | {len(run.findings)} |"
        )
    for run in runs:
        for finding in run.findings:
            lines += ["", f"## `{run.target}`: {finding['kind']}", "", f"    {finding['replay']}"]
            if finding["detail"]:
                lines += ["", "```", finding["detail"], "```"]
        if run.fault:
            lines += ["", f"## `{run.target}`: the worker failed", "", "```", run.fault, "```"]
    markdown_path = out / "byte-fuzz.md"
    _write_atomically(markdown_path, ("\n".join(lines) + "\n").encode("utf-8"))
    return json_path, markdown_path


# --------------------------------------------------------------------------------------------
# The command


def replay(name: str, path: Path) -> tuple[bool, str]:
    """Run one target on one saved input: whether it found something, and what."""
    data = path.read_bytes()
    try:
        TARGETS[name].check(data)
    except Exception as error:  # noqa: BLE001 (any exception is the finding being replayed)
        return True, f"{type(error).__name__}: {error}"
    return False, f"no finding: {name} handles these {len(data)} bytes"


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "fuzz-bytes",
        help="coverage-guided byte fuzzing of every surface that reads untrusted bytes",
        description=__doc__.split("\n\n")[0].replace("``practice-loop fuzz-bytes``: ", ""),
        epilog="exit status: 0 nothing found; 1 a finding (reproducers under OUT/findings) or "
        "a worker that could not run; 2 a usage error; 130 interrupted",
    )
    parser.add_argument(
        "--target",
        action="append",
        choices=TARGET_NAMES,
        help="a target to fuzz (repeat it; default: every target)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=DEFAULT_SECONDS,
        help="wall-clock seconds per target (default %(default)g)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="targets fuzzed at once (default: one per core)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="the corpus folders, one per target (default %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="reports, worker logs and findings (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_TIMEOUT,
        help="wall-clock seconds one input may take before it is a hang (default %(default)s)",
    )
    parser.add_argument(
        "--replay", type=Path, metavar="FILE", help="run one --target on one saved input instead"
    )
    parser.set_defaults(handler=run_command)
    return parser


def run_command(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.target or TARGET_NAMES))
    if args.replay is not None:
        if len(names) != 1:
            print("fuzz-bytes: --replay needs exactly one --target", file=sys.stderr)
            return 2
        if not args.replay.is_file():
            print(f"fuzz-bytes: {args.replay}: no such file", file=sys.stderr)
            return 2
        found, message = replay(names[0], args.replay)
        print(message)
        return 1 if found else 0
    if not 0 < args.seconds <= 86400 or args.jobs < 1 or args.timeout < 1:
        print(
            "fuzz-bytes: --seconds must be in (0, 86400], --jobs and --timeout at least 1",
            file=sys.stderr,
        )
        return 2
    try:
        import atheris  # noqa: F401 (checked here, so that a missing engine is a usage error)
    except ModuleNotFoundError:
        print(
            "fuzz-bytes needs atheris (the 'test' extra): pip install 'practice-loop[test]'",
            file=sys.stderr,
        )
        return 2
    runs, interrupted = run_campaign(
        names,
        seconds=args.seconds,
        jobs=args.jobs,
        corpus=args.corpus,
        out=args.out,
        timeout=args.timeout,
        progress=lambda line: print(line, flush=True),
    )
    json_path, markdown_path = write_reports(
        args.out, runs, run_context(_ROOT, "atheris"), interrupted
    )
    findings = sum(len(run.findings) for run in runs)
    faults = [run for run in runs if run.fault]
    print(
        f"fuzz-bytes: {len(runs)} targets, {findings} finding(s), {len(faults)} fault(s); "
        f"report: {markdown_path}"
    )
    for run in runs:
        for finding in run.findings:
            print(f"  {run.target} {finding['kind']}: {finding['replay']}")
    if interrupted:
        return 130
    return 1 if findings or faults else 0
