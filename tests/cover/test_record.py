"""The record base (docs/adr/0013): one encoder, each field's check declared once next to the
field, and trust that lasts one call and belongs to the thread that opened it."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import threading
import typing
from typing import Annotated, Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    SEARCH_GATE_IN_FORCE,
    ContractAssessment,
    SealedPracticeTrace,
    assess,
    canonical_json,
    practice_case,
    sealed_trace_bytes,
    trust_scope,
    verify_sealed_trace,
)
from practice_loop.kernel import record as record_module
from practice_loop.kernel import trust as trust_module
from practice_loop.kernel.checks import (
    Defect,
    RecordDefect,
    RecordError,
    digest,
    member_of,
    non_negative_int,
    text,
    tuple_of,
)
from practice_loop.kernel.identity import CanonicalizationError, CanonicalReason
from practice_loop.kernel.record import (
    DecodeError,
    DecodeReason,
    Record,
    inspect_record,
    nested,
    record_from_json,
)
from practice_loop.kernel.span import SourceSpan
from practice_strategies import Impostor, chains, problem_frames, share


def _record_classes() -> list[type]:
    found, pending = [], [Record]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            pending.append(sub)
            if dataclasses.is_dataclass(sub) and sub.__dict__.get("__slots__"):
                found.append(sub)
    return sorted(found, key=lambda cls: cls.__name__)


RECORD_CLASSES = _record_classes()


# Tuple fields that must hold at least one item, kind by kind (docs/adr/0003, "Tuples that
# must hold an item"): written here, not read from the kernel's declarations.
NON_EMPTY_TUPLES = {
    "AnswerRefusal": {"reason_codes"},
    "CandidateOperatorPolicy": {
        "allowed_candidate_organs",
        "allowed_residual_codes",
        "allowed_residual_kinds",
        "determinism_requirements",
        "forbidden_authority_paths",
    },
    "CandidateOperatorRefusal": {"reason_codes"},
    "CandidateOperatorResult": {"reason_codes"},
    "CandidateReconstruction": {"evidence_spans"},
    "GeometricSearchRun": {"residual_ids"},
    "OpenedSearchRun": {"residual_ids"},
    "OperatorManifestRow": {
        "allowed_candidate_organs",
        "allowed_residual_codes",
        "allowed_residual_kinds",
        "forbidden_side_effects",
        "input_obligations",
        "ordering_key",
        "replay_obligations",
    },
    "ProofRecord": {"obligations"},
    "ReplayRefusal": {"reason_codes"},
    "RoleBinding": {"evidence_spans"},
    "SealedPracticeTrace": {"stage_digests"},
    "SearchRunRefusal": {"reason_codes"},
    "StageRefusal": {"reason_codes"},
}


def _tuple_fields(kind: type) -> list[str]:
    hints = typing.get_type_hints(kind, include_extras=True)
    return [
        field.name
        for field in dataclasses.fields(kind)
        if typing.get_origin(typing.get_args(hints[field.name])[0]) is tuple
    ]


KERNEL_TUPLE_FIELDS = [
    (kind, field)
    for kind in RECORD_CLASSES
    if kind.__module__.startswith("practice_loop.kernel.")
    for field in _tuple_fields(kind)
]


def test_the_non_empty_table_names_only_tuple_fields_of_kernel_kinds():
    named = {(kind.__name__, field) for kind, field in KERNEL_TUPLE_FIELDS}
    table = {(kind, field) for kind, fields in NON_EMPTY_TUPLES.items() for field in fields}
    assert table <= named, table - named


@pytest.mark.parametrize(
    ("kind", "field"),
    KERNEL_TUPLE_FIELDS,
    ids=[f"{kind.__name__}.{field}" for kind, field in KERNEL_TUPLE_FIELDS],
)
@share(10)
@given(st.data())
def test_a_tuple_field_is_refused_empty_exactly_where_our_schema_wants_an_item(kind, field, data):
    """Emptied, a tuple field the table names is refused as SEQUENCE_EMPTY naming that field;
    any other is not refused for being empty (it may still break a cross-check or the id).
    The table is written from docs/adr/0003, not read from the kernel, so a field check that
    stops (or starts) requiring an item fails here."""
    record = data.draw(st.from_type(kind))
    required = field in NON_EMPTY_TUPLES.get(kind.__name__, set())
    try:
        dataclasses.replace(record, **{field: ()})
    except RecordError as error:
        emptied = RecordDefect(kind.__name__, field, Defect.SEQUENCE_EMPTY)
        assert (error.found == emptied) is required, error.found
    else:
        assert not required


def _tree(record: object) -> list[Record]:
    """Every record in ``record``'s tree, itself included."""
    found: list[Record] = []
    pending = [record]
    while pending:
        value = pending.pop()
        if isinstance(value, Record):
            found.append(value)
            pending.extend(getattr(value, field.name) for field in dataclasses.fields(value))
        elif type(value) is tuple:
            pending.extend(value)
    return found


def test_the_kernel_defines_records():
    assert len(RECORD_CLASSES) >= 40, [cls.__name__ for cls in RECORD_CLASSES]


# --------------------------------------------------------------------------------------------
# Fields declared once


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
@pytest.mark.parametrize("kind", RECORD_CLASSES, ids=lambda cls: cls.__name__)
def test_every_field_has_its_one_check_and_schema_is_derived(kind):
    """``SCHEMA`` is exactly the fields, in declaration order, each with a callable check."""
    names = [field.name for field in dataclasses.fields(kind)]
    assert [name for name, _ in kind.SCHEMA] == names
    assert all(callable(check) for _, check in kind.SCHEMA)
    assert "SCHEMA" in kind.__dict__  # derived for this kind, never inherited


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_field_without_a_check_cannot_be_declared():
    with pytest.raises(TypeError, match=r"Unchecked\.count: declare it Annotated\[type, check\]"):

        @dataclasses.dataclass(frozen=True, slots=True)
        class Unchecked(Record):
            name: Annotated[str, text]
            count: int


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_field_with_two_checks_cannot_be_declared():
    with pytest.raises(TypeError, match=r"Doubly\.count"):

        @dataclasses.dataclass(frozen=True, slots=True)
        class Doubly(Record):
            count: Annotated[int, non_negative_int, text]


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_kind_that_is_not_slotted_is_refused_at_construction():
    """Without ``slots=True`` the dataclass is never seen with its fields: it cannot be built."""

    @dataclasses.dataclass(frozen=True)
    class Unslotted(Record):
        name: Annotated[str, text]

    with pytest.raises(TypeError, match="frozen and slotted"):
        Unslotted("x")


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_kind_that_is_not_frozen_cannot_be_declared():
    """A record's identity seals its fields once; a mutable kind could change after sealing."""
    with pytest.raises(TypeError, match="Mutable: declare record kinds frozen and slotted"):

        @dataclasses.dataclass(slots=True)
        class Mutable(Record):
            name: Annotated[str, text]


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_declared_kind_checks_its_fields_and_seals_its_identity():
    @dataclasses.dataclass(frozen=True, slots=True)
    class Sealed(Record):
        sealed_id: Annotated[str, digest]
        count: Annotated[int, non_negative_int]
        explanation: Annotated[str, text]

        ID_FIELD: ClassVar = "sealed_id"

    record = Sealed.sealed(count=3, explanation="why")
    assert record.sealed_id == record.compute_id()
    assert record.canonical_bytes() == canonical_json(record.to_json())
    assert Sealed(record.sealed_id, 3, "other prose").sealed_id == record.sealed_id
    with pytest.raises(RecordError, match="Sealed.count: negative_value"):
        dataclasses.replace(record, count=-1)
    object.__setattr__(record, "count", 4)  # altered in place: its id no longer reproduces
    found = inspect_record(record, Sealed)
    assert found is not None and (found.field, found.defect) == (
        "sealed_id",
        Defect.IDENTITY_MISMATCH,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Lettered(Record):
    """A sealed kind with a field named on each side of its id, in key order."""

    alpha: Annotated[str, text]
    middle_id: Annotated[str, digest]
    zulu: Annotated[int, non_negative_int]

    ID_FIELD: ClassVar = "middle_id"


class _EqualToEverything:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


@pytest.mark.parametrize("missing", ["alpha", "zulu"])
def test_sealing_without_a_field_names_the_field_whichever_side_of_the_id_it_sorts(missing):
    """``sealed()`` fills in only the id; any other field left out is a TypeError naming it,
    never a placeholder id standing in for it (a check ordering field names against the id
    field would let one side through)."""
    fields = {"alpha": "a", "zulu": 1}
    del fields[missing]
    with pytest.raises(TypeError, match=rf"_Lettered\.sealed\(\) needs {missing}$"):
        _Lettered.sealed(**fields)
    assert (
        _Lettered.sealed(alpha="a", zulu=1).middle_id
        == _Lettered.sealed(zulu=1, alpha="a").middle_id
    )


def test_a_value_that_claims_to_equal_anything_is_a_field_value_not_a_missing_field():
    """Whether a field was given is asked by identity: a value whose ``__eq__`` says yes to
    everything is validated as that field's value (and refused by its check), not taken for
    the ``dataclasses.MISSING`` sentinel."""
    with pytest.raises(RecordError) as raised:
        _Lettered.sealed(alpha=_EqualToEverything(), zulu=1)
    assert (raised.value.found.field, raised.value.found.defect) == ("alpha", Defect.WRONG_TYPE)


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 300  # past CPython's shared small ints


@dataclasses.dataclass(frozen=True, slots=True)
class _Counted(Record):
    """Values no kernel kind holds today, which the one encoder must still encode as the
    profile does: ints inside a tuple, and an enum whose values are ints."""

    counts: Annotated[tuple[int, ...], tuple_of(non_negative_int)]
    level: Annotated[_Level, member_of(_Level)]


@pytest.mark.parametrize("level", list(_Level))
def test_ints_in_a_tuple_and_int_valued_enums_encode_as_the_profile_does(level):
    """docs/adr/0013 "One encoder": inside a call the checked fast encoder gives exactly the
    bytes of ``canonical_json(to_json())``, here for the value kinds that reach it only
    through a tuple or an enum."""
    record = _Counted((0, 7, 2**53 - 1), level)
    expected = canonical_json(record.to_json())
    assert expected == b'{"counts":[0,7,9007199254740991],"level":%d}' % level.value
    with trust_scope():
        assert record.canonical_bytes() == expected


def test_the_encodings_flags_are_keyword_only():
    """``canonical_bytes``, ``content_digest`` and ``to_json`` take ``drop_explanations`` by
    keyword only: a positional ``True`` cannot silently drop a record's prose."""
    span = SourceSpan("ab", 0, 2, 0)
    for method in (span.canonical_bytes, span.content_digest, span.to_json):
        with pytest.raises(TypeError):
            method(True)  # type: ignore[misc]


def test_a_record_that_fails_its_checks_in_a_call_is_refused_by_the_profile():
    """Inside a call, a record that does not validate is encoded by the hashable profile,
    which refuses it with its typed reason (here a lone surrogate), never by the fast encoder
    that only checked fields may take (it would raise UnicodeEncodeError, untyped)."""
    span = SourceSpan("ab", 0, 2, 0)
    object.__setattr__(span, "text", "a\ud800")
    assert span.find_defect() is not None
    with trust_scope():
        with pytest.raises(CanonicalizationError) as raised:
            span.canonical_bytes()
    assert raised.value.reason is CanonicalReason.LONE_SURROGATE


def _admits_anything(value: object) -> Defect | None:
    """A check looser than the hashable profile: a float passes it, never the profile."""
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Loose(Record):
    """A kind whose one field's check admits any value, so only the encoders judge it."""

    value: Annotated[object, _admits_anything]


@pytest.mark.obligation("LOCAL-0013/fields_declared_once")
def test_a_value_its_check_admits_but_the_profile_refuses_is_refused_where_it_is_hashed():
    """A sealed kind is hashed when it is validated, so a value outside the profile makes it
    not canonical then; a kind without an id is refused when its bytes are first asked for."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class SealedLoose(Record):
        loose_id: Annotated[str, digest]
        value: Annotated[object, _admits_anything]

        ID_FIELD: ClassVar = "loose_id"

    with pytest.raises(RecordError, match=r"SealedLoose\.\$: not_canonical"):
        SealedLoose("0" * 64, 1.5)
    assert SealedLoose.sealed(value=1).value == 1
    plain = _Loose(1.5)
    assert inspect_record(plain, _Loose) is None
    with pytest.raises(CanonicalizationError):
        plain.canonical_bytes()


class _Claimed(enum.Enum):
    """An enum whose one member's value is an Impostor: the encoder asks its type too."""

    ONLY = Impostor()


@pytest.mark.parametrize(
    "value", [Impostor(), (1, Impostor()), _Claimed.ONLY], ids=["field", "tuple-item", "enum-value"]
)
def test_a_value_whose_class_claims_every_class_is_refused_by_both_encoders(value):
    """Both encoders ask a value's type by identity: a value whose class says it equals every
    class is refused as UNSUPPORTED_TYPE, inside a call and outside one, never written as
    text, a bool or an int (a type compared with ``==`` would take it for each in turn)."""
    record = _Loose(value)
    for scope in (contextlib.nullcontext, trust_scope):
        with scope(), pytest.raises(CanonicalizationError) as raised:
            record.canonical_bytes()
        assert raised.value.reason is CanonicalReason.UNSUPPORTED_TYPE, scope


@pytest.mark.obligation("LOCAL-0013/one_encoder")
def test_an_identity_exclusion_changed_after_the_kind_was_made_is_the_one_hashed():
    """A kind's IDENTITY_EXCLUDED set after the kind was made is the one its identities leave
    out: narrowed, the field counts again; widened, another field stops counting. The sealed
    id always equals the hash of ``identity_payload()`` (the kernel mutation score's survivor
    `is not` made `>=`, which kept the kind's first drops for a narrowed set, docs/adr/0015)."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Noted(Record):
        noted_id: Annotated[str, digest]
        count: Annotated[int, non_negative_int]
        note: Annotated[str, text]

        ID_FIELD: ClassVar = "noted_id"
        IDENTITY_EXCLUDED: ClassVar = frozenset({"note"})

    def ids(**fields: Any) -> str:
        record = Noted.sealed(**fields)
        assert record.noted_id == record.compute_id()  # the generic path agrees
        return str(record.noted_id)

    assert ids(count=1, note="a") == ids(count=1, note="b")
    Noted.IDENTITY_EXCLUDED = frozenset()  # narrowed
    assert ids(count=1, note="a") != ids(count=1, note="b")
    Noted.IDENTITY_EXCLUDED = frozenset({"note", "count"})  # widened
    assert ids(count=1, note="a") == ids(count=2, note="b")


# --------------------------------------------------------------------------------------------
# One encoder


@pytest.mark.obligation("LOCAL-0013/one_encoder")
@settings(max_examples=30)
@given(chains())
def test_bytes_from_the_encoder_equal_canonical_json_for_every_record_of_a_trace(chain):
    """Inside a call, every record is encoded from its checked fields; the bytes are exactly
    the profile-checked ``canonical_json`` of its JSON form, with prose and without."""
    with trust_scope():
        trace = practice_case(chain.frame)
        assert type(trace) is SealedPracticeTrace
        for record in _tree(trace):
            for drop in (False, True):
                expected = canonical_json(record.to_json(drop_explanations=drop))
                assert record.canonical_bytes(drop_explanations=drop) == expected
            if type(record).ID_FIELD is not None:
                assert getattr(record, type(record).ID_FIELD) == record.compute_id()


# --------------------------------------------------------------------------------------------
# Trust scoped to one call


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_no_trust_outlives_its_call():
    assert trust_module._CURRENT_TRUST.get() is None
    trace = practice_case(shipped_examples()[0].frame)
    assert trust_module._CURRENT_TRUST.get() is None
    with trust_scope():
        outer = trust_module._CURRENT_TRUST.get()
        with trust_scope():  # an inner scope joins the outer one
            assert trust_module._CURRENT_TRUST.get() is outer
        assert inspect_record(trace, SealedPracticeTrace) is None
        assert outer.records.get(id(trace)) is trace
    assert trust_module._CURRENT_TRUST.get() is None


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_an_in_place_write_between_calls_is_seen():
    trace = practice_case(shipped_examples()[0].frame)
    assert verify_sealed_trace(trace).valid
    span = trace.frame.facts[0].span
    object.__setattr__(span, "text", span.text + "x")
    assert not verify_sealed_trace(trace).valid
    assert inspect_record(span, type(span)).defect is Defect.SPAN_LENGTH_MISMATCH
    with pytest.raises(Exception, match="span_length_mismatch"):
        sealed_trace_bytes(trace)


@dataclasses.dataclass(frozen=True, slots=True)
class _Holding(Record):
    """A kind without an id holding a span: only the nested check can see the span's defect."""

    span: Annotated[SourceSpan, nested(SourceSpan)]


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_a_nested_record_altered_in_place_is_refused_by_the_kind_holding_it():
    """A record given as a field value is inspected in full unless this call already trusts
    it: a span altered in place is refused with its own defect, inside a call and outside
    one, never taken on its type alone (a kind without an id has no hash to catch it)."""
    span = SourceSpan("ab", 0, 2, 0)
    object.__setattr__(span, "text", "abc")
    for scope in (contextlib.nullcontext, trust_scope):
        with scope(), pytest.raises(RecordError) as raised:
            _Holding(span)
        found = raised.value.found
        assert (found.field, found.defect) == ("span", Defect.SPAN_LENGTH_MISMATCH), scope
    with trust_scope():
        assert _Holding(SourceSpan("ab", 0, 2, 0)).span.text == "ab"


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_deleting_a_field_between_calls_is_seen():
    trace = practice_case(shipped_examples()[1].frame)
    object.__delattr__(trace.outcome, "explanation")
    found = inspect_record(trace, SealedPracticeTrace)
    assert found is not None and found.field == "outcome"


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_within_one_call_each_record_is_validated_once(monkeypatch):
    """Trust is what makes re-inspection cheap: along a whole case, no record object is
    validated twice (the count is over validations, by object identity)."""
    seen: dict[int, int] = {}
    admit = record_module._admit

    def counting(record, trust, *, sealing):
        seen[id(record)] = seen.get(id(record), 0) + 1
        return admit(record, trust, sealing=sealing)

    monkeypatch.setattr(record_module, "_admit", counting)
    for example in shipped_examples():
        seen.clear()
        with trust_scope():
            frame = dataclasses.replace(example.frame)  # a fresh object, admitted in the call
            practice_case(frame)
        twice = {key: count for key, count in seen.items() if count > 1}
        assert not twice, f"{example.name}: validated again: {len(twice)} records"
        assert seen  # the call did validate


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_trusting_changes_no_result():
    """The same cases inside one shared scope, one scope each, and with every record built
    outside any scope give byte-identical traces."""
    frames = [example.frame for example in shipped_examples()]
    separately = [sealed_trace_bytes(practice_case(frame)) for frame in frames]
    with trust_scope():
        together = [sealed_trace_bytes(practice_case(frame)) for frame in frames]
    assert together == separately


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
@settings(max_examples=20)
@given(problem_frames(), st.data())
def test_a_result_altered_in_place_is_not_served_by_the_next_call(frame, data):
    """``remembered`` results live for one call: altering an assessment after the call
    cannot reach the next one."""
    first = assess(frame)
    if type(first) is not ContractAssessment:
        return
    genuine = first.organ_version
    object.__setattr__(first, "organ_version", "unary_delta_transition.v9")
    again = assess(frame)
    assert again is not first
    assert type(again) is ContractAssessment and again.organ_version == genuine


@pytest.mark.obligation("LOCAL-0013/threads")
def test_calls_on_many_threads_share_no_trust_and_give_the_same_bytes():
    """Workbench serves each request on its own thread: each thread's calls keep their own
    trust (a context variable), and every thread gets the bytes one thread gets."""
    frames = [example.frame for example in shipped_examples()]
    expected = [sealed_trace_bytes(practice_case(frame)) for frame in frames]
    results: dict[int, list[bytes]] = {}
    scopes: dict[int, object] = {}
    barrier = threading.Barrier(4)

    def work(index: int) -> None:
        barrier.wait()
        got = []
        for _ in range(3):
            with trust_scope():
                scopes.setdefault(index, trust_module._CURRENT_TRUST.get())
                got.extend(sealed_trace_bytes(practice_case(frame)) for frame in frames)
        results[index] = got

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[index] == expected * 3 for index in range(4))
    assert len({id(scope) for scope in scopes.values()}) == 4
    assert trust_module._CURRENT_TRUST.get() is None


@pytest.mark.obligation("LOCAL-0013/threads")
def test_a_record_trusted_on_one_thread_is_validated_again_on_another():
    trace = practice_case(shipped_examples()[2].frame)
    ready, tampered, done = threading.Event(), threading.Event(), threading.Event()
    found: list[object] = []

    def trusting() -> None:
        with trust_scope():
            assert inspect_record(trace, SealedPracticeTrace) is None  # now trusted here
            ready.set()
            tampered.wait()
            done.wait()

    def other() -> None:
        ready.wait()
        span = trace.frame.facts[0].span
        object.__setattr__(span, "start", span.start + 1)
        tampered.set()
        found.append(inspect_record(trace, SealedPracticeTrace))
        done.set()

    threads = [threading.Thread(target=trusting), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found[0] is not None and found[0].field == "frame"


# --------------------------------------------------------------------------------------------
# Constants validated at import (pinned)


def _pinned_gate_policy():
    from practice_loop.kernel import loop

    # The loop pins the gate in force (search_gate.v1 until a successor is adopted).
    (pinned,) = [p for p in loop._CONSTANTS if p.record is SEARCH_GATE_IN_FORCE]
    return pinned


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_a_pinned_constant_is_trusted_only_while_every_field_is_what_was_validated():
    """The kernel's policies are validated once, at import; a call trusts one only after
    checking, object by object, that nothing in its tree was altered in place since."""
    pinned = _pinned_gate_policy()
    assert record_module.admit_pinned(pinned) is False  # outside a call: nothing to trust
    with trust_scope():
        assert record_module.admit_pinned(pinned) is True
    row = SEARCH_GATE_IN_FORCE.reason_statuses[0]
    genuine = row.status
    other = next(status for status in type(genuine) if status is not genuine)
    object.__setattr__(row, "status", other)
    try:
        with trust_scope():
            assert record_module.admit_pinned(pinned) is False
            assert all(
                record is not row for record in trust_module._CURRENT_TRUST.get().records.values()
            )
    finally:
        object.__setattr__(row, "status", genuine)
    with trust_scope():
        assert record_module.admit_pinned(pinned) is True


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_a_pinned_constant_with_a_slot_emptied_in_place_is_not_trusted():
    """A field deleted in place (a slot emptied) is an alteration like any other: the call
    does not trust the constant, and the stage that receives it validates it in full."""
    pinned = _pinned_gate_policy()
    row = SEARCH_GATE_IN_FORCE.reason_statuses[0]
    genuine = row.status
    object.__delattr__(row, "status")
    try:
        with trust_scope():
            assert record_module.admit_pinned(pinned) is False
            assert row not in trust_module._CURRENT_TRUST.get().records.values()
    finally:
        object.__setattr__(row, "status", genuine)
    with trust_scope():
        assert record_module.admit_pinned(pinned) is True


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_a_case_under_an_altered_constant_is_judged_by_its_new_content():
    """An in-place change to the shipped gate policy between cases is seen by the next case:
    the policy in force no longer equals its registered value, so the gate refuses it."""
    frame = shipped_examples()[0].frame  # a refused assessment: the case reaches the gate
    genuine_trace = practice_case(frame)
    row = SEARCH_GATE_IN_FORCE.reason_statuses[0]
    genuine = row.status
    other = next(status for status in type(genuine) if status is not genuine)
    object.__setattr__(row, "status", other)
    try:
        altered = practice_case(frame)
    finally:
        object.__setattr__(row, "status", genuine)
    assert type(altered) is SealedPracticeTrace
    assert altered.gate_decision.reason_code == "gate_unassessable_policy_unsupported"
    assert altered.trace_id != genuine_trace.trace_id
    assert practice_case(frame).trace_id == genuine_trace.trace_id


@pytest.mark.parametrize(
    ("path", "reason", "where"),
    [
        ((), DecodeReason.EXPECTED_OBJECT, "SealedPracticeTrace"),
        (("outcome",), DecodeReason.NO_UNION_MEMBER_FITS, "SealedPracticeTrace.outcome"),
        (("stage_digests",), DecodeReason.EXPECTED_LIST, "SealedPracticeTrace.stage_digests"),
        (
            ("gate_decision", "status"),
            DecodeReason.EXPECTED_ENUM_VALUE,
            "SearchGateDecision.status",
        ),
        (("frame", "source_text"), DecodeReason.WRONG_TYPE, "ProblemFrame.source_text"),
    ],
    ids=["whole", "union", "tuple", "enum", "text"],
)
def test_a_decoded_value_whose_class_claims_every_class_is_refused_with_its_reason(
    path, reason, where
):
    """``record_from_json`` asks each value's type by identity: an Impostor where an object, a
    union of records, a list, an enum value or a string belongs is a DecodeError with that
    place's reason, never read as the type it claims to be."""
    payload: Any = practice_case(shipped_examples()[0].frame).to_json()
    if path:
        holder = payload
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = Impostor()
    else:
        payload = Impostor()
    with pytest.raises(DecodeError) as refused:
        record_from_json(SealedPracticeTrace, payload)
    assert (refused.value.reason, refused.value.where) == (reason, where)


def test_a_decoded_object_with_other_fields_names_exactly_the_fields_that_differ():
    """docs/adr/0003: an object whose keys are not the record's fields is refused with
    fields_mismatch, and the message names just the fields missing or extra, sorted (not
    every field of both sides)."""
    payload = SourceSpan(text="7", start=0, end=1, sentence_index=0).to_json()
    del payload["start"]
    payload["bogus"] = 1
    with pytest.raises(DecodeError) as refused:
        record_from_json(SourceSpan, payload)
    assert (refused.value.reason, refused.value.where) == (
        DecodeReason.FIELDS_MISMATCH,
        "SourceSpan",
    )
    assert str(refused.value) == "SourceSpan: fields ['bogus', 'start']"
