"""Golden vectors: every identity and every refusal of the kernel, frozen in files.

Shell code (ARCHITECTURE §3 "Golden vectors", §4 "Reviewers gating ADR changes"), standard
library only. In the manner of Wycheproof's test vectors and python-tuf's generated test data,
each file under ``practice_loop/data/vectors/`` holds one family of labelled cases: an input
that rebuilds the case deterministically and the result the kernel gave when the file was
written. Nothing here draws at random: every case comes from the shipped examples
(``examples.shipped_examples``), the sample file read through ``reader.read_question``, the
kernel's own constant tables, or a named recipe over those.

* ``records.json``: one group per record kind the kernel exports; the record's full JSON form,
  and the canonical JSON and SHA-256 of what its identity hashes (docs/adr/0003).
* ``refusals.json``: one group per refusal family; a named recipe and the exact reason code.
* ``canonical.json``: ``canonical_json`` over plain and hostile values, and the payloads of
  the identities that hash a value rather than a record (gate input, candidate content).
* ``loader.json``: raw bytes for ``decode_canonical`` and for loading a stored trace
  (``load_sealed_trace``, then ``verify_sealed_trace`` and ``replay_divergence``).

``check_vectors`` runs every frozen input through the kernel as it is now and reports each
result that moved; ``compare_regenerated`` regenerates the files in memory and reports every
vector that the generator would now write differently. ``practice-loop vectors --check`` runs
both; ``--write`` regenerates (data/vectors/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import hashlib
import json
import os
import site
import sys
import sysconfig
import tempfile
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import kernel as _kernel
from ..kernel import (
    CANDIDATE_OPERATOR_SET,
    COMPUTE_BUDGET_V1,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    MAX_SAFE_INT,
    MISSING_ROLE_CANDIDATE_POLICY,
    AnswerRefusal,
    CandidateOperatorInput,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReconstruction,
    CanonicalizationError,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    ContractAssessment,
    Direction,
    GeometricSearchRun,
    OpenedSearchRun,
    OperatorSetManifest,
    ProblemFrame,
    ProofGatedAnswer,
    ProofRecord,
    RecordDefect,
    RecordError,
    ReplayRefusal,
    ReplayResult,
    RoleBindingDelta,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    SourceSpan,
    StageRefusal,
    TraceFailure,
    TraceVerification,
    candidate_operator_input,
    canonical_json,
    check_proof,
    decide_answer,
    decide_compute_budget,
    decide_search_gate,
    decode_canonical,
    load_sealed_trace,
    open_search_run,
    practice_case,
    project_residuals,
    record_attempts,
    replay_candidate,
    search_input_for,
)
from ..kernel.budget import COMPUTE_BUDGET_IN_FORCE
from ..kernel.gate import GATE_INPUT_SCHEMA_VERSION, SEARCH_GATE_V1, gate_input_digest
from ..kernel.identity import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NODES, MAX_TEXT_LENGTH
from ..kernel.operators import candidate_digest_of
from ..kernel.record import Record, record_from_json
from ..kernel.trace import (
    TRACE_VERSIONS,
    seal_practice_trace,
    sealed_trace_bytes,
)
from ..product.reader import read_question
from . import catalogue
from .catalogue import trace as trace_entries
from .catalogue.forging import (
    UNREGISTERED_BUDGET_VERSION,
    Small,
    Text,
    attempt,
    int_field,
    lineage,
    manifest,
    other_digest,
    resealed,
    row,
    serial,
    sha256,
    tampered,
)
from .catalogue.shipped import DU, PR, RI, TWO
from .examples import shipped_examples

VECTOR_SCHEMA = "practice_loop_vectors.v1"
# Bump when the generator changes what it writes for the same kernel (a new recipe, a new
# field): the header then says which generator wrote a file. Not the package version, so
# that a release alone does not make every file stale. The name is the module's name when the
# files were first written (practice_loop.vectors): the headers are frozen with it.
GENERATOR_REVISION = 1
GENERATOR_VERSION = f"practice_loop.vectors {GENERATOR_REVISION}"
DEFAULT_DIRECTORY = Path(__file__).resolve().parent.parent / "data" / "vectors"
SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample.jsonl"
WRITE_COMMAND = "practice-loop vectors --write"
# A valid result carries its canonical text up to this many bytes; a longer one (a size cap
# at its limit) carries only the digest, its input being in the file already.
INLINE_CANONICAL_BYTES = 4096

V2 = GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION

# Exported record kinds, in the kernel's own export order.
RECORD_KINDS: tuple[type, ...] = tuple(
    value
    for name in _kernel.__all__
    if isinstance(value := getattr(_kernel, name), type) and issubclass(value, Record)
)
_KIND_BY_NAME = {kind.__name__: kind for kind in RECORD_KINDS}

# Values of closed sets that no input can reach, with why (the meta-test checks each is a
# real value and that no vector reaches it, so the note cannot go stale unseen).
UNREACHABLE = {
    "StageRefusal.loop/trace_unsealable": (
        "practice_case refuses rather than raise should its records ever fail to seal, but "
        "the frame's span, evidence and item caps (docs/adr/0005) keep every trace of a "
        "well-formed frame inside the canonical size profile, so every one seals"
    ),
    "Defect.not_canonical": (
        "Record.find_defect maps a CanonicalizationError raised by an identity or cross check "
        "to not_canonical, but every field passes its SCHEMA check first and each check is at "
        "least as strict as the hashable profile (docs/adr/0003), so none is raised"
    ),
}


# --------------------------------------------------------------------------------------------
# Drift


@dataclasses.dataclass(frozen=True)
class Drift:
    """One vector whose result moved: the file, its ``tcId`` (``None`` for the file or its
    header), its comment, the field that moved, and the frozen and current values."""

    file: str
    tc_id: int | None
    comment: str
    field: str
    expected: object
    actual: object

    def describe(self) -> str:
        where = "-" if self.tc_id is None else str(self.tc_id)
        return (
            f"{self.file} {where} {self.comment}: {self.field} "
            f"{_shown(self.expected)} -> {_shown(self.actual)}"
        )


def _shown(value: object, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"{text[: limit - 40]}... ({len(text)} chars, sha256 {digest}...)"


# --------------------------------------------------------------------------------------------
# The cases every vector starts from


@dataclasses.dataclass(frozen=True)
class _Case:
    """One frame and the trace the loop sealed for it."""

    name: str
    frame: ProblemFrame
    trace: SealedPracticeTrace
    cases: Any = dataclasses.field(default=None, repr=False, compare=False)
    operator_set: OperatorSetManifest = CANDIDATE_OPERATOR_SET

    def __getitem__(self, name: str) -> _Case:
        """Another shipped chain, by name (a recipe may start from several)."""
        return self.cases[name]

    @property
    def residuals(self) -> tuple:
        return self.trace.residuals

    @property
    def search_input(self) -> object:
        return self.trace.search_input

    @property
    def assessment(self) -> ContractAssessment:
        return self.trace.original_assessment

    @property
    def gate(self) -> SearchGateDecision:
        return self.trace.gate_decision  # type: ignore[return-value]

    @property
    def budget(self) -> ComputeBudgetDecision:
        return self.trace.budget_decision  # type: ignore[return-value]

    @property
    def opened(self) -> OpenedSearchRun:
        return self.trace.opened_run  # type: ignore[return-value]

    @property
    def result(self) -> CandidateOperatorResult:
        return self.trace.operator_outcomes[0]  # type: ignore[return-value]

    @property
    def reconstruction(self) -> CandidateReconstruction:
        return self.result.reconstruction

    @property
    def replay(self) -> ReplayResult:
        return self.trace.replays[0]  # type: ignore[return-value]

    def operator_input(self, attempt_index: int = 0) -> CandidateOperatorInput:
        return candidate_operator_input(
            assessment=self.assessment,
            residual=self.trace.residuals[0],
            gate_decision=self.gate,
            budget_decision=self.budget,
            opened_run=self.opened,
            attempt_index=attempt_index,
        )


def _case(name: str, frame: ProblemFrame, cases: _Context) -> _Case:
    trace = practice_case(frame)
    if type(trace) is not SealedPracticeTrace:
        raise RuntimeError(f"{name}: the loop did not seal a trace: {trace!r}")
    return _Case(name, frame, trace, cases)


def _sample_questions() -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line]
    return [(row["id"], row["question"]) for row in rows]


class _Context:
    """The cases, built once per generation or check (never cached across calls: a record
    remembered under a planted change must not outlive it)."""

    def __init__(self) -> None:
        self.examples = {
            f"example:{example.name}": _case(f"example:{example.name}", example.frame, self)
            for example in shipped_examples()
        }
        self.samples: dict[str, _Case] = {}
        for sample_id, question in _sample_questions():
            frame = read_question(question)
            if type(frame) is not ProblemFrame:
                raise RuntimeError(f"sample {sample_id} is not read: {frame!r}")
            self.samples[f"sample:{sample_id}"] = _case(f"sample:{sample_id}", frame, self)

    def __getitem__(self, name: str) -> _Case:
        return self.examples[name] if name in self.examples else self.samples[name]


# --------------------------------------------------------------------------------------------
# Observing an outcome: the result a vector freezes


def _valid_bytes(data: bytes, *, id_field: str | None = None, id_: str | None = None) -> dict:
    return {
        "valid": True,
        "canonical": data.decode("utf-8") if len(data) <= INLINE_CANONICAL_BYTES else None,
        "digest": sha256(data),
        "id_field": id_field,
        "id": id_,
    }


def _observe(outcome: object) -> dict[str, Any]:
    """The typed label of a stage's answer, in the vector's result shape."""
    kind = type(outcome)
    if kind is StageRefusal:
        return {
            "valid": False,
            "refusal": outcome.reason_codes[0],
            "stage": outcome.stage.value,
            "codes": list(outcome.reason_codes),
        }
    if kind is SearchGateDecision:
        allowed = outcome.status is SearchGateStatus.ELIGIBLE
        return {"valid": allowed, "refusal": outcome.reason_code, "status": outcome.status.value}
    if kind is ComputeBudgetDecision:
        allowed = outcome.status is ComputeBudgetStatus.BUDGET_ALLOWED
        return {"valid": allowed, "refusal": outcome.reason_code, "status": outcome.status.value}
    if kind is SearchRunRefusal:
        return {
            "valid": False,
            "refusal": outcome.reason_codes[0],
            "disposition": outcome.run_disposition.value,
        }
    if kind is GeometricSearchRun:
        code = outcome.exhaustion_code
        return {
            "valid": True,
            "disposition": outcome.run_disposition.value,
            "exhaustion_code": None if code is None else code.value,
        }
    if kind in (CandidateOperatorRefusal, ReplayRefusal):
        return {"valid": False, "refusal": outcome.reason_codes[0]}
    if kind is AnswerRefusal:
        return {
            "valid": False,
            "refusal": outcome.reason_codes[0],
            "codes": list(outcome.reason_codes),
        }
    if kind is ReplayResult:
        return {"valid": True, "disposition": outcome.disposition.value}
    if kind in (CandidateOperatorResult, OpenedSearchRun, ProofGatedAnswer, ProofRecord):
        return {"valid": True, "record": kind.__name__}
    if kind is TraceVerification:
        if outcome.valid:
            return {"valid": True}
        return {
            "valid": False,
            "refusal": outcome.failures[0].code.value,
            "failures": [_at(failure) for failure in outcome.failures],
        }
    if kind is TraceFailure:
        return {"valid": False, "refusal": outcome.code.value, "failures": [_at(outcome)]}
    if kind is RecordDefect:
        return {"valid": False, "refusal": outcome.defect.value, "where": outcome.describe()}
    if kind is RecordError:
        found = outcome.found
        return {"valid": False, "refusal": found.defect.value, "where": found.describe()}
    if kind is CanonicalizationError:
        return {"valid": False, "refusal": outcome.reason.value}
    if outcome is None:
        return {"valid": True}
    raise TypeError(f"no vector result for {kind.__name__}")


def _at(failure: TraceFailure) -> str:
    return f"{failure.code.value}@{failure.stage}"


# --------------------------------------------------------------------------------------------
# records.json: every record kind, its JSON form, and what its identity hashes


def _children(record: Record, path: str) -> Iterator[tuple[str, Record]]:
    """``record`` and every record nested in it, depth first, in field order."""
    yield path, record
    for field in dataclasses.fields(record):  # type: ignore[arg-type]
        value = getattr(record, field.name)
        if isinstance(value, Record):
            yield from _children(value, f"{path}.{field.name}")
        elif type(value) is tuple:
            for index, item in enumerate(value):
                if isinstance(item, Record):
                    yield from _children(item, f"{path}.{field.name}[{index}]")


_CODE_FIELDS = frozenset(
    {"reason_code", "reason_codes", "residual_code", "replay_blockers", "gate_reason_code"}
)


def _signature(record: Record) -> tuple[str, ...]:
    """What sets one sample record apart from another of its kind: the enum values, reason
    codes, absent fields and nested record kinds of its own fields (not of nested records,
    which have vectors of their own)."""
    seen: set[str] = set()
    for field in dataclasses.fields(record):  # type: ignore[arg-type]
        value = getattr(record, field.name)
        for item in value if type(value) is tuple else (value,):
            if item is None:
                seen.add(f"{field.name}=None")
            elif isinstance(item, enum.Enum):
                seen.add(f"{field.name}={item.value}")
            elif isinstance(item, Record):
                seen.add(f"{field.name}:{type(item).__name__}")
            elif field.name in _CODE_FIELDS and type(item) is str:
                seen.add(f"{field.name}={item}")
    return tuple(sorted(seen))


def _record_result(record: Record) -> dict[str, Any]:
    """What a record's identity hashes, and the identity: canonical JSON of
    ``identity_payload()`` (prose left out at every depth, the id blanked or omitted), its
    SHA-256, and the id field with the value the record carries."""
    payload = canonical_json(record.identity_payload())
    id_field = type(record).ID_FIELD
    return {
        "valid": True,
        "canonical": payload.decode("utf-8"),
        "digest": sha256(payload),
        "id_field": id_field,
        "id": None if id_field is None else getattr(record, id_field),
    }


def _id_flag(kind: type) -> str:
    if kind.ID_FIELD is None:
        return "ContentDigest"
    return "SelfSealed" if kind.SELF_SEALED else "IdOmitted"


def _derived_records(ctx: _Context) -> Iterator[tuple[str, str, Record]]:
    """Records the loop does not seal into a trace, made by kernel stages from the shipped
    examples' own records, and the kernel's constant tables."""
    du, ri, pr = ctx[DU], ctx[RI], ctx[PR]
    yield "Derived", f"{DU} candidate_operator_input(attempt_index=0)", du.operator_input()
    yield "KernelConstant", "COMPUTE_BUDGET_V1", COMPUTE_BUDGET_V1
    yield "KernelConstant", "SEARCH_GATE_V1", SEARCH_GATE_V1
    yield "KernelConstant", "CANDIDATE_OPERATOR_SET", CANDIDATE_OPERATOR_SET
    yield "KernelConstant", "EMPTY_OPERATOR_SET", EMPTY_OPERATOR_SET
    yield "KernelConstant", "MISSING_ROLE_CANDIDATE_POLICY", MISSING_ROLE_CANDIDATE_POLICY
    v1_input = search_input_for(du.gate, du.budget, EMPTY_OPERATOR_SET)
    yield "Derived", f"{DU} search_input_for(empty set, v1)", v1_input
    v1_run = open_search_run(v1_input, du.gate, du.budget, EMPTY_OPERATOR_SET)
    yield "Derived", f"{DU} open_search_run(empty set, v1): the inert run", v1_run
    for label, attempts in _exhausting_attempts(du):
        manifest, offered = attempts
        v2_input = search_input_for(du.gate, du.budget, manifest, V2)
        opened = open_search_run(v2_input, du.gate, du.budget, manifest)
        run = record_attempts(opened, manifest, offered)  # type: ignore[arg-type]
        yield "Derived", f"{DU} record_attempts({label})", run
    yield (
        "Derived",
        f"{DU} check_proof over the refused assessment",
        check_proof(du.frame, du.assessment),
    )
    yield (
        "Derived",
        f"{RI} project_residuals over the runnable assessment",
        project_residuals(ri.assessment),
    )
    yield (
        "Derived",
        f"{RI} check_proof over {PR}'s assessment",
        check_proof(ri.frame, pr.assessment),
    )
    refused = replay_candidate(ri.frame, du.assessment, du.reconstruction)
    yield "Derived", f"{DU} replay_candidate over {RI}'s frame", refused
    blocked = decide_search_gate(ri.assessment, ())
    yield "Derived", f"{RI} decide_search_gate(runnable assessment, no residual)", blocked
    yield "Derived", f"{RI} decide_compute_budget(blocked gate)", decide_compute_budget(blocked)


def _exhausting_attempts(case: _Case):
    """Manifests and attempts that meet each ceiling of ``case``'s budget (ADR-0228 §9)."""
    budget = case.budget
    over = row("vector_op", attempts=budget.max_candidates + 1)
    offered = serial(over, budget.max_candidates + 1)
    yield "one attempt more than max_candidates", (manifest(over), offered)
    big = row("vector_op", steps=budget.max_steps + 1)
    yield "a first attempt charged max_steps + 1", (manifest(big), (attempt(big, 0, 0),))
    yield "a lineage one level deeper than max_depth", lineage(budget.max_depth + 1)
    yield "the empty set under v2", (EMPTY_OPERATOR_SET, ())


def _record_sources(ctx: _Context) -> Iterator[tuple[str, str, Record, bool]]:
    """(flag, origin, root record, keep every record) in a fixed order: shipped examples,
    derived records and constants, then the sample lines (kept only where they show a kind
    with something new, see ``_signature``)."""
    for name, case in ctx.examples.items():
        yield "ShippedExample", f"{name} practice_case", case.trace, True
    for flag, origin, record in _derived_records(ctx):
        yield flag, origin, record, True
    for name, case in ctx.samples.items():
        yield "SampleLine", f"{name} read_question, practice_case", case.trace, False


def _record_groups(ctx: _Context) -> list[dict[str, Any]]:
    found: dict[type, list[dict[str, Any]]] = {kind: [] for kind in RECORD_KINDS}
    seen_bytes: set[tuple[str, bytes]] = set()
    seen_signatures: set[tuple[str, tuple[str, ...]]] = set()
    for flag, origin, root, keep_all in _record_sources(ctx):
        root_path = "trace" if type(root) is SealedPracticeTrace else "record"
        for path, record in _children(root, root_path):
            kind = type(record)
            form = record.canonical_bytes()
            signature = (kind.__name__, _signature(record))
            if (kind.__name__, form) in seen_bytes:
                continue
            if not keep_all and signature in seen_signatures:
                continue
            seen_bytes.add((kind.__name__, form))
            seen_signatures.add(signature)
            at = origin if path == root_path else f"{origin}: {path}"
            found[kind].append(
                {
                    "comment": at,
                    "flags": [flag, _id_flag(kind)],
                    "input": {"record": kind.__name__, "origin": at, "json": record.to_json()},
                    "result": _record_result(record),
                }
            )
    return [
        {
            "group": kind.__name__,
            "function": "record_from_json, identity_payload, canonical_json",
            "idField": kind.ID_FIELD,
            "selfSealed": kind.SELF_SEALED if kind.ID_FIELD is not None else None,
            "tests": found[kind],
        }
        for kind in RECORD_KINDS
    ]


def _unvalidated(record_type: type, value: object) -> Any:
    """``record_from_json`` without validation: the record as its JSON says, so that the
    identity of a record the kernel now refuses can still be shown."""
    hints = typing.get_type_hints(record_type)
    record = object.__new__(record_type)
    for field in dataclasses.fields(record_type):
        object.__setattr__(
            record, field.name, _unvalidated_value(hints[field.name], value[field.name])
        )  # type: ignore[index]
    return record


def _unvalidated_value(hint: Any, value: object) -> object:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        for option in options:
            id_field = getattr(option, "ID_FIELD", None)
            if type(value) is dict and id_field is not None and id_field in value:
                return _unvalidated(option, value)
        return _unvalidated_value(options[0], value)
    if origin is tuple and type(value) is list:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_unvalidated_value(args[0], item) for item in value)
        return tuple(_unvalidated_value(a, item) for a, item in zip(args, value, strict=False))
    if isinstance(hint, type) and issubclass(hint, Record) and type(value) is dict:
        return _unvalidated(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            return value
    return value


def _evaluate_record(test_input: dict[str, Any]) -> dict[str, Any]:
    """Rebuild the frozen record under the kernel as it is now."""
    kind = _KIND_BY_NAME.get(test_input["record"])
    if kind is None:
        return {"valid": False, "refusal": "record kind no longer exported"}
    try:
        record = record_from_json(kind, test_input["json"])
    except RecordError as error:
        actual: dict[str, Any] = {
            "valid": False,
            "refusal": error.found.defect.value,
            "where": error.found.describe(),
        }
        try:
            shown = _record_result(_unvalidated(kind, test_input["json"]))
        except Exception:  # noqa: BLE001 - the identity of a broken record may not be computable
            return actual
        return {**shown, **actual}
    except (TypeError, ValueError, KeyError) as error:
        return {"valid": False, "refusal": f"{type(error).__name__}: {error}"}
    result = _record_result(record)
    if record.to_json() != test_input["json"]:
        result["roundtrip"] = "the rebuilt record's JSON differs from the input"
    return result


# --------------------------------------------------------------------------------------------
# refusals.json: the catalogue's entries over the shipped chains, each giving one typed refusal


def _recipe_result(ctx: _Context, entry: catalogue.Entry) -> dict[str, Any]:
    """The entry's outcome on its shipped chain; where the catalogue states an outcome and the
    kernel gives another, the result says so (so the vector moves, naming the entry)."""
    outcome = entry.apply(ctx[entry.base[0] if entry.base else DU])
    result = _observe(outcome)
    if entry.expected is not None and catalogue.observe(outcome) != entry.expected:
        result["catalogue_expected"] = f"{entry.id}: {entry.expected}"
    return result


def _recipe_test(ctx: _Context, entry: catalogue.Entry) -> dict[str, Any]:
    return {
        "comment": entry.comment,
        "flags": list(entry.flags),
        "input": {"recipe": entry.recipe, "function": entry.stage, "base": list(entry.base)},
        "result": _recipe_result(ctx, entry),
    }


def _refusal_groups(ctx: _Context) -> list[dict[str, Any]]:
    names = [entry.recipe for entry in catalogue.ENTRIES if entry.group is not None]
    if len(names) != len(set(names)):
        raise RuntimeError("two recipes share a name")
    groups = []
    for group, description in catalogue.GROUPS:
        tests = [_recipe_test(ctx, entry) for entry in catalogue.in_group(group)]
        groups.append({"group": group, "description": description, "tests": tests})
    return groups


def _evaluate_recipe(ctx: _Context, test_input: dict[str, Any]) -> dict[str, Any]:
    for entry in catalogue.ENTRIES:
        if entry.group is not None and entry.recipe == test_input["recipe"]:
            return _recipe_result(ctx, entry)
    return {"valid": False, "refusal": f"no recipe named {test_input['recipe']}"}


# --------------------------------------------------------------------------------------------
# canonical.json: canonical_json over plain and hostile values; identity payloads


def value_of(spec: dict[str, Any]) -> object:
    """The Python value a canonical vector's input describes (data/vectors/README.md)."""
    kind = spec["kind"]
    if kind == "json":
        return json.loads(spec["text"])
    if kind == "bytes":
        return bytes.fromhex(spec["hex"])
    if kind == "str_subclass":
        return Text(spec["text"])
    if kind == "int_enum":
        return Small(spec["value"])
    if kind == "tuple":
        return tuple(json.loads(spec["text"]))
    if kind == "dict_with_key":
        return {**json.loads(spec["text"]), _key(spec["key"]): json.loads(spec["value"])}
    if kind == "nested_lists":
        value: object = json.loads(spec["leaf"])
        for _ in range(spec["depth"]):
            value = [value]
        return value
    if kind == "self_containing_list":
        loop: list[object] = []
        loop.append(loop)
        return loop
    if kind == "list_of":
        return [json.loads(spec["item"]) for _ in range(spec["count"])]
    if kind == "text_of":
        return spec["char"] * spec["length"]
    raise ValueError(f"unknown value kind {kind!r}")


def _key(spec: dict[str, Any]) -> object:
    return {"int": int, "bool": bool, "none": lambda _: None, "str_subclass": Text}[spec["type"]](
        spec["value"]
    )


def _j(text: str) -> dict[str, Any]:
    return {"kind": "json", "text": text}


# fmt: off
_CANONICAL_CASES: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    # (group, flags, comment, value)
    ("canonical_json", "Plain", "an empty object", _j("{}")),
    ("canonical_json", "Plain", "an empty list", _j("[]")),
    ("canonical_json", "Plain KeyOrder", "keys given out of order are sorted",
        _j('{"b": 1, "a": [true, false, null], "aa": {}}')),
    ("canonical_json", "Plain Whitespace", "whitespace in the input leaves no trace",
        _j('{ "a" : [ 1 , 2 ] }')),
    ("canonical_json", "IntBoundary", "the largest safe int", _j(str(MAX_SAFE_INT))),
    ("canonical_json", "IntBoundary", "the most negative safe int", _j(str(-MAX_SAFE_INT))),
    ("canonical_json", "IntBoundary", "zero written -0 prints as 0", _j("-0")),
    ("canonical_json", "Escapes", "control characters, quote and backslash",
        _j('"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\\"\\\\"')),
    ("canonical_json", "Escapes", "slash, DEL and the line separators are not escaped",
        _j('"/\\u007f\\u2028\\u2029"')),
    ("canonical_json", "Unicode", "non-ASCII text is written as UTF-8",
        _j('"caf\\u00e9 \\u00c5ngstr\\u00f6m \\u4e2d\\u6587"')),
    ("canonical_json", "Unicode", "a character outside the BMP (a surrogate pair escaped)",
        _j('"\\ud83d\\ude00"')),
    ("canonical_json", "Unicode", "a precomposed and a decomposed e-acute stay distinct",
        _j('["\\u00e9", "e\\u0301"]')),
    ("canonical_json", "Unicode KeyOrder", "BMP non-ASCII keys sort by code point",
        _j('{"\\u00e9": 1, "z": 2, "\\u00c5": 3}')),
    ("canonical_json", "Unicode KeyOrder JcsKeyOrderDiffers",
        "a key above U+FFFF sorts after U+FFFD here, before it in RFC 8785 (UTF-16 order)",
        _j('{"\\ufffd": 1, "\\ud83d\\ude00": 2}')),
    ("canonical_json", "Plain", "a tuple is encoded as a list",
        {"kind": "tuple", "text": "[1, 2]"}),
    ("canonical_json", "Depth Boundary", "lists nested exactly MAX_DEPTH deep",
        {"kind": "nested_lists", "depth": MAX_DEPTH, "leaf": "0"}),
    ("canonical_json", "Size Boundary", "a list of MAX_NODES - 1 items (MAX_NODES values)",
        {"kind": "list_of", "item": "0", "count": MAX_NODES - 1}),
    ("canonical_json", "Size Boundary", "a text of exactly MAX_TEXT_LENGTH characters",
        {"kind": "text_of", "char": "x", "length": MAX_TEXT_LENGTH}),
    ("canonical_json_refused", "Float", "a float", _j("1.5")),
    ("canonical_json_refused", "Float", "an integral float", _j("[1.0]")),
    ("canonical_json_refused", "Float", "negative zero as a float", _j("-0.0")),
    ("canonical_json_refused", "NonFinite", "NaN", _j("NaN")),
    ("canonical_json_refused", "NonFinite", "-Infinity inside an object", _j('{"a": -Infinity}')),
    ("canonical_json_refused", "IntRange", "2**53", _j(str(2**53))),
    ("canonical_json_refused", "IntRange", "-(2**53)", _j(str(-(2**53)))),
    ("canonical_json_refused", "IntRange", "a 40-digit int", _j("9" * 40)),
    ("canonical_json_refused", "KeyType", "an int key",
        {
            "kind": "dict_with_key",
            "text": '{"a": 1}',
            "key": {"type": "int", "value": 1},
            "value": "0",
        }),
    ("canonical_json_refused", "KeyType", "a bool key",
        {"kind": "dict_with_key", "text": "{}", "key": {"type": "bool", "value": 1}, "value": "0"}),
    ("canonical_json_refused", "KeyType", "a None key",
        {"kind": "dict_with_key", "text": "{}", "key": {"type": "none", "value": 0}, "value": "0"}),
    ("canonical_json_refused", "KeyType Subclass", "a str-subclass key",
        {
            "kind": "dict_with_key",
            "text": "{}",
            "key": {"type": "str_subclass", "value": "a"},
            "value": "0",
        }),
    ("canonical_json_refused", "Subclass", "a str-subclass value",
        {"kind": "str_subclass", "text": "budget_allowed_missing_role"}),
    ("canonical_json_refused", "Subclass BoolForInt", "an IntEnum member",
        {"kind": "int_enum", "value": 1}),
    ("canonical_json_refused", "UnsupportedType", "bytes", {"kind": "bytes", "hex": "6869"}),
    ("canonical_json_refused", "LoneSurrogate", "a lone high surrogate", _j('"a\\ud800"')),
    ("canonical_json_refused", "LoneSurrogate", "a lone low surrogate in a key",
        _j('{"\\udc00": 1}')),
    ("canonical_json_refused", "LoneSurrogate", "a reversed surrogate pair",
        _j('"\\ude00\\ud83d"')),
    ("canonical_json_refused", "Depth", "lists nested MAX_DEPTH + 1 deep",
        {"kind": "nested_lists", "depth": MAX_DEPTH + 1, "leaf": "0"}),
    ("canonical_json_refused", "Depth", "a list that contains itself",
        {"kind": "self_containing_list"}),
    ("canonical_json_refused", "Size", "a list of MAX_NODES items (one value too many)",
        {"kind": "list_of", "item": "0", "count": MAX_NODES}),
    ("canonical_json_refused", "Size", "a text of MAX_TEXT_LENGTH + 1 characters",
        {"kind": "text_of", "char": "x", "length": MAX_TEXT_LENGTH + 1}),
# fmt: on

)


def _encode(spec: dict[str, Any]) -> dict[str, Any]:
    try:
        data = canonical_json(value_of(spec))
    except CanonicalizationError as error:
        return _observe(error)
    return _valid_bytes(data)


# fmt: off
def _identity_payload_cases(ctx: _Context) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The identities that hash a value rather than a record: the gate's input digest
    (docs/adr/0002) and the candidate content digest (ADR-0231 §9). Each payload is written
    out here and must hash to what the kernel's own function gives."""
    gates: dict[str, tuple[str, SearchGateDecision]] = {}
    for name, case in [*ctx.examples.items(), *ctx.samples.items()]:
        gate = case.trace.gate_decision
        if gate is not None and gate.reason_code not in gates:
            gates[gate.reason_code] = (name, gate)
    withheld = decide_search_gate(ctx[DU].assessment, ())
    gates.setdefault(withheld.reason_code, (f"{DU}, residuals withheld", withheld))
    malformed = decide_search_gate("not an assessment", ())  # type: ignore[arg-type]
    gates.setdefault(malformed.reason_code, ("a string for the assessment", malformed))
    for name, gate in gates.values():
        arguments = {
            "problem_frame_digest": gate.problem_frame_digest,
            "contract_assessment_id": gate.contract_assessment_id,
            "residual_ids": list(gate.residual_ids),
        }
        payload = {"schema_version": GATE_INPUT_SCHEMA_VERSION, **arguments}
        yield ("GateInputDigest", f"gate input of {name} ({gate.reason_code})",
            {"function": "gate.gate_input_digest", "arguments": arguments, "payload": payload})
    directions: set[Direction] = set()
    for name, case in [*ctx.examples.items(), *ctx.samples.items()]:
        for outcome in case.trace.operator_outcomes:
            if type(outcome) is not CandidateOperatorResult:
                continue
            if outcome.reconstruction.candidate_payload.direction in directions:
                continue
            directions.add(outcome.reconstruction.candidate_payload.direction)
            rebuilt = outcome.reconstruction
            arguments = {
                "frame_digest": rebuilt.problem_frame_digest,
                "organ": rebuilt.candidate_organ,
                "payload": rebuilt.candidate_payload.to_json(),
                "spans": [span.to_json() for span in rebuilt.evidence_spans],
            }
            payload = {
                "problem_frame_digest": arguments["frame_digest"],
                "candidate_organ": arguments["organ"],
                "candidate_payload": arguments["payload"],
                "evidence_spans": arguments["spans"],
            }
            yield ("CandidateDigest", f"candidate content of {name}",
                {
                    "function": "operators.candidate_digest_of",
                    "arguments": arguments,
                    "payload": payload,
                })
# fmt: on


def _identity_of(test_input: dict[str, Any]) -> str:
    arguments = test_input["arguments"]
    if test_input["function"] == "gate.gate_input_digest":
        return gate_input_digest(
            arguments["problem_frame_digest"],
            arguments["contract_assessment_id"],
            tuple(arguments["residual_ids"]),
        )
    if test_input["function"] == "operators.candidate_digest_of":
        return candidate_digest_of(
            arguments["frame_digest"],
            arguments["organ"],
            record_from_json(RoleBindingDelta, arguments["payload"]),
            tuple(record_from_json(SourceSpan, span) for span in arguments["spans"]),
        )
    raise ValueError(f"unknown identity function {test_input['function']!r}")


def _evaluate_identity(test_input: dict[str, Any]) -> dict[str, Any]:
    data = canonical_json(test_input["payload"])
    result = _valid_bytes(data)
    kernel = _identity_of(test_input)
    result["id"] = kernel
    if kernel != result["digest"]:
        result["payload_matches_kernel"] = False
    return result


def _canonical_groups(ctx: _Context) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {
        "canonical_json": [],
        "canonical_json_refused": [],
        "identity_payloads": [],
    }
    for group, flags, comment, spec in _CANONICAL_CASES:
        groups[group].append(
            {
                "comment": comment,
                "flags": flags.split(),
                "input": {"value": spec},
                "result": _encode(spec),
            }
        )
    for flag, comment, test_input in _identity_payload_cases(ctx):
        result = _evaluate_identity(test_input)
        if "payload_matches_kernel" in result:
            raise RuntimeError(f"{comment}: the written payload does not hash to the kernel's id")
        groups["identity_payloads"].append(
            {"comment": comment, "flags": [flag], "input": test_input, "result": result}
        )
    descriptions = {
        "canonical_json": "values inside the hashable profile, and their canonical bytes",
        "canonical_json_refused": "values outside it: the CanonicalReason canonical_json raises",
        "identity_payloads": "identities over a value, not a record: the payload and its hash",
    }
    return [
        {
            "group": name,
            "description": descriptions[name],
            "function": _CANONICAL_FUNCTION[name],
            "tests": tests,
        }
        for name, tests in groups.items()
    ]


_CANONICAL_FUNCTION = {
    "canonical_json": "identity.canonical_json",
    "canonical_json_refused": "identity.canonical_json",
    "identity_payloads": "identity.canonical_json, and the kernel function named in the input",
}


def _evaluate_canonical(test_input: dict[str, Any]) -> dict[str, Any]:
    if "value" in test_input:
        return _encode(test_input["value"])
    return _evaluate_identity(test_input)


# --------------------------------------------------------------------------------------------
# loader.json: raw bytes for decode_canonical and for a stored trace


def bytes_of(spec: dict[str, Any]) -> bytes:
    """The raw bytes a loader vector's input describes: ``hex``, ``utf8`` text, or
    ``segments`` (each hex or utf8, repeated ``times``)."""
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    if "utf8" in spec:
        return spec["utf8"].encode("utf-8")
    return b"".join(bytes_of(part) * part.get("times", 1) for part in spec["segments"])


def _raw(data: bytes) -> dict[str, Any]:
    return {"hex": data.hex()}


def _decode(data: bytes) -> dict[str, Any]:
    try:
        value = decode_canonical(data)
    except CanonicalizationError as error:
        return _observe(error)
    return _valid_bytes(canonical_json(value))


def _load(data: bytes) -> dict[str, Any]:
    """The store's read path: load, verify, replay (docs/adr/0007)."""
    loaded = load_sealed_trace(data)
    if type(loaded) is TraceVerification:
        return _observe(loaded)
    checked = trace_entries.checked_trace(loaded)
    if checked is not None:
        return _observe(checked)
    return _valid_bytes(
        sealed_trace_bytes(loaded),
        id_field="trace_id",
        id_=loaded.trace_id,  # type: ignore[union-attr]
    )


def _doc(data: bytes) -> dict[str, Any]:
    return {"utf8": data.decode("utf-8")}


_BUDGET_FORM = (
    b'{"budget_id":"'
    + b"0" * 64
    + b'","max_steps":10,"policy_version":"compute_budget.v1","status":"BUDGET_ALLOWED"}'
)


# fmt: off
def _decode_cases() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(flags, comment, input) for decode_canonical: hostile bytes and the boundaries."""
    yield "Plain", "a canonical object", _raw(_BUDGET_FORM)
    yield "Plain", "a canonical empty object", _raw(b"{}")
    yield "IntBoundary", "the largest safe int", _raw(b"%d" % MAX_SAFE_INT)
    yield "IntBoundary", "the most negative safe int", _raw(b"%d" % -MAX_SAFE_INT)
    yield ("BoolForInt", "true where a record wants an int (bools are hashable)",
        _raw(_BUDGET_FORM.replace(b'"max_steps":10', b'"max_steps":true')))
    yield "Unicode", "non-ASCII text as UTF-8", _raw('["café","😀"]'.encode())
    yield ("Escapes", "control characters escaped as canonical_json escapes them",
        _raw(b'"\\u0000\\b\\t\\n\\f\\r\\u001f\\"\\\\"'))
    yield ("Depth Boundary", "arrays nested exactly MAX_DEPTH deep",
        _raw(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH))
    yield ("Float", "an int field written 10.0",
        _raw(_BUDGET_FORM.replace(b'"max_steps":10', b'"max_steps":10.0')))
    yield ("Float", "an int field written with an exponent",
        _raw(_BUDGET_FORM.replace(b'"max_steps":10', b'"max_steps":1e1')))
    yield "Float", "negative zero written -0.0", _raw(b"-0.0")
    yield "NonFinite", "NaN", _raw(b'{"a":NaN}')
    yield "NonFinite", "-Infinity", _raw(b"[-Infinity]")
    yield "IntRange", "2**53", _raw(b"%d" % 2**53)
    yield "IntRange", "-(2**53)", _raw(b"%d" % -(2**53))
    yield "IntRange", "a 17-digit int, refused before conversion", _raw(b"1" + b"0" * 16)
    yield "IntRange", "a 5000-digit int", {"segments": [{"hex": "39", "times": 5000}]}
    yield "DuplicateKey", "a key given twice", _raw(b'{"a":1,"a":1}')
    yield ("DuplicateKey", "a second max_steps ahead of the first",
        _raw(b'{"max_steps":0,' + _BUDGET_FORM[1:]))
    yield "KeyOrder", "keys out of order", _raw(b'{"b":1,"a":2}')
    yield "Whitespace", "a space after the colon", _raw(b'{"a": 1}')
    yield "Whitespace", "a trailing newline", _raw(b"{}\n")
    yield "Whitespace", "a leading space", _raw(b" {}")
    yield "Escapes", "an ASCII letter written \\u0041", _raw(b'"\\u0041"')
    yield "Escapes", "a slash written \\/", _raw(b'"\\/"')
    yield "Escapes", "non-ASCII written as an escape", _raw(b'"caf\\u00e9"')
    yield "Escapes", "a control character written \\u000a, not \\n", _raw(b'"\\u000a"')
    yield "IntBoundary", "negative zero -0", _raw(b"-0")
    yield "LoneSurrogate", "an escaped lone high surrogate", _raw(b'"\\ud800"')
    yield "LoneSurrogate", "an escaped lone low surrogate as a key", _raw(b'{"\\udfff":1}')
    yield "Utf8", "a surrogate encoded as UTF-8 bytes", _raw(b'"\xed\xa0\x80"')
    yield "Utf8", "the byte 0xff", _raw(b'"\xff"')
    yield "Utf8", "an overlong encoding of '/'", _raw(b'"\xc0\xaf"')
    yield "Utf8", "a UTF-8 byte order mark", _raw(b"\xef\xbb\xbf{}")
    yield "InvalidJson", "truncated", _raw(b'{"a":1')
    yield "InvalidJson", "a leading zero", _raw(b"01")
    yield "InvalidJson", "empty", _raw(b"")
    yield "InvalidJson", "a trailing comma", _raw(b"[1,]")
    yield ("Depth", "arrays nested MAX_DEPTH + 1 deep",
        _raw(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)))
    yield ("Depth", "a record wrapped in MAX_DEPTH arrays",
        _raw(b"[" * MAX_DEPTH + _BUDGET_FORM + b"]" * MAX_DEPTH))
    yield ("Size", "a text of MAX_TEXT_LENGTH + 1 characters",
        {"segments": [{"utf8": '"'}, {"utf8": "x", "times": MAX_TEXT_LENGTH + 1}, {"utf8": '"'}]})
    yield ("Size", "a list of MAX_NODES zeros (one value too many)",
        {"segments": [{"utf8": "["}, {"utf8": "0,", "times": MAX_NODES - 1}, {"utf8": "0]"}]})
    yield ("Size", "MAX_DOCUMENT_BYTES + 1 bytes",
        {
            "segments": [
                {"utf8": '"'},
                {"utf8": "x", "times": MAX_DOCUMENT_BYTES - 1},
                {"utf8": '"'},
            ]
        })
    yield ("UnsupportedType", "text, not bytes (the input is passed as str)",
        {"utf8": "{}", "as_text": True})
# fmt: on


def _decode_input(spec: dict[str, Any]) -> object:
    data = bytes_of(spec)
    return data.decode("utf-8") if spec.get("as_text") else data


def _decode_any(spec: dict[str, Any]) -> dict[str, Any]:
    value = _decode_input(spec)
    if type(value) is bytes:
        return _decode(value)
    try:
        decode_canonical(value)  # type: ignore[arg-type]
    except CanonicalizationError as error:
        return _observe(error)
    return {"valid": True}


def _trace_form(trace: object) -> bytes:
    """Canonical bytes of a trace's JSON form, whatever it holds."""
    return canonical_json(trace.to_json())  # type: ignore[attr-defined]


# fmt: off
def _trace_cases(ctx: _Context) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name, case in ctx.examples.items():
        yield "TraceDocument", f"{name}: the stored trace", _doc(sealed_trace_bytes(case.trace))
    ri = sealed_trace_bytes(ctx[RI].trace)
    yield "TraceDocument Whitespace", f"{RI} with a trailing newline", _doc(ri + b"\n")
    yield ("TraceDocument BoolForInt", f"{RI} with a span start written true",
        _doc(int_field(ri, "start", b"true")))
    yield ("TraceDocument Float", f"{RI} with a span start written 8.0",
        _doc(int_field(ri, "start", b"8.0")))
    yield ("TraceDocument IntRange", f"{RI} with a fact value of 2**53",
        _doc(int_field(ri, "value", b"%d" % 2**53)))
    yield ("TraceDocument KeyOrder", f"{RI} re-written with its keys in reverse order",
        _doc(
            json.dumps(
                _reverse_keys(ctx[RI].trace.to_json()), separators=(",", ":"), ensure_ascii=False
            ).encode("utf-8")
        ))
    form = ctx[RI].trace.to_json()
    form["frame"]["extra"] = 1
    yield "TraceDocument", f"{RI} with a field the frame does not have", _doc(canonical_json(form))
    form = ctx[RI].trace.to_json()
    form["original_assessment"]["status"] = "maybe"
    yield ("TraceDocument", f"{RI} with an assessment status outside the enum",
        _doc(canonical_json(form)))
    form = ctx[RI].trace.to_json()
    del form["outcome"]["answer_id"]
    yield "TraceDocument", f"{RI} whose answer lost its id field", _doc(canonical_json(form))
    trace = ctx[RI].trace
    changed = tampered(trace, direct_proof=tampered(trace.direct_proof, derived_value=12))
    yield ("TraceDocument", f"{RI} whose direct proof derives 12 (not re-sealed)",
        _doc(_trace_form(changed)))
    yield ("TraceDocument", f"{RI} whose trace_id is another digest",
        _doc(_trace_form(tampered(trace, trace_id=other_digest(trace.trace_id)))))
    yield ("TraceDocument", f"{RI} with its stage index reversed, re-sealed",
        _doc(_trace_form(resealed(trace, stage_digests=trace.stage_digests[::-1]))))
    yield ("TraceDocument", f"{RI} re-sealed under sealed_practice_trace.v2",
        _doc(_trace_form(resealed(trace, schema_version="sealed_practice_trace.v2"))))
    newer = (("answer", "proof_gated_answer.v2"), *TRACE_VERSIONS[1:])
    yield ("TraceDocument", f"{RI} re-sealed naming proof_gated_answer.v2",
        _doc(_trace_form(resealed(trace, versions=newer))))
    yield ("TraceDocument", f"{TWO} whose run refusal names another input, re-sealed",
        _doc(_trace_form(trace_entries.cross_identity_forgery(ctx[TWO]))))
    yield ("TraceDocument", f"{TWO} forged consistently: a blocked gate and its answers",
        _doc(sealed_trace_bytes(trace_entries.consistent_forgery(ctx[TWO]))))
    # Issue 15: appended last, so that no earlier vector's tcId moves.
    yield ("TraceDocument Genuine",
        f"{DU} decided under a registered {UNREGISTERED_BUDGET_VERSION} table, declaring"
        f" {COMPUTE_BUDGET_IN_FORCE.version}",
        _doc(sealed_trace_bytes(_stale_budget_trace(ctx))))
    outcome = dataclasses.replace(trace.outcome, explanation="answered: eleven apples")
    yield ("TraceDocument Prose",
        f"{RI} with its answer's explanation reworded (no identity moves)",
        _doc(sealed_trace_bytes(dataclasses.replace(trace, outcome=outcome))))
# fmt: on


def _stale_budget_trace(ctx: _Context) -> SealedPracticeTrace:
    """direction_unbound's case with the budget decided by the kernel under a candidate
    version the kernel does not register (the rows in force), passed in explicitly as
    ``practice-loop prove-policy`` does; the run refuses that budget, and the trace is sealed
    by the kernel with the versions in force (docs/adr/0007 step 2)."""
    case = ctx[DU]
    candidate = ComputeBudgetPolicy(UNREGISTERED_BUDGET_VERSION, COMPUTE_BUDGET_IN_FORCE.rows)
    budget = decide_compute_budget(case.gate, candidate, registered={candidate.version: candidate})
    search_input = search_input_for(case.gate, budget, CANDIDATE_OPERATOR_SET, V2)
    return seal_practice_trace(
        frame=case.frame,
        original_assessment=case.assessment,
        residuals=case.trace.residuals,
        gate_decision=case.gate,
        budget_decision=budget,
        search_input=search_input,
        run_outcome=open_search_run(search_input, case.gate, budget, CANDIDATE_OPERATOR_SET),
        outcome=decide_answer(case.frame, case.assessment),
    )


def _reverse_keys(value: object) -> object:
    if type(value) is dict:
        return {key: _reverse_keys(value[key]) for key in sorted(value, reverse=True)}
    if type(value) is list:
        return [_reverse_keys(item) for item in value]
    return value


_LOAD_FUNCTIONS = "trace.load_sealed_trace, trace.verify_sealed_trace, loop.replay_divergence"


def _loader_groups(ctx: _Context) -> list[dict[str, Any]]:
    decode = [
        {
            "comment": comment,
            "flags": flags.split(),
            "input": {"bytes": spec},
            "result": _decode_any(spec),
        }
        for flags, comment, spec in _decode_cases()
    ]
    load = [
        {
            "comment": comment,
            "flags": flags.split(),
            "input": {"bytes": spec},
            "result": _load(bytes_of(spec)),
        }
        for flags, comment, spec in _trace_cases(ctx)
    ]
    return [
        {
            "group": "decode_canonical",
            "description": "raw bytes read back as canonical JSON: the value or the reason",
            "function": "identity.decode_canonical",
            "tests": decode,
        },
        {
            "group": "load_sealed_trace",
            "description": "a stored trace: load, then verify, then replay; the first failure",
            "function": _LOAD_FUNCTIONS,
            "tests": load,
        },
    ]


def _evaluate_loader(group: str, test_input: dict[str, Any]) -> dict[str, Any]:
    if group == "decode_canonical":
        return _decode_any(test_input["bytes"])
    return _load(bytes_of(test_input["bytes"]))


# --------------------------------------------------------------------------------------------
# The files

FLAG_NOTES = {
    # where a case comes from
    "ShippedExample": "built from a shipped example (examples.shipped_examples) by practice_case",
    "SampleLine": (
        "built from a line of data/sample.jsonl by read_question and practice_case; kept only "
        "where it shows a record with enum values or codes no earlier vector of its kind shows"
    ),
    "Derived": "made by a kernel stage from the shipped examples' records, outside the loop",
    "KernelConstant": "a constant table of the kernel (a policy or an operator set)",
    # how a record's identity is made (docs/adr/0003)
    "SelfSealed": 'the id field is blanked to "" in what is hashed',
    "IdOmitted": "the id field is left out of what is hashed (ADR-0227 §7, ADR-0228 §10)",
    "ContentDigest": (
        "no id field: the digest is the record's content identity (problem_frame_digest, "
        "operator_set_id, GeometricSearchInput.input_digest)"
    ),
    # how a refusal's input was made
    "Genuine": "every record is the untouched output of a kernel stage",
    "Tampered": "a record altered after sealing, its identity not recomputed",
    "Resealed": "a record altered and its own identity recomputed over the change",
    "Forged": "records altered and re-sealed so that each names the others consistently",
    "ForeignType": "a value of another type where a record is expected",
    "Absent": "a required record is None",
    # canonical JSON and the loader (docs/adr/0003)
    "Plain": "an ordinary value inside the hashable profile",
    "KeyOrder": "object keys not in canonical order",
    "Whitespace": "whitespace the canonical form does not have",
    "IntBoundary": "an int at or around the safe range ±(2**53 - 1)",
    "IntRange": "an int outside ±(2**53 - 1)",
    "Escapes": "string escapes: which characters are escaped and how",
    "Unicode": "non-ASCII text",
    "JcsKeyOrderDiffers": (
        "non-ASCII keys ordered differently by code point (ours) and by UTF-16 code unit "
        "(RFC 8785); the only place our bytes and JCS bytes may differ"
    ),
    "Float": "a float or a number written with a fraction or an exponent",
    "NonFinite": "NaN or Infinity",
    "BoolForInt": "a bool where an int belongs",
    "KeyType": "an object key that is not an exact str",
    "Subclass": "a subclass of str or int, which json.dumps would serialize by what it claims",
    "UnsupportedType": "a type outside the hashable profile",
    "LoneSurrogate": "a UTF-16 surrogate code point that UTF-8 cannot encode",
    "Utf8": "bytes that are not strict UTF-8",
    "InvalidJson": "bytes that are not JSON at all",
    "DuplicateKey": "an object key given twice",
    "Depth": "nesting beyond MAX_DEPTH",
    "Size": "beyond a size cap: MAX_TEXT_LENGTH, MAX_NODES, MAX_DOCUMENT_BYTES or MAX_SEQUENCE",
    "Boundary": "exactly at a cap, and so still valid",
    "GateInputDigest": "the search_gate_input.v1 payload the gate's input_digest hashes",
    "CandidateDigest": "the candidate content payload candidate_digest hashes (ADR-0231 §9)",
    "TraceDocument": "a stored trace's bytes, read back as the store reads them",
    "Prose": "an explanation reworded: no identity moves (prose is in none), the bytes do",
}

_FAMILIES: dict[str, tuple[str, str, list[str], Callable[[_Context], list[dict[str, Any]]]]] = {
    "records.json": (
        "records",
        "canonical JSON (docs/adr/0003) of each record's identity payload, and SHA-256",
        [
            "One group per record kind exported by practice_loop.kernel.",
            "input.json is the record's full to_json() form (prose included); rebuild it with "
            "practice_loop.kernel.identity.record_from_json(kind, input.json).",
            "result.canonical is canonical_json(record.identity_payload()): every field but "
            "prose, at every depth, the id field blanked or left out; result.digest is its "
            "SHA-256, and result.id the value of result.id_field, which must equal it.",
        ],
        _record_groups,
    ),
    "refusals.json": (
        "refusals",
        "typed refusals of every kernel stage",
        [
            "One group per refusal family; input.recipe names a deterministic recipe in "
            "practice_loop.vectors over the cases named in input.base.",
            "result.refusal is the exact reason code (reason_codes[0], the gate or budget "
            "reason_code, the TraceFailureCode or the Defect); the other result fields are the "
            "status, disposition, stage or full codes that come with it.",
        ],
        _refusal_groups,
    ),
    "canonical.json": (
        "canonical",
        "canonical_json: json.dumps(sort_keys, separators (',', ':'), ensure_ascii=False) "
        "over the hashable profile, UTF-8, and SHA-256",
        [
            "input.value describes a Python value: kind 'json' is json.loads(text) (Python's "
            "permissive parser, so floats, NaN and surrogate escapes pass through); the other "
            "kinds build what JSON cannot write (data/vectors/README.md).",
            "identity_payloads: the payload written out, its canonical bytes and SHA-256, and "
            "result.id, what the kernel function gives for input.arguments (equal to digest).",
        ],
        _canonical_groups,
    ),
    "loader.json": (
        "loader",
        "decode_canonical and load_sealed_trace over raw bytes",
        [
            "input.bytes is raw bytes: hex, utf8 text, or segments (each hex or utf8, repeated "
            "'times'); as_text passes the text itself instead of bytes.",
            f"A valid result carries its canonical text when it is at most "
            f"{INLINE_CANONICAL_BYTES} bytes, else null (the input is that text).",
        ],
        _loader_groups,
    ),
}
FILES = tuple(_FAMILIES)


def _document(name: str, ctx: _Context) -> dict[str, Any]:
    family, algorithm, header, build = _FAMILIES[name]
    groups = build(ctx)
    tc_id = 0
    used: set[str] = set()
    for group in groups:
        for test in group["tests"]:
            tc_id += 1
            test["tcId"] = tc_id
            used.update(test["flags"])
    unknown = used - set(FLAG_NOTES)
    if unknown:
        raise RuntimeError(f"{name}: flags without a note: {sorted(unknown)}")
    return {
        "schema": VECTOR_SCHEMA,
        "family": family,
        "algorithm": algorithm,
        "generatorVersion": GENERATOR_VERSION,
        "header": header,
        "numberOfTests": tc_id,
        "notes": {flag: FLAG_NOTES[flag] for flag in sorted(used)},
        "testGroups": groups,
    }


def _dump(document: dict[str, Any]) -> bytes:
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def generate() -> dict[str, bytes]:
    """Every vector file's bytes, as ``write_vectors`` would write them."""
    ctx = _Context()
    return {name: _dump(_document(name, ctx)) for name in FILES}


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``: a
    reader sees the old file or the new one, never a part of either."""
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        os.chmod(temporary, 0o666 & ~_umask())
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_vectors(directory: Path = DEFAULT_DIRECTORY) -> list[Path]:
    """Regenerate every vector file in ``directory``, each written atomically."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in generate().items():
        path = directory / name
        _atomic_write(path, data)
        written.append(path)
    return written


_ABSENT = "<absent>"
_RESULT_ORDER = ("valid", "refusal", "canonical", "digest", "id_field", "id")


def _differences(file: str, test: dict[str, Any], actual: dict[str, Any]) -> list[Drift]:
    expected = test.get("result", {})
    keys = [key for key in _RESULT_ORDER if key in expected or key in actual]
    keys += sorted((set(expected) | set(actual)) - set(_RESULT_ORDER))
    return [
        Drift(file, test.get("tcId"), test.get("comment", ""), key, was, now)
        for key in keys
        if (was := expected.get(key, _ABSENT)) != (now := actual.get(key, _ABSENT))
    ]


class _LazyContext:
    """The cases, built on first use; a failure to build them is every recipe's result."""

    def __init__(self) -> None:
        self._built: _Context | None = None
        self._error: str | None = None

    def get(self) -> _Context:
        if self._error is None and self._built is None:
            try:
                self._built = _Context()
            except Exception as error:  # noqa: BLE001 - reported as the result of every recipe
                self._error = f"the cases could not be built: {type(error).__name__}: {error}"
        if self._built is None:
            raise RuntimeError(self._error)
        return self._built


def _evaluate(file: str, group: str, test_input: dict[str, Any], cases: _LazyContext) -> dict:
    if file == "records.json":
        return _evaluate_record(test_input)
    if file == "refusals.json":
        return _evaluate_recipe(cases.get(), test_input)
    if file == "canonical.json":
        return _evaluate_canonical(test_input)
    return _evaluate_loader(group, test_input)


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def check_vectors(directory: Path = DEFAULT_DIRECTORY) -> list[Drift]:
    """Run every frozen input through the kernel as it is now; one ``Drift`` per result
    field that moved (and one per missing or unreadable file)."""
    directory = Path(directory)
    cases = _LazyContext()
    drifts: list[Drift] = []
    for name in FILES:
        path = directory / name
        try:
            document = _read(path)
        except FileNotFoundError:
            drifts.append(Drift(name, None, "", "file", "present", "missing"))
            continue
        except ValueError as error:
            drifts.append(Drift(name, None, "", "file", "JSON", f"unreadable: {error}"))
            continue
        if document.get("schema") != VECTOR_SCHEMA:
            drifts.append(Drift(name, None, "", "schema", VECTOR_SCHEMA, document.get("schema")))
            continue
        for group in document["testGroups"]:
            for test in group["tests"]:
                try:
                    actual = _evaluate(name, group["group"], test["input"], cases)
                except Exception as error:  # noqa: BLE001 - a vector that crashes has moved
                    actual = {"raised": f"{type(error).__name__}: {error}"}
                drifts.extend(_differences(name, test, actual))
    return drifts


def _tests_by_id(document: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {
        test["tcId"]: {**test, "group": group["group"]}
        for group in document.get("testGroups", ())
        for test in group["tests"]
    }


def compare_regenerated(directory: Path = DEFAULT_DIRECTORY) -> list[Drift]:
    """Regenerate the files in memory and report every vector the generator would now write
    differently from ``directory`` (a new, changed or vanished tcId, a changed header)."""
    directory = Path(directory)
    drifts: list[Drift] = []
    try:
        fresh = generate()
    except Exception as error:  # noqa: BLE001 - a generator the kernel broke is a finding
        return [Drift("*", None, "", "generator", "runs", f"{type(error).__name__}: {error}")]
    for name, data in fresh.items():
        path = directory / name
        if not path.is_file():
            drifts.append(Drift(name, None, "", "file", "present", "missing"))
            continue
        stored = path.read_bytes()
        if stored == data:
            continue
        try:
            old = json.loads(stored)
        except ValueError as error:
            drifts.append(Drift(name, None, "", "file", "JSON", f"unreadable: {error}"))
            continue
        new = json.loads(data)
        found = [
            Drift(name, None, "", f"header.{key}", old.get(key, _ABSENT), new.get(key, _ABSENT))
            for key in sorted((set(old) | set(new)) - {"testGroups"})
            if old.get(key, _ABSENT) != new.get(key, _ABSENT)
        ]
        before, after = _tests_by_id(old), _tests_by_id(new)
        for tc_id in sorted(set(before) | set(after)):
            was, now = before.get(tc_id, {}), after.get(tc_id, {})
            comment = now.get("comment") or was.get("comment", "")
            found.extend(
                Drift(name, tc_id, comment, key, was.get(key, _ABSENT), now.get(key, _ABSENT))
                for key in ("group", "comment", "flags", "input", "result")
                if was.get(key, _ABSENT) != now.get(key, _ABSENT)
            )
        if not found:
            found.append(Drift(name, None, "", "bytes", "as generated", "formatted differently"))
        drifts.extend(found)
    for path in sorted(directory.glob("*.json")):
        if path.name not in fresh:
            drifts.append(Drift(path.name, None, "", "file", "not generated", "present"))
    return drifts


# --------------------------------------------------------------------------------------------
# Command line: ``practice-loop vectors [--check | --write] [--dir DIR]``


def _configure(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="re-run every vector and compare with a fresh generation (the default)",
    )
    mode.add_argument("--write", action="store_true", help="regenerate the vector files")
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_DIRECTORY,
        help="the vector directory (default: the package's data/vectors)",
    )


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``vectors`` to a ``practice-loop`` subparsers object; its handler is
    ``run_command`` (``args.handler(args)`` returns the exit status)."""
    parser = subparsers.add_parser(
        "vectors",
        help="check the golden vectors against the kernel, or regenerate them",
        description="Re-run every golden vector (identities, refusals, canonical bytes, the "
        "trace loader) against the kernel and compare it with a fresh generation, or, with "
        "--write, regenerate the vector files of a checkout. Exit status: 0 nothing moved (or "
        "the files were written); 1 a vector's result moved or the generator now writes an "
        "entry differently (each is named); 2 a usage error (no such directory, or --write "
        "into the installed packages).",
    )
    _configure(parser)
    parser.set_defaults(handler=run_command)
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Exit status: 0 nothing moved (or written), 1 vectors moved, 2 usage error."""
    directory: Path = args.dir
    if args.write:
        installed = _installed_location(directory)
        if installed is not None:
            print(
                f"practice-loop vectors: --write regenerates the vectors of a checkout; "
                f"{directory} is inside the installed packages ({installed}). Run it in a "
                "checkout of practice-loop (pip install -e .), or give --dir a directory "
                "of your own.",
                file=sys.stderr,
            )
            return 2
        for path in write_vectors(directory):
            print(f"wrote {path}")
        return 0
    if not directory.is_dir():
        print(f"practice-loop vectors: no such directory: {directory}", file=sys.stderr)
        return 2
    moved = check_vectors(directory)
    stale = compare_regenerated(directory)
    for drift in moved:
        print(drift.describe())
    if stale:
        print(f"the generator now writes these differently; run `{WRITE_COMMAND}` and review:")
        for drift in stale:
            print(drift.describe())
    total = sum(
        _read(directory / name)["numberOfTests"] for name in FILES if (directory / name).is_file()
    )
    print(f"{total} vectors checked: {len(moved)} result fields moved, {len(stale)} stale entries")
    return 1 if moved or stale else 0


def _installed_location(directory: Path) -> Path | None:
    """The site-packages (or other install scheme directory) ``directory`` is in, if any:
    a wheel's files belong to the installer, not to this command."""
    for name in ("purelib", "platlib"):
        for scheme_directory in {sysconfig.get_paths()[name], site.getusersitepackages()}:
            location = Path(scheme_directory).resolve()
            if directory.resolve().is_relative_to(location):
                return location
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="practice-loop vectors",
        description="Golden vectors for every identity and refusal of the kernel.",
    )
    _configure(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on a usage error, 0 after --help
        return int(exit_.code or 0)
    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
