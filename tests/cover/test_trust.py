"""One call's trust (docs/adr/0013): ``remembered`` keeps a derived value only for a record the
current call validated, and only for that call. The scope itself (threads, nesting, a record
altered between calls) is tested with the records in ``test_record.py``."""

from __future__ import annotations

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel.record import inspect_record
from practice_loop.kernel.trust import remembered, trust_scope

FRAME = shipped_examples()[0].frame


class _Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.calls


def test_a_trusted_record_computes_each_key_once_per_call():
    compute = _Counting()
    with trust_scope():
        assert inspect_record(FRAME, type(FRAME)) is None  # now trusted for this call
        assert remembered(FRAME, "k", compute) == 1
        assert remembered(FRAME, "k", compute) == 1
        assert remembered(FRAME, "other", compute) == 2
    with trust_scope():  # a new call remembers nothing of the last
        assert inspect_record(FRAME, type(FRAME)) is None
        assert remembered(FRAME, "k", compute) == 3


def test_what_the_call_has_not_validated_is_computed_every_time():
    compute = _Counting()
    with trust_scope():
        untrusted = object()
        assert remembered(untrusted, "k", compute) == 1
        assert remembered(untrusted, "k", compute) == 2
        assert remembered(FRAME, "k", compute) == 3  # not inspected in this call
        assert remembered(FRAME, "k", compute) == 4
    assert remembered(FRAME, "k", compute) == 5  # outside every call
    assert remembered(FRAME, "k", compute) == 6


# --------------------------------------------------------------------------------------------
# Each entry point is one call (docs/adr/0013, "Trust scoped to one call"): every record it
# receives or builds is validated once, and the constants the loop pinned at import are not
# validated again at all. Without the scope each stage would validate the same records anew:
# the same results at several times the cost, which only a count can see.


class _CountedAdmissions:
    """Wraps ``record._admit``, keeping every record it validated (so no id is reused)."""

    def __init__(self, admit) -> None:
        self._admit = admit
        self.records: list[object] = []

    def __call__(self, record, trust, *, sealing):
        self.records.append(record)
        return self._admit(record, trust, sealing=sealing)

    def validated_twice(self) -> list[str]:
        seen: set[int] = set()
        twice = []
        for record in self.records:
            if id(record) in seen:
                twice.append(type(record).__name__)
            seen.add(id(record))
        return twice


def _counting(monkeypatch) -> _CountedAdmissions:
    from practice_loop.kernel import record as record_module

    counted = _CountedAdmissions(record_module._admit)
    monkeypatch.setattr(record_module, "_admit", counted)
    return counted


def _pinned_records() -> set[int]:
    from practice_loop.kernel import loop

    return {id(record) for pinned in loop._CONSTANTS for record in pinned.records.values()}


def test_practice_case_validates_each_record_once_and_never_the_pinned_constants(monkeypatch):
    from practice_loop.kernel import practice_case

    frames = [example.frame for example in shipped_examples()]
    counted = _counting(monkeypatch)
    for frame in frames:
        practice_case(frame)
    assert counted.validated_twice() == []
    pinned = _pinned_records()
    assert [type(r).__name__ for r in counted.records if id(r) in pinned] == []
    assert {id(frame) for frame in frames} <= {id(r) for r in counted.records}


def test_replay_and_verification_validate_each_record_of_the_trace_once(monkeypatch):
    from practice_loop.kernel import (
        SealedPracticeTrace,
        load_sealed_trace,
        practice_case,
        replay_divergence,
        sealed_trace_bytes,
        verify_sealed_trace,
    )

    traces = [practice_case(example.frame) for example in shipped_examples()]
    assert all(type(trace) is SealedPracticeTrace for trace in traces)
    stored = [sealed_trace_bytes(trace) for trace in traces]
    for check in (replay_divergence, verify_sealed_trace, sealed_trace_bytes):
        for trace in traces:
            # A trace rebuilt from its bytes: nothing of it was validated before this call.
            fresh = load_sealed_trace(sealed_trace_bytes(trace))
            counted = _counting(monkeypatch)
            check(fresh)
            monkeypatch.undo()
            assert counted.validated_twice() == [], check.__name__
            assert id(fresh) in {id(r) for r in counted.records}, check.__name__
    for data in stored:
        counted = _counting(monkeypatch)
        assert type(load_sealed_trace(data)) is SealedPracticeTrace
        monkeypatch.undo()
        assert counted.validated_twice() == []
