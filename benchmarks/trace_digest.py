"""One SHA-256 over the kernel's output for every GSM8K training question and every question
of the shipped sample: the check that a refactor moved no byte (issue 16).

    python benchmarks/trace_digest.py [--gsm8k PATH]

For each question, in file order (the GSM8K file first, then the sample), the digest takes a
tag and the canonical bytes of what the kernel answered, each length-prefixed: ``T`` and the
sealed trace's bytes, ``S`` and a stage refusal's bytes, or ``R`` and the reader's refusal
reason. Prints the count of each tag and the hex digest; run it on two checkouts and compare.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from importlib import resources
from pathlib import Path

from practice_loop.kernel import SealedPracticeTrace, practice_case
from practice_loop.product.reader import ReaderRefusal, read_question

DEFAULT_GSM8K = Path(__file__).resolve().parents[1].parent / "shared/data/gsm8k/train.jsonl"


def _questions(gsm8k: Path) -> list[str]:
    sample = resources.files("practice_loop") / "data" / "sample.jsonl"
    lines = gsm8k.read_text("utf-8").splitlines() + sample.read_text("utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def trace_digest(questions: list[str]) -> tuple[str, dict[str, int]]:
    total = hashlib.sha256()
    counts = {"T": 0, "S": 0, "R": 0}
    for question in questions:
        frame = read_question(question)
        if type(frame) is ReaderRefusal:
            tag, data = "R", frame.reason.value.encode("ascii")
        else:
            outcome = practice_case(frame)
            tag = "T" if type(outcome) is SealedPracticeTrace else "S"
            data = outcome.canonical_bytes()
        counts[tag] += 1
        total.update(tag.encode("ascii") + len(data).to_bytes(8, "big") + data)
    return total.hexdigest(), counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gsm8k", type=Path, default=DEFAULT_GSM8K)
    args = parser.parse_args()
    if not args.gsm8k.is_file():
        print(f"GSM8K file not found at {args.gsm8k}")
        return 2
    found, counts = trace_digest(_questions(args.gsm8k))
    print(f"questions: {sum(counts.values())} (traces {counts['T']}, stage refusals "
          f"{counts['S']}, reader refusals {counts['R']})")
    print(f"sha256: {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
