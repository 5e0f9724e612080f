"""The validation memo (docs/adr/0003, "Validation memo"): records are trusted in one lookup
because no field of a remembered record can change unseen. These tests pin the two halves of
that claim: every field of every record class is guarded, and trusting a record trusts its
whole tree (including when the memo is emptied in the middle of a validation)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from practice_loop.examples import shipped_examples
from practice_loop.kernel import (
    ContractAssessment,
    SealedPracticeTrace,
    assess,
    practice_case,
    sealed_trace_bytes,
    verify_sealed_trace,
)
from practice_loop.kernel import identity as memo
from practice_loop.kernel.identity import Defect, Record, inspect_record
from practice_strategies import chains, problem_frames, tampered


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


def _trusted(record: object) -> bool:
    return memo._is_trusted(record)


def test_the_kernel_defines_records_to_guard():
    assert len(RECORD_CLASSES) >= 20, [cls.__name__ for cls in RECORD_CLASSES]


@pytest.mark.obligation("LOCAL-0003/validation_memo")
@pytest.mark.parametrize("record_class", RECORD_CLASSES, ids=lambda cls: cls.__name__)
def test_every_field_of_every_record_class_is_guarded(record_class):
    """A plain slot would let ``object.__setattr__`` change a remembered record unseen."""
    for field in dataclasses.fields(record_class):
        guard = record_class.__dict__.get(field.name)
        assert type(guard) is property and guard.fset is not None and guard.fdel is not None, (
            f"{record_class.__name__}.{field.name} is not a guarded field"
        )


@pytest.mark.obligation("LOCAL-0003/validation_memo")
@settings(max_examples=25)
@given(chains())
def test_a_trusted_record_trusts_its_whole_tree(chain):
    """The memo's invariant: a remembered record's nested records are all remembered, so an
    in-place write anywhere below it is seen."""
    trace = practice_case(chain.frame)
    assert type(trace) is SealedPracticeTrace
    for record in _tree(trace):
        if _trusted(record):
            below = [nested for nested in _tree(record) if nested is not record]
            untrusted = [type(nested).__name__ for nested in below if not _trusted(nested)]
            assert untrusted == [], f"trusted {type(record).__name__} holds {untrusted}"


@pytest.mark.obligation("LOCAL-0003/validation_memo")
@pytest.mark.parametrize("limit", [1, 2, 3, 5, 8, 13, 40])
def test_an_emptied_memo_changes_no_result_and_keeps_the_invariant(limit, monkeypatch):
    """A tiny memo is emptied again and again, also in the middle of validations: every trace
    is still byte for byte the one an unbounded memo gives, and still trusts only whole
    trees."""
    expected = [sealed_trace_bytes(practice_case(e.frame)) for e in shipped_examples()]
    monkeypatch.setattr(memo, "_MEMO_LIMIT", limit)
    memo._forget_everything()
    for example, wanted in zip(shipped_examples(), expected, strict=True):
        trace = practice_case(example.frame)
        assert sealed_trace_bytes(trace) == wanted
        for record in _tree(trace):
            if _trusted(record):
                assert all(_trusted(nested) for nested in _tree(record))
        assert len(memo._VALIDATED) <= limit


@pytest.mark.obligation("LOCAL-0003/validation_memo")
def test_an_in_place_write_deep_in_a_trace_is_seen_and_forgets_everything():
    trace = practice_case(shipped_examples()[0].frame)
    assert verify_sealed_trace(trace).valid and _trusted(trace)
    span = trace.frame.facts[0].span
    generation = memo._memo_generation()
    object.__setattr__(span, "text", span.text + "x")
    assert memo._memo_generation() == generation + 1
    assert not _trusted(trace) and not _trusted(span)
    assert not verify_sealed_trace(trace).valid
    assert inspect_record(span, type(span)).defect is Defect.SPAN_LENGTH_MISMATCH


@pytest.mark.obligation("LOCAL-0003/validation_memo")
def test_deleting_a_field_of_a_remembered_record_is_seen():
    trace = practice_case(shipped_examples()[1].frame)
    assert _trusted(trace.outcome)
    object.__delattr__(trace.outcome, "explanation")
    found = inspect_record(trace, SealedPracticeTrace)
    assert found is not None and found.field == "outcome"


@pytest.mark.obligation("LOCAL-0003/validation_memo")
def test_construction_forgets_nothing():
    """Writes into a record being built (``__init__``, ``sealed``, a tampered copy) are not
    tampering: they cost the memo nothing."""
    trace = practice_case(shipped_examples()[2].frame)
    generation = memo._memo_generation()
    practice_case(shipped_examples()[3].frame)
    tampered(trace, explanation="other")
    assert memo._memo_generation() == generation and _trusted(trace)


@pytest.mark.obligation("LOCAL-0003/validation_memo")
@settings(max_examples=20)
@given(problem_frames(), st.data())
def test_a_remembered_result_altered_in_place_is_not_served_again(frame, data):
    """``remembered()`` results are records others hold: altering one in place must not make
    the stage hand out the altered object again."""
    first = assess(frame)
    if type(first) is not ContractAssessment:
        return
    genuine = first.organ_version
    object.__setattr__(first, "organ_version", "unary_delta_transition.v9")
    again = assess(frame)
    assert again is not first
    assert type(again) is ContractAssessment and again.organ_version == genuine
    object.__setattr__(first, "organ_version", genuine)


@pytest.mark.obligation("LOCAL-0003/validation_memo")
def test_a_remembered_tuple_is_encoded_again_once_its_records_change():
    """A tuple of trusted records is remembered by identity (evidence tuples pass from stage
    to stage); an in-place write to one of its records forgets it with everything else, and a
    tuple holding a list, which may change, is never remembered."""
    spans = (practice_case(shipped_examples()[0].frame).frame.facts[0].span,)
    before = memo._tuple_bytes(spans)
    assert id(spans) in memo._TUPLE_BYTES
    object.__setattr__(spans[0], "start", spans[0].start + 1)
    assert id(spans) not in memo._TUPLE_BYTES
    assert memo._tuple_bytes(spans) != before
    holder = ("a", ["b"])
    assert memo._tuple_bytes(holder)[0] == b'["a",["b"]]'
    holder[1].append("c")
    assert memo._tuple_bytes(holder)[0] == b'["a",["b","c"]]'
    versions = (("gate", "search_gate.v1"), ("budget", "compute_budget.v1"))
    memo._tuple_bytes(versions)
    assert id(versions) in memo._TUPLE_BYTES  # exact strings in remembered tuples never change
