"""``ContractResidual``: the read-only projection of a refused assessment (our ADR-0225).

One residual per blocker, in blocker order, carrying the blocker's code and evidence spans
unchanged. The projection decides nothing: it does not judge, repair, or decide eligibility
(ADR-0226 §7A, §8.2). The kind of each residual comes from one table; a blocker the table does
not name is ``unclassified``, which the gate never treats as searchable (ADR-0226 §7B).
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Mapping
from typing import Annotated, ClassVar

from .assessment import AssessmentStatus, BlockerCode, ContractAssessment
from .checks import Defect, digest, exactly, member_of, non_negative_int, optional, text
from .frame import UNARY_DELTA_ORGAN, Role
from .record import Record, inspect_record
from .refusal import Stage, StageRefusal, refuse
from .span import SourceSpan, spans_check
from .trust import remembered

RESIDUAL_SCHEMA_VERSION = "contract_residual.v1"


class ResidualKind(enum.Enum):
    MISSING_ROLE = "missing_role"
    MISSING_RELATION = "missing_relation"
    MISSING_PROPOSAL = "missing_proposal"
    TARGET_UNBOUND = "target_unbound"
    UNCLASSIFIED = "unclassified"


# docs/adr/0001: the typing table. A blocker missing here projects as UNCLASSIFIED.
RESIDUAL_KIND_BY_BLOCKER: Mapping[BlockerCode, ResidualKind] = types.MappingProxyType(
    {
        BlockerCode.INITIAL_UNBOUND: ResidualKind.MISSING_ROLE,
        BlockerCode.DELTA_UNBOUND: ResidualKind.MISSING_ROLE,
        BlockerCode.DIRECTION_UNBOUND: ResidualKind.MISSING_ROLE,
        BlockerCode.ENTITY_MISMATCH: ResidualKind.MISSING_RELATION,
        BlockerCode.UNIT_MISMATCH: ResidualKind.MISSING_RELATION,
        BlockerCode.PROPOSAL_MISSING: ResidualKind.MISSING_PROPOSAL,
        BlockerCode.TARGET_UNBOUND: ResidualKind.TARGET_UNBOUND,
    }
)


def residual_kind_for(blocker_code: BlockerCode) -> ResidualKind:
    """The kind of a blocker's residual; a hazard is never a searchable kind, nor is anything
    that is not exactly a ``BlockerCode`` member (an object equal to one is not one).

    post: (__return__ is ResidualKind.UNCLASSIFIED) != (blocker_code in RESIDUAL_KIND_BY_BLOCKER)
    post: not blocker_code.value.startswith("hazard_") or __return__ is ResidualKind.UNCLASSIFIED
    """
    # Found by identity: only a member itself has a member's id, and an enum's hash is Python
    # code, slower than this lookup.
    return _KIND_BY_BLOCKER_ID.get(id(blocker_code), ResidualKind.UNCLASSIFIED)


# The table above, keyed by each member's identity (members live as long as their class).
_KIND_BY_BLOCKER_ID = types.MappingProxyType(
    {id(code): kind for code, kind in RESIDUAL_KIND_BY_BLOCKER.items()}
)


_BLOCKER_CODE_VALUES = frozenset(member.value for member in BlockerCode)


def _blocker_code_value(value: object) -> Defect | None:
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if value in _BLOCKER_CODE_VALUES else Defect.UNKNOWN_ENUM_VALUE


@dataclasses.dataclass(frozen=True, slots=True)
class ContractResidual(Record):
    """One typed obstruction: which blocker, of which kind, on which evidence."""

    residual_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(RESIDUAL_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    contract_assessment_id: Annotated[str, digest]
    candidate_organ: Annotated[str, exactly(UNARY_DELTA_ORGAN)]
    blocker_index: Annotated[int, non_negative_int]
    kind: Annotated[ResidualKind, member_of(ResidualKind)]
    residual_code: Annotated[str, _blocker_code_value]
    role: Annotated[Role | None, optional(member_of(Role))]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "residual_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        if residual_kind_for(BlockerCode(self.residual_code)) is not self.kind:
            return "kind", Defect.INCONSISTENT_FIELDS
        return None


def project_residuals(
    assessment: ContractAssessment,
) -> tuple[ContractResidual, ...] | StageRefusal:
    """Project each blocker of a refused assessment, in order, into a residual.

    Refusal reasons: ``assessment_malformed`` and ``assessment_runnable`` (a runnable
    assessment has nothing to project).
    """
    found = inspect_record(assessment, ContractAssessment)
    if found is not None:
        return refuse(Stage.RESIDUAL, "assessment_malformed", found=found)
    if assessment.status is AssessmentStatus.RUNNABLE:
        return refuse(
            Stage.RESIDUAL, "assessment_runnable", subject_digest=assessment.assessment_id
        )
    # The gate checks a context against the projection: project each assessment once.
    return remembered(assessment, "residuals", lambda: _project(assessment))


def _project(assessment: ContractAssessment) -> tuple[ContractResidual, ...]:
    return tuple(
        ContractResidual.sealed(
            schema_version=RESIDUAL_SCHEMA_VERSION,
            problem_frame_digest=assessment.problem_frame_digest,
            contract_assessment_id=assessment.assessment_id,
            candidate_organ=assessment.organ,
            blocker_index=index,
            kind=residual_kind_for(blocker.code),
            residual_code=blocker.code.value,
            role=blocker.role,
            evidence_spans=blocker.evidence_spans,
            explanation=f"{residual_kind_for(blocker.code).value}: {blocker.code.value}",
        )
        for index, blocker in enumerate(assessment.blockers)
    )
