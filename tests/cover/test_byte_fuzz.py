"""``practice-loop fuzz-bytes`` (issue 19, docs/nightly-fuzzing.md "Byte fuzzing"): every
target takes its seeds without a finding, each oracle fails when the rule it holds is broken,
and a campaign seeds its corpus, runs libFuzzer, saves each finding with the command that
replays it, and says so in its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from practice_loop.harness import byte_fuzz
from practice_loop.harness.byte_fuzz import TARGETS, AcceptedCorruption
from practice_loop.kernel import canonical_json
from practice_loop.kernel.identity import MAX_DEPTH

SAMPLE_TRACE = byte_fuzz._sample_traces()[0]


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_seed_is_taken_without_a_finding(name):
    """The seeds are the shipped, valid and invalid inputs: each gets its typed answer."""
    seeds = [seed for seed in TARGETS[name].seeds() if len(seed) <= TARGETS[name].max_len]
    assert seeds
    for seed in seeds:
        TARGETS[name].check(seed)


@pytest.mark.parametrize(
    ("lenient", "data", "found"),
    [
        (lambda data: json.loads(data), b'{"b":1,"a":2}', "not canonical"),
        (lambda data: json.loads(data), b"[1, 2]", "not canonical"),
        (lambda data: 1.5, b"1.5", "a float"),
        (lambda data: [1.0], b"[1.0]", "a float"),
        (lambda data: 2**53, b"9007199254740992", "outside the safe range"),
        (lambda data: "\ud800", b'"\\ud800"', "a lone surrogate"),
        (lambda data: _nested(MAX_DEPTH + 1), b"[]", "nesting beyond MAX_DEPTH"),
    ],
)
def test_the_canonical_oracle_catches_a_decoder_that_accepts_too_much(
    monkeypatch, lenient, data, found
):
    byte_fuzz.check_canonical(data)  # the real decoder refuses each of these
    monkeypatch.setattr(byte_fuzz, "decode_canonical", lenient)
    with pytest.raises(AcceptedCorruption, match=found):
        byte_fuzz.check_canonical(data)


def _prose_edited(data: bytes) -> bytes:
    document = json.loads(data)
    document["explanation"] += " (edited)"
    return canonical_json(document)


def test_the_trace_oracle_catches_a_replay_that_misses_edited_prose(monkeypatch):
    """Edited prose keeps every identity, so only the replay refuses it; a replay that lets it
    through leaves bytes that are not the loop's own, and the oracle says so."""
    edited = _prose_edited(SAMPLE_TRACE)
    byte_fuzz.check_trace(SAMPLE_TRACE)
    byte_fuzz.check_trace(edited)
    monkeypatch.setattr(byte_fuzz, "replay_divergence", lambda trace: None)
    byte_fuzz.check_trace(SAMPLE_TRACE)
    with pytest.raises(AcceptedCorruption, match="not the loop's own"):
        byte_fuzz.check_trace(edited)


def test_a_trace_the_loop_seals_is_held_to_verification_and_replay(monkeypatch):
    question = json.loads(byte_fuzz._sample_lines("sample.jsonl")[0])["question"]
    byte_fuzz.check_question(question.encode("utf-8"))
    monkeypatch.setattr(byte_fuzz, "replay_divergence", lambda trace: "diverged")
    with pytest.raises(AcceptedCorruption, match="does not replay"):
        byte_fuzz.check_question(question.encode("utf-8"))


def test_an_exception_that_is_not_a_typed_refusal_is_a_finding(monkeypatch, tmp_path):
    """A typed refusal is the surface's answer; anything else escapes the target, which is
    what libFuzzer reports, and what ``replay`` reports for a saved input."""
    saved = tmp_path / "input.bin"
    saved.write_bytes(b"Sam has 15 marbles. He loses 6 s. How many marbles does Sam have?")
    assert byte_fuzz.replay("question", saved) == (
        False,
        f"no finding: question handles these {len(saved.read_bytes())} bytes",
    )

    def raising(question):
        raise KeyError("planted")

    monkeypatch.setattr(byte_fuzz, "read_question", raising)
    with pytest.raises(KeyError):
        byte_fuzz.check_question(saved.read_bytes())
    assert byte_fuzz.replay("question", saved) == (True, "KeyError: 'planted'")


def _fuzz_bytes(*arguments: str, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "practice_loop", "fuzz-bytes", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_a_short_campaign_seeds_its_corpus_fuzzes_and_reports(tmp_path):
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    done = _fuzz_bytes(
        "--target", "policy", "--seconds", "2", "--corpus", str(corpus), "--out", str(out)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "byte-fuzz.json").read_text())
    (run,) = report["targets"]
    assert run["target"] == "policy" and run["findings"] == [] and run["fault"] is None
    assert run["executions"] > 0 and run["corpus_before"] > 0
    assert run["corpus_after"] >= run["corpus_before"]
    assert "atheris" in report["context"]
    assert "| `policy` |" in (out / "byte-fuzz.md").read_text()


PLANT = """
    # A planted defect, for this test only: the decoder crashes on a list that closes twice.
    import practice_loop.kernel.identity as identity

    _decode = identity.decode_canonical

    def planted(data):
        if type(data) is bytes and data.startswith(b"[") and b"]]" in data:
            raise KeyError("planted")
        return _decode(data)

    identity.decode_canonical = planted
"""


def test_a_finding_is_saved_with_the_command_that_replays_it(tmp_path):
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(textwrap.dedent(PLANT))
    env = {"PYTHONPATH": str(plant)}
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    done = _fuzz_bytes(
        "--target", "canonical", "--seconds", "60", "--corpus", str(corpus), "--out", str(out),
        env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (run,) = json.loads((out / "byte-fuzz.json").read_text())["targets"]
    (finding,) = run["findings"]
    assert finding["kind"] == "crash" and "KeyError: 'planted'" in finding["detail"]
    reproducer = Path(finding["reproducer"])
    assert b"]]" in reproducer.read_bytes()
    assert finding["replay"] in reproducer.with_suffix(".md").read_text()
    assert finding["replay"] in done.stdout
    replay = ["--target", "canonical", "--replay", str(reproducer)]
    again = _fuzz_bytes(*replay, env=env)
    assert again.returncode == 1 and "KeyError" in again.stdout
    fixed = _fuzz_bytes(*replay)  # without the plant: the finding is gone
    assert fixed.returncode == 0 and fixed.stdout.startswith("no finding")


@pytest.mark.parametrize(
    "arguments",
    [
        ["--replay", "nowhere.bin"],
        ["--target", "canonical", "--replay", "nowhere.bin"],
        ["--target", "canonical", "--seconds", "0"],
        ["--target", "nothing"],
    ],
)
def test_usage_errors_exit_2(arguments):
    done = _fuzz_bytes(*arguments)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
