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
