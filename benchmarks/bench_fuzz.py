"""Benchmark the fuzz campaign (issues 7 and 19). Figures are reported, never asserted
(machines here are shared and noisy); every subcommand runs ``practice-loop fuzz`` with
throwaway databases and no CrossHair lane.

    python benchmarks/bench_fuzz.py cores [--minutes M] [-j N] [--engine E] [--out DIR]
    python benchmarks/bench_fuzz.py missed [--bug ID ...] [-j N] [TESTS ...]
    python benchmarks/bench_fuzz.py compare [--minutes M] [--bug ID ...] [--out DIR] [TESTS ...]

``cores``: one campaign on every core: the share of the cores it keeps busy (target: at least
90%), how close to its budget it stops, examples per second per property.

``missed``: plants every bug of ``benchmarks/planted_bugs.toml`` at once in a copy of this
checkout and runs the default suite there under ``CI=true`` (the derandomized ``ci``
profile); it passes exactly when the default suite misses every bug (exit 0), else it names
the tests that caught one (exit 1). TESTS narrows the run, for trying a new bug quickly.

``compare``: for each bug, planted alone in a copy, the adaptive engine and the round-robin
engine (``--engine rounds``) run side by side for the same wall clock, one core each; a bug's
time to find is when the campaign first knows of a failure: a worker's finding (adaptive),
the end of the round in which a test failed (rounds). Prints the table and the medians (a
bug not found counts as the budget, so the medians are lower bounds); ``--control`` adds a
run with no bug, which must find nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUGS = ROOT / "benchmarks" / "planted_bugs.toml"
SCHEMA = "planted_bugs.v1"
ENGINES = ("adaptive", "rounds")


class PlantError(ValueError):
    """The catalogue cannot be applied: malformed, or an entry's edit site is gone."""


@dataclasses.dataclass(frozen=True, slots=True)
class Bug:
    id: str
    violation: str
    file: str
    find: str
    replace: str


def load_bugs(path: Path = BUGS) -> list[Bug]:
    """The catalogue, each entry checked to apply: its ``find`` exactly once in its file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise PlantError(f"{path}: {error}") from None
    if data.get("schema") != SCHEMA:
        raise PlantError(f"{path}: schema must be {SCHEMA!r}")
    names = [field.name for field in dataclasses.fields(Bug)]
    bugs = []
    for entry in data.get("bug", []):
        if sorted(entry) != sorted(names) or not all(type(entry[n]) is str for n in names):
            raise PlantError(f"{path}: an entry needs exactly the strings {names}: {entry}")
        bugs.append(Bug(**entry))
    ids = [bug.id for bug in bugs]
    if not bugs or len(set(ids)) != len(ids):
        raise PlantError(f"{path}: no bugs, or an id used twice")
    for bug in bugs:
        planted(bug, (ROOT / bug.file).read_text(encoding="utf-8"))
    return bugs


def planted(bug: Bug, source: str) -> str:
    """``source`` with the bug planted; ``PlantError`` when its edit site is not there once."""
    found = source.count(bug.find)
    if found != 1:
        raise PlantError(f"{bug.id} is stale: its find text is in {bug.file} {found} times")
    return source.replace(bug.find, bug.replace)


def plant_copy(bugs: list[Bug], target: Path) -> Path:
    """A copy of this checkout (what git tracks or would track) with ``bugs`` planted, made a
    git repository whose one commit is the planted tree: the suite has tests that clone the
    checkout or compare the kernel with HEAD, and in a bare copy they fail on any tree, so
    ``missed`` would count them as catching a bug."""
    from practice_loop.harness.mutants import checkout_files, make_copy

    make_copy(ROOT, checkout_files(ROOT), target)
    for bug in bugs:
        path = target / bug.file
        path.write_text(planted(bug, path.read_text(encoding="utf-8")), encoding="utf-8")
    author = ["-c", "user.name=bench_fuzz", "-c", "user.email=bench_fuzz@localhost"]
    for command in (["init", "-q"], ["add", "-A"], [*author, "commit", "-q", "-m", "planted"]):
        subprocess.run(["git", *command], cwd=target, check=True, capture_output=True)
    return target


def copy_environment(copy: Path) -> dict[str, str]:
    paths = [str(copy / "src"), str(copy / "strategies"), os.environ.get("PYTHONPATH", "")]
    return os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, paths))}


# -- cores -----------------------------------------------------------------------------------


def fuzz_command(minutes: float, jobs: str, engine: str, scratch: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "practice_loop", "fuzz", "--minutes", str(minutes), "-j", jobs,
        "--engine", engine, "--crosshair-share", "0", "--database", str(scratch / "db"),
        "--out", str(out),
    ]  # fmt: skip


def cores(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        out = args.out or scratch / "reports"
        started = time.monotonic()
        command = fuzz_command(args.minutes, args.jobs, args.engine, scratch, out)
        status = subprocess.run(command, check=False).returncode
        wall = time.monotonic() - started
        report = json.loads((out / "fuzz-report.json").read_text())
    budget = report["budget_seconds"]
    totals = report["totals"]
    print(f"\ncampaign exit {status}, engine {report['engine']}")
    print(
        f"stopped after {report['elapsed_seconds']:.1f} s of a {budget:.0f} s budget "
        f"({report['elapsed_seconds'] / budget - 1:+.1%}; {wall:.1f} s with start-up)"
    )
    print(
        f"cores kept busy: {totals['busy_share']:.1%} ({totals['cpu_seconds']:.0f} CPU s over "
        f"{report['rounds_seconds']:.0f} s x {report['cores']} cores, {report['workers']} workers)"
    )
    properties = (report["adaptive"] or {}).get("properties") or report["tests"]
    print("\nexamples/s  examples  test")
    for test in sorted(properties, key=lambda t: -(t["examples_per_second"] or 0)):
        rate = test["examples_per_second"]
        shown = f"{rate:10.1f}" if rate is not None else "         -"
        print(f"{shown}  {test['examples']:8d}  {test['nodeid']}")
    return 0


# -- missed ----------------------------------------------------------------------------------


def missed(args: argparse.Namespace) -> int:
    bugs = _selected(load_bugs(), args.bug)
    with tempfile.TemporaryDirectory(prefix="planted-") as folder:
        copy = plant_copy(bugs, Path(folder) / "copy")
        environment = copy_environment(copy) | {
            "CI": "true",
            # The suite's own check that the mutant catalogue applies is not about the
            # planted bugs; the mutants runner skips it the same way (tests/cover/test_mutants).
            "PRACTICE_LOOP_MUTANT": "planted-bugs",
        }
        command = [sys.executable, "-m", "pytest", "-n", args.jobs, "-q", "-rfE"]
        command += ["-p", "no:cacheprovider", *args.tests]
        print(f"default suite with {len(bugs)} bugs planted: {' '.join(command)}", flush=True)
        result = subprocess.run(
            command, cwd=copy, env=environment, capture_output=True, text=True, check=False
        )
    lines = result.stdout.strip().splitlines()
    named = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    print("\n".join(named + lines[-1:]))
    if result.returncode == 0:
        suite = "the default suite" if not args.tests else " ".join(args.tests)
        print(f"\nmissed: {suite} passes with all {len(bugs)} bugs planted")
        return 0
    print(f"\ncaught: pytest exited {result.returncode}; the tests above found a planted bug")
    return 1


# -- compare ---------------------------------------------------------------------------------


def _selected(bugs: list[Bug], wanted: list[str] | None) -> list[Bug]:
    if not wanted:
        return bugs
    unknown = sorted(set(wanted) - {bug.id for bug in bugs})
    if unknown:
        raise PlantError(f"no planted bug named {', '.join(unknown)}")
    return [bug for bug in bugs if bug.id in wanted]


def time_to_find(report: dict) -> float | None:
    """Seconds after the campaign started when it first knew of a failure, or ``None``."""
    if report["engine"] == "adaptive":
        found = [f["seconds"] for f in report["adaptive"]["findings"] if not f["known"]]
        return min(found) if found else None
    failed_rounds = {f["round"] for test in report["tests"] for f in test["failures"]}
    ends = [r["started"] + r["seconds"] for r in report["rounds"] if r["number"] in failed_rounds]
    return min(ends) if ends else None


def _campaign(copy: Path, engine: str, minutes: float, folder: Path, tests: list[str]):
    out = folder / engine
    command = fuzz_command(minutes, "1", engine, folder / f"{engine}-db", out) + tests
    log = open(folder / f"{engine}.log", "wb")  # noqa: SIM115 (closed after the wait)
    process = subprocess.Popen(
        command, cwd=copy, env=copy_environment(copy), stdout=log, stderr=subprocess.STDOUT
    )
    return process, log, out


def compare(args: argparse.Namespace) -> int:
    bugs: list[Bug | None] = list(_selected(load_bugs(), args.bug))
    if args.control:
        bugs.insert(0, None)
    budget = args.minutes * 60
    rows = []
    with tempfile.TemporaryDirectory(prefix="planted-") as scratch:
        for bug in bugs:
            name = bug.id if bug is not None else "control (no bug)"
            folder = Path(scratch) / name
            copy = plant_copy([bug] if bug is not None else [], folder / "copy")
            runs = [_campaign(copy, e, args.minutes, folder, args.tests) for e in ENGINES]
            found = {}
            for engine, (process, log, out) in zip(ENGINES, runs, strict=True):
                process.wait()
                log.close()
                report = json.loads((out / "fuzz-report.json").read_text())
                found[engine] = time_to_find(report)
                if args.out:
                    target = args.out / name / engine
                    target.mkdir(parents=True, exist_ok=True)
                    (target / "fuzz-report.json").write_text(json.dumps(report, indent=2))
            rows.append((name, found["adaptive"], found["rounds"]))
            print(f"{name}: adaptive {_shown(found['adaptive'])}, rounds {_shown(found['rounds'])}",
                  flush=True)  # fmt: skip
    print(f"\n| bug | found by adaptive at s | found by round-robin at s |  (budget {budget:.0f} s)")
    print("|---|---:|---:|")
    for name, adaptive, rounds in rows:
        print(f"| {name} | {_shown(adaptive)} | {_shown(rounds)} |")
    planted_rows = [row for row in rows if not row[0].startswith("control")]
    if planted_rows:
        medians = [
            statistics.median(budget if t is None else t for t in column)
            for column in list(zip(*planted_rows, strict=True))[1:]
        ]
        found = [sum(t is not None for t in column) for column in list(zip(*planted_rows))[1:]]
        print(
            f"\nfound: adaptive {found[0]} of {len(planted_rows)}, rounds {found[1]}; "
            f"median time to find (a miss counts as the budget): adaptive {medians[0]:.1f} s, "
            f"rounds {medians[1]:.1f} s, ratio {medians[0] / medians[1]:.2f}"
        )
    control = [row for row in rows if row[0].startswith("control")]
    if control and (control[0][1] is not None or control[0][2] is not None):
        print("\nthe control run found a failure with no bug planted: the table is confounded")
        return 1
    return 0


def _shown(seconds: float | None) -> str:
    return "not found" if seconds is None else f"{seconds:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("cores", help="the share of the cores a campaign keeps busy")
    one.add_argument("--minutes", type=float, default=2.0)
    one.add_argument("-j", "--jobs", default="auto")
    one.add_argument("--engine", choices=ENGINES, default="adaptive")
    one.add_argument("--out", type=Path, default=None, help="keep the reports here")
    one.set_defaults(run=cores)
    two = commands.add_parser("missed", help="the default suite with every bug planted")
    two.add_argument("--bug", action="append", help="only this bug (repeatable)")
    two.add_argument("-j", "--jobs", default="auto")
    two.add_argument("tests", nargs="*", help="only these tests (default: the whole suite)")
    two.set_defaults(run=missed)
    three = commands.add_parser("compare", help="adaptive against round-robin, bug by bug")
    three.add_argument("--minutes", type=float, default=4.0)
    three.add_argument("--bug", action="append", help="only this bug (repeatable)")
    three.add_argument("--control", action="store_true", help="first a run with no bug")
    three.add_argument("--out", type=Path, default=None, help="keep every report here")
    three.add_argument("tests", nargs="*", help="the campaigns' selection (default: testpaths)")
    three.set_defaults(run=compare)
    args = parser.parse_args()
    try:
        return args.run(args)
    except PlantError as error:
        print(f"bench_fuzz: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench_fuzz: interrupted; the figures above are all it measured", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
