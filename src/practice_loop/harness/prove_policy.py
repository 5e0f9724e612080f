"""``practice-loop prove-policy FILE [FILE...]``: prove a candidate set of policy versions
keeps every invariant the ADRs demand, and show how its decisions differ from the versions
in force and from any registered version ``--against`` names.

A set holds one file per kind that changes (``compute_budget``, ``search_gate``,
``candidate_operators``); the version in force stands for every kind not given. Each file is
held to its kind's invariants (``policy_compare.KINDS``: ``prove_budget``, ``prove_gate``,
``prove_operators``), each naming its clause; the set to the invariants that tie the kinds
together (``policy_set``). Table invariants read every cell; property invariants run the
kernel's own functions under the candidate on Hypothesis-generated inputs
(``practice_strategies.chains``, derandomized so that a report reproduces). Differences are
listed row by row, on generated inputs and, where CrossHair is installed, by ``crosshair
diffbehavior``; the golden vectors of the versions in force must still reproduce. Exit 0
only when every invariant holds and no vector moved (docs/proving-policy-versions.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .policy_adopt import (
    AdoptError,
    build_patch,
    patch_path_problem,
    plan_adoption,
    write_atomically,
)
from .policy_compare import KINDS, AgainstError, Comparison, compare, versions_to_compare
from .policy_file import PolicyFileError, PolicyTable, load_policy_file
from .policy_invariants import InvariantResult, InvariantStatus, run_invariants
from .policy_set import PolicySet, PolicySetError, check_cross_policy, kind_of
from .prove_budget import DEFAULT_EXAMPLES
from .report_context import context_line, run_context

DEFAULT_CROSSHAIR_SECONDS = 10.0
DEFAULT_OUT = Path("policy-report")


def _held(results: Sequence[InvariantResult]) -> bool:
    return all(result.status is InvariantStatus.HELD for result in results)


@dataclasses.dataclass(frozen=True, slots=True)
class Proof:
    """One candidate file: refused with its reason, or judged by its kind's invariants and
    compared with the version in force (first) and each version named."""

    source: str
    kind: str | None
    version: str | None
    policy_id: str | None
    refusal: PolicyFileError | None
    invariants: tuple[InvariantResult, ...]
    comparisons: tuple[Comparison, ...]

    @property
    def holds(self) -> bool:
        return self.refusal is None and _held(self.invariants)

    @property
    def differences(self) -> tuple[Any, ...]:
        """The differences from the version in force."""
        return self.comparisons[0].differences if self.comparisons else ()

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "policy": self.kind,
            "version": self.version,
            "policy_id": self.policy_id,
            "holds": self.holds,
            "refusal": None
            if self.refusal is None
            else {
                "reason": self.refusal.reason.value,
                "where": self.refusal.where,
                "detail": self.refusal.detail,
            },
            "invariants": [result.to_json() for result in self.invariants],
            "comparisons": [comparison.to_json() for comparison in self.comparisons],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class SetProof:
    """A candidate set: each file's proof, the cross-policy invariants (not run when a file
    is refused), and the golden vectors, checked once for the whole set."""

    proofs: tuple[Proof, ...]
    policies: str | None  # the set's versions, in force ones marked; None when one is refused
    cross_policy: tuple[InvariantResult, ...]
    vectors_checked: bool
    vectors_moved: tuple[str, ...]

    @property
    def proven(self) -> bool:
        return (
            all(proof.holds for proof in self.proofs)
            and self.policies is not None
            and _held(self.cross_policy)
            and self.vectors_checked
            and not self.vectors_moved
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "proven": self.proven,
            "set": self.policies,
            "candidates": [proof.to_json() for proof in self.proofs],
            "cross_policy": [result.to_json() for result in self.cross_policy],
            "golden_vectors": {"checked": self.vectors_checked, "moved": list(self.vectors_moved)},
        }


def _vectors_moved() -> tuple[str, ...]:
    from .vectors import check_vectors

    return tuple(drift.describe() for drift in check_vectors())


def prove_table(
    table: PolicyTable,
    *,
    against: Sequence[str] = (),
    examples: int = DEFAULT_EXAMPLES,
    crosshair_seconds: float = DEFAULT_CROSSHAIR_SECONDS,
    source: Path | None = None,
) -> Proof:
    """One loaded table: its kind's invariants, and its comparison with the version in force
    and with each registered version of its kind in ``against`` (already checked)."""
    kind = KINDS[kind_of(table)]
    built = kind.build(table)
    policy_id = None if isinstance(built, Exception) else kind.identity(built)
    results = tuple(run_invariants(kind.invariants, table, built, examples))
    versions = [kind.in_force, *(version for version in against if version != kind.in_force)]
    comparisons = tuple(
        compare(
            kind,
            table,
            built,
            version,
            examples=examples,
            crosshair_seconds=crosshair_seconds,
            source=source,
        )
        for version in versions
    )
    return Proof(table.source, kind.name, table.version, policy_id, None, results, comparisons)


def _refused(source: Path, refusal: PolicyFileError) -> Proof:
    return Proof(str(source), None, None, None, refusal, (), ())


def prove(
    source: Path,
    *,
    against: Sequence[str] = (),
    examples: int = DEFAULT_EXAMPLES,
    crosshair_seconds: float = DEFAULT_CROSSHAIR_SECONDS,
) -> Proof:
    """The candidate file ``source`` on its own; ``OSError`` when it cannot be read."""
    try:
        table = load_policy_file(source)
    except PolicyFileError as refusal:
        return _refused(source, refusal)
    return prove_table(
        table,
        against=against,
        examples=examples,
        crosshair_seconds=crosshair_seconds,
        source=source,
    )


def prove_set(
    sources: Sequence[Path],
    *,
    against: Sequence[str] = (),
    examples: int = DEFAULT_EXAMPLES,
    crosshair_seconds: float = DEFAULT_CROSSHAIR_SECONDS,
    check_golden_vectors: bool = True,
) -> SetProof:
    """The candidate set of ``sources``. ``OSError`` when a file cannot be read;
    ``PolicySetError`` for a kind given twice, ``AgainstError`` for a version that cannot be
    compared with (both usage errors, raised before anything is proved)."""
    loaded: list[tuple[Path, PolicyTable | PolicyFileError]] = []
    for source in sources:
        try:
            loaded.append((source, load_policy_file(source)))
        except PolicyFileError as refusal:
            loaded.append((source, refusal))
    tables = [table for _, table in loaded if not isinstance(table, PolicyFileError)]
    policies = PolicySet.of(tables)
    chosen = versions_to_compare(against, {kind_of(table): table.version for table in tables})
    proofs = tuple(
        _refused(source, table)
        if isinstance(table, PolicyFileError)
        else prove_table(
            table,
            against=chosen[kind_of(table)],
            examples=examples,
            crosshair_seconds=crosshair_seconds,
            source=source,
        )
        for source, table in loaded
    )
    complete = len(tables) == len(loaded)
    return SetProof(
        proofs,
        policies.describe() if complete else None,
        tuple(check_cross_policy(policies, examples)) if complete else (),
        check_golden_vectors,
        _vectors_moved() if check_golden_vectors else (),
    )


# --------------------------------------------------------------------------------------------
# Reports and the command.


def _invariant_table(results: Sequence[InvariantResult]) -> list[str]:
    lines = ["| invariant | clause | status | violations |", "|---|---|---|---|"]
    for result in results:
        shown = "; ".join(result.violations).replace("|", "\\|")
        lines.append(f"| `{result.name}` | {result.clause} | {result.status.value} | {shown} |")
    return lines


def _proof_markdown(proof: Proof) -> list[str]:
    lines = [f"## {proof.source}", ""]
    if proof.refusal is not None:
        return [*lines, f"The file is refused: `{proof.refusal}`.", ""]
    lines += [f"- policy: `{proof.kind}`", f"- version: `{proof.version}`"]
    lines += [f"- policy_id: `{proof.policy_id}`", "", "### Invariants", ""]
    lines += _invariant_table(proof.invariants)
    for comparison in proof.comparisons:
        lines += ["", f"### Differences from {comparison.version}", ""]
        if comparison.differences:
            lines += [
                f"| found by | decision | {comparison.version} | candidate |",
                "|---|---|---|---|",
            ]
            lines += [
                f"| {d.found_by} | {d.gate} | {d.in_force} | {d.candidate} |".replace("\n", " ")
                for d in comparison.differences
            ]
        else:
            lines.append("None.")
        lines += ["", f"CrossHair diffbehavior: {comparison.crosshair}"]
    return [*lines, ""]


def render_markdown(proof: SetProof, context: dict[str, str]) -> str:
    verdict = "PROVEN" if proof.proven else "NOT PROVEN"
    sources = ", ".join(candidate.source for candidate in proof.proofs)
    lines = [f"# prove-policy: {sources}", "", f"**{verdict}**", ""]
    lines += [f"Made with {context_line(context)}.", ""]
    if proof.policies is not None:
        lines += [f"The set: {proof.policies}.", ""]
    for candidate in proof.proofs:
        lines += _proof_markdown(candidate)
    lines += ["## Across the set", ""]
    if proof.policies is None:
        lines.append("Not run: a file of the set is refused.")
    else:
        lines += _invariant_table(proof.cross_policy)
    lines += ["", "## Golden vectors", ""]
    if not proof.vectors_checked:
        lines.append("Not checked.")
    elif proof.vectors_moved:
        lines += [f"- {moved}" for moved in proof.vectors_moved]
    else:
        lines.append("Every golden vector of the versions in force reproduces unchanged.")
    return "\n".join(lines) + "\n"


def _print_results(results: Sequence[InvariantResult]) -> None:
    for result in results:
        print(f"{result.status.value:8} {result.name} ({result.clause})")
        for violation in result.violations:
            print(f"         - {violation}")


def _print_summary(proof: SetProof) -> None:
    for candidate in proof.proofs:
        print(f"{candidate.source}:")
        if candidate.refusal is not None:
            print(f"refused: {candidate.refusal}")
            continue
        _print_results(candidate.invariants)
        for comparison in candidate.comparisons:
            for difference in comparison.differences:
                if difference.found_by == "crosshair":
                    print(f"differs from {comparison.version} (crosshair): {difference.gate}")
                else:
                    print(
                        f"differs from {comparison.version} ({difference.found_by})"
                        f" {difference.gate}: {difference.in_force} -> {difference.candidate}"
                    )
            print(f"crosshair diffbehavior against {comparison.version}: {comparison.crosshair}")
    if proof.policies is not None:
        print(f"across the set ({proof.policies}):")
        _print_results(proof.cross_policy)
    print(f"golden vectors moved: {len(proof.vectors_moved)}")
    print("PROVEN" if proof.proven else "NOT PROVEN")


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "prove-policy",
        help="prove a candidate set of policy files (compute_budget, search_gate,"
        " candidate_operators) and show how it differs from the versions in force",
        description="Load one policy file per kind that changes (the version in force stands "
        "for the others), check every invariant of each kind and of the set (each naming its "
        "ADR clause) on whole tables and on generated inputs through the real kernel, compare "
        "each candidate's decisions with the version in force and with each registered "
        "version --against names (row by row, on generated inputs and through CrossHair), "
        "and write proof.md and proof.json (docs/proving-policy-versions.md). Exit status: 0 "
        "proven; 1 not proven (each broken invariant is named) or a file is refused with its "
        "reason; 2 a usage error (a file cannot be read, a kind is given twice, a version "
        "--against names cannot be compared with, the test extra is not installed, or the --adopt "
        "PATCH cannot be written); 3 proven, but --adopt cannot make the patch (the reason is "
        "named: an anchor line is missing, a version is already registered, ...).",
    )
    parser.add_argument(
        "files",
        type=Path,
        nargs="+",
        metavar="FILE",
        help="a policy file, one per kind (docs/proving-policy-versions.md)",
    )
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="VERSION",
        help="also list the differences from this registered version of a candidate's kind"
        " (e.g. compute_budget.v1); repeatable",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"the report folder (default {DEFAULT_OUT}/)",
    )
    parser.add_argument(
        "--examples",
        type=_positive_int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"inputs generated for the property invariants (default {DEFAULT_EXAMPLES})",
    )
    parser.add_argument(
        "--crosshair-seconds",
        type=float,
        default=DEFAULT_CROSSHAIR_SECONDS,
        metavar="S",
        help="CrossHair diffbehavior's search bound for each comparison, in CPU seconds; 0 "
        f"skips it (default {DEFAULT_CROSSHAIR_SECONDS:g})",
    )
    parser.add_argument(
        "--adopt",
        type=Path,
        default=None,
        metavar="PATCH",
        help="when the set is proven, write to PATCH one unified diff against the current "
        "commit that registers each new version in the kernel, puts the set in force (with a "
        "new candidate_operators version when a budget or gate pin moves) and regenerates the "
        "golden vectors; review it, then `git apply PATCH`. Nothing is applied, and nothing "
        "is written unless the set is proven",
    )
    parser.set_defaults(handler=run_command)
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def run_command(args: argparse.Namespace) -> int:
    """Exit 0 when proven (and the patch written, with --adopt), 1 when not, 2 on a usage
    error, 3 when a proven set cannot be adopted."""
    if args.crosshair_seconds < 0:
        print("practice-loop prove-policy: --crosshair-seconds must be >= 0", file=sys.stderr)
        return 2
    adopt: Path | None = getattr(args, "adopt", None)
    # Checked before proving, which takes a while: a patch that cannot be written is a
    # usage error, not a finding.
    problem = None if adopt is None else patch_path_problem(adopt)
    if problem is not None:
        shown = f"practice-loop prove-policy: cannot write --adopt {adopt}: {problem}"
        print(shown, file=sys.stderr)
        return 2
    try:
        proof = prove_set(
            args.files,
            against=args.against,
            examples=args.examples,
            crosshair_seconds=args.crosshair_seconds,
        )
    except OSError as error:
        print(f"practice-loop prove-policy: cannot read {error.filename}: {error}", file=sys.stderr)
        return 2
    except (PolicySetError, AgainstError) as error:
        print(f"practice-loop prove-policy: {error}", file=sys.stderr)
        return 2
    context = run_context(Path.cwd(), "crosshair-tool")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "proof.json").write_text(
            json.dumps({**proof.to_json(), "context": context}, indent=2, sort_keys=True) + "\n",
            "utf-8",
        )
        (args.out / "proof.md").write_text(render_markdown(proof, context), "utf-8")
    except OSError as error:
        print(f"practice-loop prove-policy: cannot write {args.out}: {error}", file=sys.stderr)
        return 2
    _print_summary(proof)
    print(f"reports: {args.out / 'proof.md'}, {args.out / 'proof.json'}")
    if not proof.proven:
        if adopt is not None:
            print(f"no patch written to {adopt}: the set is not proven")
        return 1
    return 0 if adopt is None else _adopt(args.files, adopt)


def _adopt(files: Sequence[Path], patch: Path) -> int:
    """Write the patch that puts the proven set of ``files`` in force."""
    try:
        policies = PolicySet.of([load_policy_file(source) for source in files])
        text = build_patch(plan_adoption(policies))
    except AdoptError as error:
        print(f"practice-loop prove-policy: cannot adopt the set: {error}", file=sys.stderr)
        return 3
    try:
        write_atomically(patch, text)
    except OSError as error:
        print(f"practice-loop prove-policy: cannot write --adopt {patch}: {error}", file=sys.stderr)
        return 2
    print(f"adoption patch: {patch} (review it, then: git apply {patch})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="practice-loop")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))
