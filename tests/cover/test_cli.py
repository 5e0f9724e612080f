"""The ``practice-loop`` command line: run, verify and show over a store (issue 3, shell)."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sqlite3
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from practice_loop.cli import main

MALFORMED = resources.files("practice_loop") / "data" / "sample_malformed.jsonl"


def _run_json(capsys, *args: str) -> tuple[int, dict]:
    status = main(["run", *args, "--json", "--quiet"])
    return status, json.loads(capsys.readouterr().out)


def _trace_ids(store) -> list[str]:
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT trace_id FROM traces")]


@pytest.mark.obligation("ADR-0226/13.8", "ADR-0228/17.smoke_lane", "ADR-0231/18.25")
def test_the_main_job_runs_the_sample_and_verifies_it(tmp_path, capsys):
    """Issue 3: the sample answers directly and through practice, with no wrong answer."""
    store = tmp_path / "store.sqlite"
    status, summary = _run_json(capsys, "--store", str(store))
    assert status == 0
    assert summary["wrong_ids"] == [] and summary["wrong"] == 0
    assert summary["answered_direct"] > 0 and summary["answered_through_practice"] > 0
    assert summary["cases"] == summary["answered"] + summary["refused"]
    assert summary["refused_by_reason"]
    assert main(["verify", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    cases = summary["cases"]
    assert f"verified {cases} cases and {len(_trace_ids(store))} traces: 0 cases failed" in out


@pytest.mark.obligation("ADR-0226/9.7")
def test_running_twice_stores_each_trace_once(tmp_path, capsys):
    """Traces are content-addressed: the same case gives the same trace id, stored once."""
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    first = sorted(_trace_ids(store))
    _run_json(capsys, "--store", str(store))
    assert sorted(_trace_ids(store)) == first


@pytest.mark.obligation("ADR-0226/9.9")
def test_malformed_lines_are_reported_and_skipped(tmp_path, capsys):
    """Issue 3 'Bad input': each bad line is named by its number; the run goes on and no
    partial trace is written. Issue 15: the run then exits 2 (an input error), not 0."""
    source = tmp_path / "malformed.jsonl"
    source.write_bytes(MALFORMED.read_bytes() + b"\xff\xfe not utf-8\n")
    store = tmp_path / "store.sqlite"
    status = main(["run", str(source), "--store", str(store), "--json", "--quiet"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert status == 2
    reasons = {line["reason"] for line in summary["skipped_lines"]}
    assert {"not_json", "missing_question", "question_not_text", "invalid_utf8"} <= reasons
    for line in summary["skipped_lines"]:
        assert f"line {line['line_number']} skipped: {line['reason']}" in captured.err
    with sqlite3.connect(store) as db:
        with_trace = db.execute("SELECT count(*) FROM cases WHERE trace_id IS NOT NULL").fetchone()
        traces = db.execute("SELECT count(*) FROM traces").fetchone()
    assert traces[0] <= with_trace[0]
    assert main(["verify", "--store", str(store)]) == 0


@pytest.mark.obligation("ADR-0226/8.11")
def test_show_prints_a_stored_trace(tmp_path, capsys):
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    with sqlite3.connect(store) as db:
        (trace_id,) = db.execute(
            "SELECT trace_id FROM cases WHERE outcome = 'answered_practice' LIMIT 1"
        ).fetchone()
    assert main(["show", trace_id, "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"trace {trace_id} (seal verified)")
    assert "contract_and_proof_closed" in out and "(practice)" in out


def test_show_opens_with_the_verdict_and_escapes_what_would_reorder_the_question(
    tmp_path, capsys
):
    """Issue 20: `show CASE` heads its output with the verdict (the decisive cause of a
    refusal first), and prints a right-to-left override as its escape, never as itself."""
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    assert main(["show", "s18", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == [
        "verdict: refused",
        "decided at: replay: contract_closed_but_proof_refused: result_non_negative",
    ]
    spoof = tmp_path / "spoof.jsonl"
    question = "Mia has \u202e71\u202c stickers. She buys 4 more stickers. How many stickers?"
    spoof.write_text(json.dumps({"id": "spoof", "question": question}) + "\n")
    assert main(["run", str(spoof), "--store", str(store), "--quiet"]) in (0, 1)
    capsys.readouterr()
    assert main(["show", "spoof", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out and "Mia has \\u202e71\\u202c stickers." in out


@pytest.mark.obligation("ADR-0226/8.11", "ADR-0226/9.16")
def test_tampered_store_fails_verification_and_is_not_shown(tmp_path, capsys):
    """Issue 3: a tampered stored trace fails with a typed reason and is never served."""
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    trace_id = _trace_ids(store)[0]
    with sqlite3.connect(store) as db:
        (body,) = db.execute("SELECT body FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        forged = bytes(body).replace(b'"value":', b'"value": ', 1)
        db.execute("UPDATE traces SET body = ? WHERE trace_id = ?", (forged, trace_id))
    assert main(["verify", "--store", str(store)]) == 1
    assert f"{trace_id}: undecodable" in capsys.readouterr().out
    assert main(["show", trace_id, "--store", str(store)]) == 1
    assert "(seal verified)" not in capsys.readouterr().out


@pytest.mark.parametrize("args", [["run", "no/such/file.jsonl"], ["show", "0" * 64]])
def test_usage_errors(tmp_path, capsys, args):
    status = main([*args, "--store", str(tmp_path / "store.sqlite")])
    assert status in (1, 2)
    if args[0] == "run":
        assert status == 2 and "no such file" in capsys.readouterr().err


def test_a_file_that_is_not_a_store_is_a_usage_error(tmp_path, capsys):
    bogus = tmp_path / "bogus.sqlite"
    bogus.write_bytes(b"this is not sqlite" * 100)
    assert main(["verify", "--store", str(bogus)]) == 2
    assert "not a practice-loop store" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "practice_loop",
            "run",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrong_ids: []" in result.stdout


def test_a_command_imports_only_its_own_module():
    """``run`` loads none of the other commands' modules (issue 3: start-up counts in a
    run's throughput); a command of its own module loads that module; help lists them all."""
    script = (
        "import sys\n"
        "from practice_loop.cli import EXTENSION_COMMANDS, build_parser\n"
        "modules = {f'practice_loop.{module}' for module, _ in EXTENSION_COMMANDS.values()}\n"
        "build_parser('run')\n"
        "print(sorted(modules & set(sys.modules)))\n"
        "build_parser('prove-policy')\n"
        "print(sorted(modules & set(sys.modules)))\n"
        "print(build_parser().format_help())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    after_run, after_prove, help_text = result.stdout.split("\n", 2)
    assert after_run == "[]"
    assert after_prove == "['practice_loop.harness.prove_policy']"
    for command in ["run", "verify", "show", "vectors", "gate", "workbench", "fuzz",
                    "contracts", "policy-diff", "prove-policy"]:
        assert command in help_text


# --------------------------------------------------------------------------------------------
# Exit codes, machine output and progress (issue 15, docs/adr/0012)


def _sample_store(tmp_path, capsys) -> str:
    store = str(tmp_path / "store.sqlite")
    assert main(["run", "--store", store, "--quiet", "--json"]) == 0
    capsys.readouterr()
    return store


@pytest.mark.obligation("LOCAL-0012/exit_codes")
def test_an_internal_error_is_one_line_naming_its_log(tmp_path, capsys, monkeypatch):
    """docs/adr/0012: exit 3, one line on stderr, the traceback in the file it names."""
    import practice_loop.product.runner as runner

    def broken(*_: object) -> None:
        raise RuntimeError("planted failure")

    monkeypatch.setattr(runner, "read_question", broken)
    assert main(["run", "--store", str(tmp_path / "s.sqlite"), "--quiet"]) == 3
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith("practice-loop: internal error: RuntimeError: planted failure")
    log = line.rsplit("(details in ", 1)[1].rstrip(")")
    assert "Traceback" in Path(log).read_text() and "planted failure" in Path(log).read_text()
    Path(log).unlink()


@pytest.mark.obligation("LOCAL-0012/exit_codes")
def test_an_interrupted_run_prints_what_it_stored_and_exits_130(tmp_path, capsys, monkeypatch):
    """docs/adr/0012: Ctrl-C keeps every completed case, prints the summary of them, exit 130;
    what it stored verifies."""
    import practice_loop.product.runner as runner

    real = runner.practice_case
    calls = []

    def interrupted_on_the_fifth(frame):
        calls.append(frame)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(frame)

    monkeypatch.setattr(runner, "practice_case", interrupted_on_the_fifth)
    store = str(tmp_path / "s.sqlite")
    assert main(["run", "--store", store, "--quiet", "--json"]) == 130
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["interrupted"] is True and summary["cases"] == 4
    assert "interrupted after line 5: the 4 cases above are stored" in captured.err
    monkeypatch.setattr(runner, "practice_case", real)
    assert main(["verify", "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cases"] == 4


@pytest.mark.obligation("LOCAL-0012/exit_codes")
def test_sigint_to_a_real_run_exits_130_without_a_traceback(tmp_path):
    """docs/adr/0012: a real Ctrl-C (SIGINT) in the middle of a long run."""
    import signal
    import time

    sample = (resources.files("practice_loop") / "data" / "sample.jsonl").read_bytes()
    rows = [json.loads(line) for line in sample.splitlines()]
    source = tmp_path / "long.jsonl"
    with source.open("w") as handle:
        for copy in range(300):
            for row in rows:
                handle.write(json.dumps({**row, "id": f"{row['id']}-{copy}"}) + "\n")
    store = tmp_path / "s.sqlite"
    command = [sys.executable, "-m", "practice_loop", "run", str(source), "--store", str(store)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Signal once the run is in its loop (its first batch committed), not after a fixed time:
    # on a loaded machine the interpreter may still be starting at any fixed moment.
    deadline = time.monotonic() + 60
    query = "SELECT (SELECT count(*) FROM cases) + (SELECT count(*) FROM traces)"
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(sqlite3.Error):
            uri = f"file:{store}?mode=ro"
            with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=0)) as db:
                if db.execute(query).fetchone()[0] > 0:
                    break
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert "Traceback" not in err
    if process.returncode == 0:  # a fast machine finished before the signal: nothing to check
        pytest.skip("the run ended before SIGINT arrived")
    assert process.returncode == 130, err
    assert "interrupted after line" in err and "cases:" in out
    verify = subprocess.run(
        [sys.executable, "-m", "practice_loop", "verify", "--store", str(store), "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout[-2000:]


@pytest.mark.obligation("LOCAL-0012/exit_codes", "LOCAL-0012/never_conjured")
@pytest.mark.parametrize(
    "args, message",
    [
        (["verify", "--store", "{tmp}/typo.sqlite"], "typo.sqlite: no such store"),
        (["show", "s01", "--store", "{tmp}/typo.sqlite"], "typo.sqlite: no such store"),
        (["run", "--store", "{tmp}/no/dir.sqlite"], "the directory it would be in does not exist"),
        (["run", "{tmp}", "--store", "{tmp}/s.sqlite"], "is a directory, not a JSON-lines file"),
        (["run", "{tmp}/absent.jsonl", "--store", "{tmp}/s.sqlite"], "absent.jsonl: no such file"),
        (["workbench", "--port", "99999"], "not a port number (0 to 65535): '99999'"),
        (["run", "--wait", "-1"], "seconds must be between 0 and 86400"),
    ],
)
def test_usage_and_store_errors_exit_2_and_create_nothing(tmp_path, capsys, args, message):
    """docs/adr/0012: exit 2 with the exact message; no store is conjured."""
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    with pytest.raises(SystemExit) if args[0] == "workbench" or "--wait" in args else (
        contextlib.nullcontext()
    ) as exited:
        status = main(argv)
    if exited is not None:
        status = exited.value.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.obligation("LOCAL-0012/exit_codes")
def test_a_locked_store_is_exit_2_naming_the_wait(tmp_path, capsys):
    """docs/adr/0012: another writer holds the store; ``--wait`` bounds the wait."""
    store = _sample_store(tmp_path, capsys)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert main(["run", "--store", store, "--quiet", "--wait", "0.2"]) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert "locked by another process (waited 0.2 s; --wait sets how long)" in err


@pytest.mark.obligation("LOCAL-0012/one_meaning")
def test_verify_and_show_speak_json(tmp_path, capsys):
    """Issue 15 (10): ``--json`` on verify and show; show takes a case id or a trace id."""
    store = _sample_store(tmp_path, capsys)
    assert main(["verify", "--store", store, "--json"]) == 0
    verified = json.loads(capsys.readouterr().out)
    assert verified == {
        "valid": True,
        "cases": 43,
        "traces": 43,
        "failed_cases": 0,
        "orphaned_traces": 0,
        "failures": [],
        "interrupted": False,
    }
    assert main(["show", "s11", "--store", store, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["verified"] is True and shown["cases"] == ["s11"]
    assert shown["trace"]["outcome"]["value"] == 7
    assert main(["show", shown["trace_id"], "--store", store]) == 0
    assert capsys.readouterr().out.startswith(f"trace {shown['trace_id']} (seal verified)")
    assert main(["show", "nonesuch", "--store", store]) == 2
    assert "neither a stored case id nor a trace id" in capsys.readouterr().err


@pytest.mark.obligation("LOCAL-0012/exit_codes")
def test_run_prints_trace_ids_and_plain_progress_under_ci(tmp_path):
    """Issue 15 (10): a progress line with a total (plain lines under ``CI=true``); run can
    name each case's trace id."""
    import os

    env = {**os.environ, "CI": "true"}
    command = [sys.executable, "-m", "practice_loop", "run", "--store", str(tmp_path / "s.sqlite")]
    result = subprocess.run(
        [*command, "--trace-ids"], capture_output=True, text=True, env=env, check=True
    )
    assert "run: 43/43 (100%)" in result.stderr
    assert "\r" not in result.stderr
    first = result.stdout.splitlines()[0]
    case_id, trace_id = first.split("\t")
    assert case_id == "s01" and (trace_id == "-" or len(trace_id) == 64)
    verify = subprocess.run(
        [sys.executable, "-m", "practice_loop", "verify", "--store", str(tmp_path / "s.sqlite")],
        capture_output=True, text=True, env=env, check=True,
    )
    assert "verify: 43/43 (100%)" in verify.stderr


@pytest.mark.obligation("LOCAL-0012/exit_codes")
@pytest.mark.parametrize(
    ("missing", "status"),
    [("hypothesis", 2), ("practice_strategies", 3)],
    ids=["of_the_test_extra", "of_the_package_itself"],
)
def test_a_command_missing_a_module_of_the_test_extra_names_the_extra(
    monkeypatch, capsys, missing, status
):
    """A wheel installed without the `test` extra: prove-policy's first Hypothesis import
    fails, and the command says which extra to install (exit 2, a usage problem), never a
    traceback or 1 ("not proven"). A module of the package itself missing is an internal
    error (exit 3), never blamed on the extra."""
    import practice_loop

    policy = Path(practice_loop.__file__).parents[2] / "docs" / "examples"
    if not policy.is_dir():
        pytest.skip("needs a checkout: docs/examples holds the policy files")
    monkeypatch.setitem(sys.modules, missing, None)  # `import` of it raises ModuleNotFoundError
    code = main(["prove-policy", str(policy / "compute_budget.v2.json")])
    err = capsys.readouterr().err
    assert code == status and "Traceback" not in err
    if status == 2:
        assert err == (
            "practice-loop: prove-policy needs the 'test' extra (import of hypothesis halted; "
            "None in sys.modules): pip install 'practice-loop[test]'\n"
        )
    else:
        assert err.startswith("practice-loop: internal error: ModuleNotFoundError")


def test_the_test_extra_modules_are_every_module_the_test_extra_installs():
    """TEST_EXTRA_MODULES names the top-level modules of exactly the distributions the
    `test` extra lists, as the installed metadata says."""
    import tomllib
    from importlib.metadata import packages_distributions

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from practice_loop.cli import TEST_EXTRA_MODULES

    root = Path(__file__).resolve().parents[2]
    extra = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = {
        canonicalize_name(Requirement(text).name)
        for text in extra["project"]["optional-dependencies"]["test"]
    }
    providing = {
        module
        for module, distributions in packages_distributions().items()
        if any(canonicalize_name(name) in wanted for name in distributions)
        and not module.startswith("_")
    }
    # Each listed distribution provides one of the names, and each name is one's.
    assert TEST_EXTRA_MODULES <= providing, TEST_EXTRA_MODULES - providing
    for name in wanted:
        modules = {m for m, d in packages_distributions().items()
                   if name in {canonicalize_name(x) for x in d}}  # fmt: skip
        assert modules & TEST_EXTRA_MODULES, (name, sorted(modules))


def _commands() -> dict[str, argparse.ArgumentParser]:
    from practice_loop.cli import build_parser

    parser = build_parser(None)
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _options(command: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in command._actions if not isinstance(a, argparse._HelpAction)]


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_says_what_it_does_its_defaults_and_its_exit_statuses(name):
    """Issue 18: each command's --help has a description naming its exit statuses, and every
    option with a default shows it."""
    command = _commands()[name]
    said = f"{command.description or ''} {command.epilog or ''}".lower()
    assert command.description and "exit status" in said
    quiet = (None, False, argparse.SUPPRESS, [], ())
    unshown = [a.option_strings for a in _options(command)
               if a.default not in quiet and "default" not in (a.help or "")]  # fmt: skip
    assert not unshown, unshown
    shown_twice = re.findall(r"\(default[^()]*\)\s*\(default[^()]*\)", command.format_help())
    assert not shown_twice, shown_twice


def test_one_vocabulary_for_parallelism_and_time_bounds():
    """Issue 18: parallelism is -j/--jobs in every command; a time bound is --minutes,
    --seconds, --X-seconds or --timeout, and its help names the clock (wall-clock or CPU)."""
    for name, command in _commands().items():
        for action in _options(command):
            flags = action.option_strings
            assert not {"-n", "--workers", "--max-seconds"} & set(flags), (name, flags)
            if "--jobs" in flags:
                assert flags == ["-j", "--jobs"], (name, flags)
            timed = [f for f in flags if f in ("--minutes", "--seconds", "--timeout", "--wait")
                     or f.endswith("-seconds")]  # fmt: skip
            if timed:
                assert re.search(r"wall[- ]clock|CPU", action.help or ""), (name, flags)


_DOCUMENTED = re.compile(r"`(?:practice-loop|python -m practice_loop) ([a-z-]+)([^`]*)`")


def test_every_command_and_option_the_docs_name_exists():
    """Issue 18: the README's table and docs/ follow the command line: each
    ``practice-loop COMMAND --option`` they show is one the parser has, so a renamed option
    (``-n`` to ``-j``, ``--max-seconds`` to ``--seconds``) cannot linger in them."""
    root = Path(__file__).resolve().parents[2]
    commands = _commands()
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "tests/README.md"]
    unknown = []
    for page in pages:
        for command, rest in _DOCUMENTED.findall(page.read_text(encoding="utf-8")):
            if command not in commands:
                unknown.append(f"{page.name}: practice-loop {command}")
                continue
            flags = {f for a in _options(commands[command]) for f in a.option_strings}
            flags |= {"-h", "--help"}
            for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", rest):
                if flag not in flags:
                    unknown.append(f"{page.name}: practice-loop {command} {flag}")
    # A row of the README's table is about its own command: an option it names in backticks
    # (`--seconds 240`, say) is that command's.
    for row in (root / "README.md").read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `practice-loop ([a-z-]+)", row)
        if found is None:
            continue
        flags = {f for a in _options(commands[found[1]]) for f in a.option_strings}
        for flag in re.findall(r"`(--?[a-zA-Z][\w-]*)", row):
            if flag not in flags:
                unknown.append(f"README.md, the row of {found[1]}: {flag}")
    assert not unknown, unknown
