"""The three policy kinds side by side, and how a candidate's decisions differ from any
registered version of its kind (issue 21).

``KINDS`` is the one table of what differs between kinds: their invariants, how a table
becomes a kernel value, the registry of versions, and the three ways to compare two versions
(every cell of the tables, the kernel's decisions on generated inputs, and ``crosshair
diffbehavior`` between the kernel's decision function under each). ``prove-policy`` compares
every candidate with the version in force, and with each version ``--against`` names.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..kernel import RecordError, operator_set_id
from ..kernel import budget as budget_module
from ..kernel import gate as gate_module
from . import prove_budget, prove_gate, prove_operators
from .policy_file import (
    BUDGET_POLICY_KIND,
    GATE_IN_FORCE,
    GATE_POLICY_KIND,
    OPERATORS_IN_FORCE,
    OPERATORS_POLICY_KIND,
    VERSION_IN_FORCE,
    gate_table_of,
    kernel_gate_policy,
    kernel_operator_set,
    kernel_policy,
    load_policy_file,
    operator_table_of,
    table_of,
)
from .policy_invariants import Difference, Invariant


@dataclasses.dataclass(frozen=True, slots=True)
class PolicyKind:
    name: str
    invariants: tuple[Invariant, ...]
    in_force: str
    build: Callable[[Any], Any]  # a table: its kernel value, or the RecordError refusing it
    identity: Callable[[Any], str]  # a kernel value: policy_id or operator_set_id
    registered: Callable[[], Mapping[str, Any]]  # version: kernel value, read when asked
    table_of: Callable[[Any], Any]  # a kernel value as a table
    table_differences: Callable[[Any, Any], list[Difference]]
    generated_differences: Callable[[Any, int, Any], list[Difference]]
    crosshair_module: str  # the old and new decision functions crosshair compares

    def value_of(self, version: str | None, path: str | None) -> Any:
        """A registered version's kernel value, or the kernel value of the file at ``path``;
        read by the module CrossHair imports."""
        if version is not None:
            return self.registered()[version]
        assert path is not None
        return self.build(load_policy_file(Path(path)))


# Each pair returns values that compare by content: crosshair diffbehavior takes two values
# of one type whose __eq__ is object's for equal (behavior_compare.flexible_equal), so two
# different members of an Enum would never differ. Enum results are returned as their codes.
_BUDGET_CROSSHAIR = """
from practice_loop.kernel import SearchGateStatus
from practice_loop.kernel.budget import BudgetVerdict, budget_verdict


def old(gate_status: SearchGateStatus, gate_reason_code: str) -> BudgetVerdict:
    return budget_verdict(gate_status, gate_reason_code, _OLD)


def new(gate_status: SearchGateStatus, gate_reason_code: str) -> BudgetVerdict:
    return budget_verdict(gate_status, gate_reason_code, _NEW)
"""

# The rules are code (docs/adr/0002); a gate version changes the status of a reason and the
# eligible reason of a kind, both read here through the kernel's own rule function. The rules
# are first-match-wins, so five contexts stand for all sixteen of the four flags (a malformed
# assessment, malformed residuals, a runnable assessment, a context that is not the
# projection, the projection), and ``count`` copies of one residual reach every way the rules
# read a residual list (empty, holding an unclassified one, more than one, one residual's
# kind and evidence). Given the four flags and a tuple of residuals, CrossHair spent its
# seconds without reaching the one-residual rules at all.
_GATE_CROSSHAIR = """
from practice_loop.kernel import ResidualKind
from practice_loop.kernel.gate import gate_reason_under

_CONTEXTS = (  # (assessment_ok, residuals_ok, runnable, projected)
    (False, True, False, True),
    (True, False, False, True),
    (True, True, True, True),
    (True, True, False, False),
    (True, True, False, True),
)


def _decided(policy, context, count, kind, evidence):
    flags = _CONTEXTS[min(max(context, 0), len(_CONTEXTS) - 1)]
    residuals = ((kind, evidence),) * min(max(count, 0), 2)
    reason = gate_reason_under(policy, *flags, residuals)
    return reason.value, policy.status_for(reason).value


def old(context: int, count: int, kind: ResidualKind, evidence: bool) -> tuple[str, str]:
    return _decided(_OLD, context, count, kind, evidence)


def new(context: int, count: int, kind: ResidualKind, evidence: bool) -> tuple[str, str]:
    return _decided(_NEW, context, count, kind, evidence)
"""

# ADR-0231 §7.3.17-20: what each operator's static constraints admit on a serial budget.
_OPERATORS_CROSSHAIR = """
from practice_loop.kernel.operators import attempt_charge_failure


def _admitted(manifest, attempt_index, max_candidates, max_depth, max_steps):
    if min(attempt_index, max_candidates, max_depth, max_steps) < 0:
        return ()  # outside attempt_charge_failure's precondition on both sides
    return tuple(
        _code(
            attempt_charge_failure(
                attempt_index,
                (max_candidates, max_depth, max_steps, 1),
                (row.budget_charge.candidates, row.budget_charge.steps),
                (row.depth, row.max_attempts_per_run, row.max_parallelism),
            )
        )
        for row in manifest.operators
    )


def _code(refused):
    return None if refused is None else refused.value


def old(attempt_index: int, max_candidates: int, max_depth: int, max_steps: int) -> tuple:
    return _admitted(_OLD, attempt_index, max_candidates, max_depth, max_steps)


def new(attempt_index: int, max_candidates: int, max_depth: int, max_steps: int) -> tuple:
    return _admitted(_NEW, attempt_index, max_candidates, max_depth, max_steps)
"""


KINDS: Mapping[str, PolicyKind] = {
    BUDGET_POLICY_KIND: PolicyKind(
        BUDGET_POLICY_KIND,
        prove_budget.INVARIANTS,
        VERSION_IN_FORCE.version,
        kernel_policy,
        lambda policy: policy.policy_id,
        lambda: budget_module.BUDGET_POLICIES,
        table_of,
        prove_budget.table_differences,
        prove_budget.generated_differences,
        _BUDGET_CROSSHAIR,
    ),
    GATE_POLICY_KIND: PolicyKind(
        GATE_POLICY_KIND,
        prove_gate.GATE_INVARIANTS,
        GATE_IN_FORCE.version,
        kernel_gate_policy,
        lambda policy: policy.policy_id,
        lambda: gate_module.GATE_POLICIES,
        gate_table_of,
        prove_gate.gate_table_differences,
        prove_gate.gate_generated_differences,
        _GATE_CROSSHAIR,
    ),
    OPERATORS_POLICY_KIND: PolicyKind(
        OPERATORS_POLICY_KIND,
        prove_operators.OPERATOR_INVARIANTS,
        OPERATORS_IN_FORCE.version,
        kernel_operator_set,
        operator_set_id,
        lambda: prove_operators.OPERATOR_SETS,
        operator_table_of,
        prove_operators.operator_table_differences,
        prove_operators.operator_generated_differences,
        _OPERATORS_CROSSHAIR,
    ),
}


class AgainstError(ValueError):
    """A version ``--against`` names cannot be compared with (a usage error)."""


def kind_of_version(version: str) -> str | None:
    """The kind a version string names (``compute_budget.v1``: ``compute_budget``)."""
    prefix = version.rsplit(".", 1)[0]
    return prefix if prefix in KINDS else None


def versions_to_compare(
    against: Sequence[str], candidates: Mapping[str, str]
) -> dict[str, list[str]]:
    """For each candidate's kind, the registered versions it is compared with: the version in
    force first, then each one ``against`` names, once. ``candidates`` maps each kind given
    to its candidate's version. ``AgainstError`` for a version that is not registered, or
    whose kind no candidate has."""
    chosen = {kind: [KINDS[kind].in_force] for kind in candidates}
    for version in against:
        kind = kind_of_version(version)
        if kind is None:
            raise AgainstError(f"{version!r} names no policy kind ({', '.join(KINDS)})")
        registered = KINDS[kind].registered()
        if version not in registered:
            raise AgainstError(
                f"{version} is not a registered {kind} version ({', '.join(registered)})"
            )
        if kind not in chosen:
            raise AgainstError(f"{version}: no {kind} candidate to compare it with")
        if version not in chosen[kind]:
            chosen[kind].append(version)
    return chosen


@dataclasses.dataclass(frozen=True, slots=True)
class Comparison:
    """How a candidate's decisions differ from one registered version of its kind."""

    version: str
    differences: tuple[Difference, ...]
    crosshair: str

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "differences": [difference.to_json() for difference in self.differences],
            "crosshair": self.crosshair,
        }


def compare(
    kind: PolicyKind,
    table: Any,
    built: Any,
    version: str,
    *,
    examples: int,
    crosshair_seconds: float,
    source: Path | None,
) -> Comparison:
    """``table`` (whose kernel value is ``built``) against the registered ``version``: every
    cell, the kernel's decisions on generated inputs, and CrossHair's search."""
    other = kind.registered()[version]
    differences = kind.table_differences(table, kind.table_of(other))
    if isinstance(built, RecordError):
        return Comparison(version, tuple(differences), "not run: the kernel refuses the table")
    differences += kind.generated_differences(built, examples, other)
    if crosshair_seconds <= 0:
        crosshair = "not run: --crosshair-seconds 0"
    elif source is None:
        crosshair = "not run: the candidate is not a file"
    else:
        found, crosshair = crosshair_differences(kind, version, source, crosshair_seconds)
        differences += found
    return Comparison(version, tuple(differences), crosshair)


_MODULE_HEAD = '''"""Written by practice-loop prove-policy for crosshair diffbehavior."""
from practice_loop.harness.policy_compare import KINDS

_OLD = KINDS[{kind!r}].value_of({version!r}, None)
_NEW = KINDS[{kind!r}].value_of(None, {path!r})
'''


def crosshair_differences(
    kind: PolicyKind, version: str, source: Path, seconds: float
) -> tuple[list[Difference], str]:
    """``crosshair diffbehavior`` between the kernel's decision function under ``version``
    and under the candidate in ``source``: the differences, and a line saying how it went."""
    from .crosshair_lane import DiffOutcome, diff_behavior

    with tempfile.TemporaryDirectory(prefix="prove-policy-") as folder:
        module = Path(folder) / "prove_policy_candidate.py"
        head = _MODULE_HEAD.format(kind=kind.name, version=version, path=str(source.resolve()))
        module.write_text(head + kind.crosshair_module, "utf-8")
        result = diff_behavior(
            "prove_policy_candidate.old",
            "prove_policy_candidate.new",
            seconds,
            search_path=(Path(folder),),
        )
    found = [Difference("crosshair", text, "", "") for text in result.differences]
    if result.outcome is DiffOutcome.FAILED:
        return found, f"failed: {result.output.strip()[-300:]}"
    return found, f"{result.outcome.value} within {seconds:g} s"
