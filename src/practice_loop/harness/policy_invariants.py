"""What every policy kind's proof is made of (issue 21): named invariants with their ADR
clauses, their results, the decision differences between two versions, and the generated
chains the property invariants run the kernel on (``practice_strategies.chains``,
derandomized so that a report reproduces)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from typing import Any

from ..kernel import RecordError


class InvariantStatus(enum.Enum):
    HELD = "held"
    BROKEN = "broken"
    NOT_RUN = "not_run"  # the kernel refuses the table, so its decisions cannot be run


@dataclasses.dataclass(frozen=True, slots=True)
class Invariant:
    name: str
    clause: str
    statement: str
    # The violations found, each one sentence; empty when the invariant holds. It reads the
    # table as written and the kernel's value of it (None when the kernel refuses it).
    check: Callable[[Any, Any, int], list[str]]
    needs_kernel_policy: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class InvariantResult:
    name: str
    clause: str
    statement: str
    status: InvariantStatus
    violations: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "status": self.status.value}


@dataclasses.dataclass(frozen=True, slots=True)
class Difference:
    found_by: str  # "table", "generated gate" or "crosshair"
    gate: str
    in_force: str
    candidate: str

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def _generated_chains(examples: int) -> list[Any]:
    """Whole chains (``practice_strategies.Chain``) drawn deterministically, an equal share
    for every reason a frame can produce (so that every row the chains can reach is
    exercised)."""
    from hypothesis import HealthCheck, given, settings

    from practice_strategies import FRAME_RECIPES, chains

    drawn: list[Any] = []
    share = max(3, examples // len(FRAME_RECIPES))
    for reason in sorted(FRAME_RECIPES, key=lambda reason: reason.value):

        @settings(
            max_examples=share,
            derandomize=True,
            database=None,
            deadline=None,
            # A chain is drawn through every stage of the kernel: slow to generate on a busy
            # machine, which says nothing about the policy being proved.
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(chains(reason))
        def collect(chain: Any) -> None:
            drawn.append(chain)

        collect()
    return drawn


_CHAINS: dict[int, list[Any]] = {}


def generated_chains(examples: int) -> list[Any]:
    """The generated chains the property invariants of every policy kind run on."""
    if examples not in _CHAINS:
        _CHAINS[examples] = _generated_chains(examples)
    return _CHAINS[examples]


def run_invariants(
    invariants: Sequence[Invariant], table: Any, built: Any, examples: int
) -> list[InvariantResult]:
    """Each invariant on ``table`` and ``built``, its kernel value (or the kernel's
    ``RecordError``, which leaves the property invariants not run)."""
    policy = None if isinstance(built, RecordError) else built
    results = []
    for invariant in invariants:
        if invariant.needs_kernel_policy and policy is None:
            status, violations = InvariantStatus.NOT_RUN, ("the kernel refuses the table",)
        else:
            found = invariant.check(table, policy, examples)
            status = InvariantStatus.BROKEN if found else InvariantStatus.HELD
            violations = tuple(found)
        results.append(
            InvariantResult(
                invariant.name, invariant.clause, invariant.statement, status, violations
            )
        )
    return results
