"""Forging: records construction would refuse, made the way a bug or an attacker makes them.

Standard library and kernel only (the golden vectors ship in the package and use these
too). Every helper takes a *chain*: any object with ``frame``, ``assessment``, ``residuals``,
``gate``, ``budget``, ``search_input`` and ``operator_set`` (the strategies' drawn
``Chain``, or a shipped chain of ``harness.vectors``).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ...kernel import (
    CANDIDATE_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    MISSING_ROLE_CANDIDATE_POLICY,
    BudgetCharge,
    CandidateAttempt,
    CandidateOperatorInput,
    CandidateOperatorResult,
    CandidateReplayStatus,
    CanonicalizationError,
    ComputeBudgetDecision,
    OpenedSearchRun,
    OperatorManifestRow,
    OperatorSetManifest,
    RecordError,
    ReplayDisposition,
    ReplayResult,
    SearchGateDecision,
    candidate_operator_input,
    decide_compute_budget,
    open_search_run,
    propose_candidate,
    record_attempts,
    replay_candidate,
    search_input_for,
)
from ...kernel.budget import BUDGET_POLICIES
from ...kernel.gate import GATE_POLICIES, gate_input_digest
from ...kernel.operators import CANDIDATE_OPERATOR_SETS
from ...kernel.record import inspect_record
from ..policy_file import next_unregistered_version

R = TypeVar("R")
V2 = GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
ZERO_LIMITS = dict.fromkeys(("max_candidates", "max_depth", "max_steps", "max_parallelism"), 0)

# ------------------------------------------------------------------------------------------
# Records altered after sealing, re-sealed, or sealed afresh


def tampered(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes`` and no validation at all."""
    copy = object.__new__(type(record))
    for field in dataclasses.fields(record):  # type: ignore[arg-type]
        object.__setattr__(copy, field.name, changes.pop(field.name, getattr(record, field.name)))
    if changes:
        raise TypeError(f"{type(record).__name__} has no fields {sorted(changes)}")
    return copy


def resealed(record: R, **changes: Any) -> R:
    """``tampered``, then its own identity recomputed over the change (unvalidated), so that
    only a semantic check (not the identity check) can catch it."""
    copy = tampered(record, **changes)
    object.__setattr__(copy, type(record).ID_FIELD, copy.compute_id())  # type: ignore[attr-defined]
    return copy


def fields_for_sealing(record: Any, **changes: Any) -> dict[str, Any]:
    """Every field of ``record`` but its identity, with ``changes``: the keyword arguments
    for ``type(record).sealed(...)``."""
    fields = {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
    del fields[type(record).ID_FIELD]
    return {**fields, **changes}


def sealed(record: R, **changes: Any) -> R:
    """A new, validated record: ``record``'s fields with ``changes``, sealed afresh."""
    return type(record).sealed(**fields_for_sealing(record, **changes))  # type: ignore[attr-defined]


def other_digest(digest: str) -> str:
    """Another well-formed digest: the first hex character changed."""
    return ("1" if digest[0] == "0" else "0") + digest[1:]


def neighbouring_digest(digest: str, *, after: bool) -> str:
    """The well-formed digest just after ``digest`` or just before it (wrapping round at the
    ends), so that a test can forge an id on each side of the true one: a check that compares
    ids by order instead of equality passes a forgery on one side only."""
    value = (int(digest, 16) + (1 if after else -1)) % 16 ** len(digest)
    return f"{value:0{len(digest)}x}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Text(str):
    """A ``str`` subclass, which the hashable profile refuses (it may override what
    ``json.dumps`` reads)."""


class Small(enum.IntEnum):
    ONE = 1


def int_field(data: bytes, field: str, raw: bytes) -> bytes:
    """``data`` with the first value of the int field ``field`` replaced by ``raw``: inside a
    JSON string every quote is escaped, so ``"field":digits`` can only be a key."""
    pattern = re.compile(b'"' + field.encode() + b'":-?[0-9]+')
    if pattern.search(data) is None:
        raise RuntimeError(f"no int field {field!r}")
    return pattern.sub(lambda _: b'"' + field.encode() + b'":' + raw, data, count=1)


# ------------------------------------------------------------------------------------------
# One call into the kernel


@dataclasses.dataclass(frozen=True)
class Attack:
    """One call into the kernel: the function, its exact arguments, and (for
    ``record_attempts``) the attempts offered, so that a test can compare what was kept."""

    function: Callable[..., object]
    arguments: Mapping[str, object]
    proposed: tuple[CandidateAttempt, ...] = ()

    def __call__(self) -> object:
        return self.function(**self.arguments)


def perform(attack: Attack) -> object:
    """Run the attack. The kernel's typed exceptions are returned as values (the refusals of
    ``canonical_json``, ``decode_canonical`` and record constructors); anything else
    propagates."""
    try:
        return attack()
    except (CanonicalizationError, RecordError) as error:
        return error


def inspected(record_of: Callable[[Any], object], record_type: type) -> Callable[[Any], Attack]:
    """``inspect_record`` over the record ``record_of(chain)``, as ``record_type``."""
    return lambda c: Attack(inspect_record, {"value": record_of(c), "record_type": record_type})


# ------------------------------------------------------------------------------------------
# The search run (ADR-0228): open_search_run over a chain, with some records replaced


def open_run(chain: Any, **replacing: object) -> Attack:
    arguments = {
        "search_input": chain.search_input,
        "gate_decision": chain.gate,
        "budget_decision": chain.budget,
        "operator_set": chain.operator_set,
        **replacing,
    }
    return Attack(open_search_run, arguments)


def with_budget(chain: Any, budget: object) -> Attack:
    """The chain with another budget, the run input rebuilt to name it (so that only the
    budget's own content can be refused)."""
    version = chain.search_input.run_policy_version
    search_input = search_input_for(chain.gate, budget, chain.operator_set, version)
    return open_run(chain, search_input=search_input, budget_decision=budget)


def with_input(chain: Any, **changes: object) -> Attack:
    return open_run(chain, search_input=tampered(chain.search_input, **changes))


def row(
    name: str = "missing_role_candidate", *, steps: int = 1, depth: int = 1, attempts: int = 1
) -> OperatorManifestRow:
    """The candidate operator's manifest row, renamed and re-charged."""
    return dataclasses.replace(
        CANDIDATE_OPERATOR_SET.operators[0],
        operator_name=name,
        operator_version=f"{name}.v1",
        max_attempts_per_run=attempts,
        budget_charge=BudgetCharge(1, steps),
        depth=depth,
    )


def manifest(*rows: OperatorManifestRow) -> OperatorSetManifest:
    return OperatorSetManifest(CANDIDATE_OPERATOR_SET.operator_set_version, rows or (row(),))


def attempt(
    of: OperatorManifestRow,
    index: int,
    steps_before: int,
    parent: CandidateAttempt | None = None,
    status: CandidateReplayStatus = CandidateReplayStatus.REPLAY_PENDING,
) -> CandidateAttempt:
    refused = status is CandidateReplayStatus.REPLAY_REFUSED
    return CandidateAttempt.sealed(
        attempt_index=index,
        parent_attempt_id=None if parent is None else parent.attempt_id,
        operator_id=of.operator_name,
        operator_version=of.operator_version,
        input_digest=sha256(f"vector input {index}".encode()),
        candidate_digest=sha256(f"vector candidate {index}".encode()),
        budget_charge=of.budget_charge,
        depth=of.depth,
        step_index=steps_before,
        replay_status=status,
        replay_blockers=("contract_refused",) if refused else (),
        evidence_spans=(),
        explanation="a vector's attempt",
    )


def serial(of: OperatorManifestRow, count: int) -> tuple[CandidateAttempt, ...]:
    return tuple(attempt(of, index, index * of.budget_charge.steps) for index in range(count))


def lineage(depth: int) -> tuple[OperatorSetManifest, tuple[CandidateAttempt, ...]]:
    """One operator a level, 1 to ``depth``, each attempt the child of the one before."""
    rows = tuple(row(f"level_{level}_op", depth=level) for level in range(1, depth + 1))
    attempts: list[CandidateAttempt] = []
    for index, level in enumerate(rows):
        attempts.append(attempt(level, index, index, attempts[-1] if attempts else None))
    return manifest(*rows), tuple(attempts)


def opened(chain: Any, operators: OperatorSetManifest) -> OpenedSearchRun:
    """A v2 run lawfully opened over ``operators``."""
    search_input = search_input_for(chain.gate, chain.budget, operators, V2)
    run = open_search_run(search_input, chain.gate, chain.budget, operators)
    assert type(run) is OpenedSearchRun, run
    return run


def record(
    chain: Any,
    operators: OperatorSetManifest,
    attempts: object,
    *,
    recorded_with: OperatorSetManifest | None = None,
    run: object = None,
) -> Attack:
    arguments = {
        "opened_run": opened(chain, operators) if run is None else run,
        "operator_set": operators if recorded_with is None else recorded_with,
        "attempts": attempts,
    }
    return Attack(record_attempts, arguments, attempts if type(attempts) is tuple else ())


def with_status(of: CandidateAttempt, status: CandidateReplayStatus) -> CandidateAttempt:
    refused = status is CandidateReplayStatus.REPLAY_REFUSED
    blockers = ("contract_refused",) if refused else ()
    return sealed(of, replay_status=status, replay_blockers=blockers)


# ------------------------------------------------------------------------------------------
# The candidate operator (ADR-0231): a context, ways to forge it, and proposing over it


@dataclasses.dataclass(frozen=True)
class OperatorContext:
    """Every record ``propose_candidate`` consumes, each produced by its own stage (or forged
    and rebound by ``forged``)."""

    chain: Any
    assessment: Any
    residual: Any
    gate: SearchGateDecision
    budget: ComputeBudgetDecision
    opened: OpenedSearchRun
    operator_input: CandidateOperatorInput

    @property
    def frame(self) -> Any:
        return self.chain.frame

    def arguments(self, **replacing: object) -> dict[str, object]:
        return {
            "operator_input": self.operator_input,
            "frame": self.chain.frame,
            "assessment": self.assessment,
            "residual": self.residual,
            "gate_decision": self.gate,
            "budget_decision": self.budget,
            "opened_run": self.opened,
            "operator_set": CANDIDATE_OPERATOR_SET,
            "policy": MISSING_ROLE_CANDIDATE_POLICY,
            **replacing,
        }

    def propose(self, **replacing: object) -> Attack:
        return Attack(propose_candidate, self.arguments(**replacing))

    def input_for(self, attempt_index: int = 0) -> CandidateOperatorInput:
        return candidate_operator_input(
            assessment=self.assessment,
            residual=self.residual,
            gate_decision=self.gate,
            budget_decision=self.budget,
            opened_run=self.opened,
            attempt_index=attempt_index,
        )

    def result(self) -> CandidateOperatorResult:
        result = propose_candidate(**self.arguments())
        assert type(result) is CandidateOperatorResult, result
        return result


def context(chain: Any) -> OperatorContext:
    run = open_search_run(chain.search_input, chain.gate, chain.budget, chain.operator_set)
    assert type(run) is OpenedSearchRun, run
    ctx = OperatorContext(
        chain, chain.assessment, chain.residuals[0], chain.gate, chain.budget, run, None
    )  # type: ignore[arg-type]
    return dataclasses.replace(ctx, operator_input=ctx.input_for())


def operator(change: Callable[[OperatorContext], Attack]) -> Callable[[Any], Attack]:
    """A forge over the operator context of a chain."""
    return lambda chain: change(context(chain))


def forged(
    ctx: OperatorContext,
    *,
    residual: Any = None,
    gate: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    decide_budget: bool = False,
) -> OperatorContext:
    """Some records changed and every record after them rebound: each forged record is well
    formed and self-seals, gate -> budget -> run -> input all name each other, so that only
    the operator's own semantic checks can tell."""
    residual = residual or ctx.residual
    new_gate = tampered(ctx.gate, residual_ids=(residual.residual_id,), **(gate or {}))
    digest = gate_input_digest(
        new_gate.problem_frame_digest, new_gate.contract_assessment_id, new_gate.residual_ids
    )
    new_gate = resealed(new_gate, input_digest=digest)
    if decide_budget:
        new_budget = decide_compute_budget(new_gate)
    else:
        binding = {"gate_decision_id": new_gate.decision_id, "gate_input_digest": digest}
        new_budget = resealed(ctx.budget, **{**binding, **(budget or {})})
    rebound = {
        "residual_ids": new_gate.residual_ids,
        "gate_decision_id": new_gate.decision_id,
        "budget_id": new_budget.budget_id,
    }
    new_run = sealed(ctx.opened, **{**rebound, **(run or {})})
    result = dataclasses.replace(
        ctx, residual=residual, gate=new_gate, budget=new_budget, opened=new_run
    )
    return dataclasses.replace(result, operator_input=result.input_for())


def forged_residual(ctx: OperatorContext, **changes: Any) -> OperatorContext:
    """The residual changed together with the blocker it projects (so it stays a faithful
    projection), and everything after the assessment rebound to it."""
    blocker = ctx.assessment.blockers[ctx.residual.blocker_index]
    mirrored = {name: changes[name] for name in ("evidence_spans", "role") if name in changes}
    assessment = resealed(ctx.assessment, blockers=(tampered(blocker, **mirrored),))
    residual = resealed(ctx.residual, contract_assessment_id=assessment.assessment_id, **changes)
    rebound = {"contract_assessment_id": assessment.assessment_id}
    rebased = dataclasses.replace(ctx, assessment=assessment)
    return forged(rebased, residual=residual, gate=rebound, run=rebound)


def replayed(chain: Any) -> object:
    """The replay of the operator's one candidate for ``chain``."""
    reconstruction = context(chain).result().reconstruction
    return replay_candidate(chain.frame, chain.assessment, reconstruction)


def replay_closes(chain: Any) -> bool:
    replay = replayed(chain)
    return (
        type(replay) is ReplayResult
        and replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
    )


def cue_span_is_not_all_evidence(chain: Any) -> bool:
    cue = chain.frame.cues[0].span
    return any(span != cue for span in chain.residuals[0].evidence_spans)


# Versions no kernel registers yet (each is ``.v2`` until a second version is adopted).
UNREGISTERED_BUDGET_VERSION = next_unregistered_version("compute_budget", BUDGET_POLICIES)
UNREGISTERED_GATE_VERSION = next_unregistered_version("search_gate", GATE_POLICIES)
UNREGISTERED_OPERATOR_SET_VERSION = next_unregistered_version(
    "candidate_operators", CANDIDATE_OPERATOR_SETS
)
