"""Hostile values (ARCHITECTURE §2): canonical_json, decode_canonical, record checks, spans,
the run and a stored trace, over a chain record's JSON form and its raw bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ...kernel import (
    MAX_SAFE_INT,
    ComputeBudgetDecision,
    Defect,
    RecordDefect,
    RecordError,
    SealedPracticeTrace,
    SourceSpan,
    TraceFailureCode,
    TraceVerification,
    canonical_json,
    decode_canonical,
    load_sealed_trace,
    practice_case,
    sealed_trace_bytes,
)
from ...kernel.identity import MAX_DEPTH, MAX_NODES, MAX_TEXT_LENGTH
from .entry import HASHABLE, LOADING, Entry, Expected, canonical, corruption, run_refused, s9
from .forging import Attack, Small, Text, inspected, int_field, open_run, other_digest, tampered

_OPEN = "search_run.open_search_run"
_ENCODE = "identity.canonical_json"
_DECODE = "identity.decode_canonical"
_INSPECT = "record.inspect_record"
_LOAD = "trace.load_sealed_trace"


def _form(chain: Any, **changes: object) -> dict[Any, object]:
    """The budget's JSON form (a fresh copy) with ``changes``."""
    return {**chain.budget.to_json(), **changes}


def _nested(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


def _cycle(chain: Any) -> dict[str, object]:
    spans: list[object] = list(chain.budget.to_json()["evidence_spans"])
    spans.append(spans)
    return _form(chain, evidence_spans=spans)


def _wide(chain: Any) -> dict[str, object]:
    form = chain.search_input.to_json()
    form["residual_ids"] = form["residual_ids"] * MAX_NODES
    return form


def _canonical_bytes(chain: Any) -> bytes:
    return canonical_json(chain.budget.to_json())


def _dumped(form: object, **options: Any) -> bytes:
    keywords = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, **options}
    return json.dumps(form, **keywords).encode("utf-8")


def _spliced(data: bytes, field: str, raw: bytes) -> bytes:
    """``data`` with the value of the top-level text field ``field`` replaced by ``raw``."""
    pattern = re.compile(b'"' + field.encode() + b'":"(?:[^"\\\\]|\\\\.)*"')
    found = pattern.findall(data)
    assert len(found) == 1, (field, found)
    return pattern.sub(lambda _: b'"' + field.encode() + b'":' + raw, data)


def _trace_bytes(chain: Any) -> bytes:
    trace = practice_case(chain.frame)
    assert type(trace) is SealedPracticeTrace, trace
    return sealed_trace_bytes(trace)


def _load(data_of: Callable[[bytes], bytes]) -> Callable[[Any], Attack]:
    return lambda c: Attack(load_sealed_trace, {"data": data_of(_trace_bytes(c))})


def _forged_trace_id(data: bytes) -> bytes:
    found = re.search(b'"trace_id":"([0-9a-f]{64})"', data)
    assert found is not None
    trace_id = found.group(1).decode()
    return data.replace(trace_id.encode(), other_digest(trace_id).encode())


def _span_with(**changes: object) -> Callable[[Any], Attack]:
    def build(chain: Any) -> Attack:
        span = chain.gate.evidence_spans[0]
        arguments = {
            "text": span.text,
            "start": span.start,
            "end": span.end,
            "sentence_index": span.sentence_index,
            **changes,
        }
        return Attack(SourceSpan, arguments)

    return build


def _encoded(id: str, comment: str, reason: str, payload_of) -> Entry:
    return corruption(
        f"canonical/{id}",
        _ENCODE,
        HASHABLE,
        comment,
        canonical(reason),
        lambda c: Attack(canonical_json, {"payload": payload_of(c)}),
    )


def _decoded(id: str, comment: str, reason: str, data_of) -> Entry:
    return corruption(
        f"loader/{id}",
        _DECODE,
        LOADING,
        comment,
        canonical(reason),
        lambda c: Attack(decode_canonical, {"data": data_of(c)}),
    )


def _steps(chain: Any) -> int:
    return chain.budget.max_steps


# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
ENCODED_ENTRIES = (
    _encoded("float", "a budget limit as a float", "float_not_allowed",
        lambda c: _form(c, max_steps=float(_steps(c)))),
    _encoded("nan", "a budget limit as NaN", "non_finite_float",
        lambda c: _form(c, max_steps=float("nan"))),
    _encoded("infinity", "a budget limit as -infinity", "non_finite_float",
        lambda c: _form(c, max_steps=float("-inf"))),
    _encoded("int-above-safe-range", "a budget limit raised past 2**53 - 1", "int_out_of_range",
        lambda c: _form(c, max_steps=MAX_SAFE_INT + _steps(c))),
    _encoded("int-below-safe-range", "a budget limit lowered past -(2**53 - 1)",
        "int_out_of_range", lambda c: _form(c, max_steps=-MAX_SAFE_INT - _steps(c))),
    _encoded("int-key", "an int key beside the budget's own", "key_not_str",
        lambda c: {**_form(c), _steps(c): "limit"}),
    _encoded("str-subclass-key", "a budget key re-typed as a str subclass", "key_not_str",
        lambda c: {
            (Text(key) if key == "max_steps" else key): value for key, value in _form(c).items()
        }),
    _encoded("str-subclass-value", "the reason code re-typed as a str subclass",
        "subclass_not_allowed", lambda c: _form(c, reason_code=Text(c.budget.reason_code))),
    _encoded("int-enum-value", "a budget limit as an IntEnum member", "subclass_not_allowed",
        lambda c: _form(c, max_parallelism=Small.ONE)),
    _encoded("bytes-value", "the explanation as UTF-8 bytes", "unsupported_type",
        lambda c: _form(c, explanation=c.budget.explanation.encode("utf-8"))),
    _encoded("lone-surrogate-value", "a lone surrogate appended to the explanation",
        "lone_surrogate", lambda c: _form(c, explanation=c.budget.explanation + "\ud800")),
    _encoded("lone-surrogate-key", "a key holding a lone surrogate", "lone_surrogate",
        lambda c: {**_form(c), "note\udc00": 1}),
    _encoded("depth-beyond-cap", "the evidence spans nested MAX_DEPTH lists deeper",
        "depth_exceeded",
        lambda c: _form(c, evidence_spans=_nested(_form(c)["evidence_spans"], MAX_DEPTH))),
    _encoded("self-containing", "the evidence span list made to contain itself", "depth_exceeded",
        _cycle),
    _encoded("nodes-beyond-cap", "the run input's residual ids repeated MAX_NODES times",
        "size_exceeded", _wide),
    _encoded("text-beyond-cap", "an explanation one character over MAX_TEXT_LENGTH",
        "size_exceeded", lambda c: _form(c, explanation="x" * (MAX_TEXT_LENGTH + 1))),
)

DECODED_ENTRIES = (
    _decoded("float", "a budget limit written as N.0", "float_not_allowed",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"%d.0" % _steps(c))),
    _decoded("exponent", "a budget limit written with an exponent", "float_not_allowed",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"%de0" % _steps(c))),
    _decoded("nan", "a budget limit written as NaN", "non_finite_float",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"NaN")),
    _decoded("infinity", "a budget limit written as -Infinity", "non_finite_float",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"-Infinity")),
    _decoded("int-above-safe-range", "a budget limit written as 2**53 + max_steps",
        "int_out_of_range",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"%d" % (2**53 + _steps(c)))),
    _decoded("int-below-safe-range", "a budget limit written as -(2**53)", "int_out_of_range",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"%d" % -(2**53))),
    _decoded("huge-int-literal", "a budget limit written with 5,000 digits", "int_out_of_range",
        lambda c: int_field(_canonical_bytes(c), "max_steps", b"9" * 5000)),
    _decoded("lone-surrogate-escape", "the explanation holding an escaped lone surrogate",
        "lone_surrogate", lambda c: _spliced(_canonical_bytes(c), "explanation", b'"\\ud800"')),
    _decoded("encoded-surrogate", "the explanation holding a surrogate encoded as UTF-8 bytes",
        "invalid_utf8",
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"\xed\xa0\x80"')),
    _decoded("invalid-utf8", "the explanation holding the byte 0xff", "invalid_utf8",
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"\xff"')),
    _decoded("duplicate-key", "a second max_steps key ahead of the first", "duplicate_key",
        lambda c: b'{"max_steps":0,' + _canonical_bytes(c)[1:]),
    _decoded("depth-beyond-cap", "the record wrapped in MAX_DEPTH arrays", "depth_exceeded",
        lambda c: b"[" * MAX_DEPTH + _canonical_bytes(c) + b"]" * MAX_DEPTH),
    _decoded("size-beyond-cap", "an explanation of 8 MiB", "size_exceeded",
        lambda c: _spliced(_canonical_bytes(c), "explanation", b'"' + b"x" * (8 << 20) + b'"')),
    _decoded("spacing", "the record written with json.dumps's default separators", "not_canonical",
        lambda c: _dumped(c.budget.to_json(), separators=(", ", ": "))),
    _decoded("key-order", "the record written with its keys in reverse order", "not_canonical",
        lambda c: _dumped(dict(sorted(c.budget.to_json().items(), reverse=True)), sort_keys=False)),
    _decoded("ascii-escapes", "the record written with non-ASCII text escaped", "not_canonical",
        lambda c: _dumped(_form(c, explanation="\u00e9\U0001f600"), ensure_ascii=True)),
    _decoded("truncated", "the record's bytes without the closing brace", "invalid_json",
        lambda c: _canonical_bytes(c)[:-1]),
    _decoded("text-not-bytes", "the record's canonical text as str, not bytes", "unsupported_type",
        lambda c: _canonical_bytes(c).decode("utf-8")),
)

ENTRIES = (
    corruption("canonical/bool-for-int-record", _INSPECT, HASHABLE,
        "a budget limit replaced by True after sealing",
        Expected(RecordDefect, (Defect.BOOL_NOT_INT,)),
        inspected(lambda c: tampered(c.budget, max_steps=True), ComputeBudgetDecision)),
    corruption("canonical/float-for-int-record", _INSPECT, HASHABLE,
        "a budget limit replaced by its float after sealing",
        Expected(RecordDefect, (Defect.FLOAT_NOT_INT,)),
        inspected(lambda c: tampered(c.budget, max_steps=float(_steps(c))), ComputeBudgetDecision)),
    corruption("canonical/int-beyond-safe-range-record", _INSPECT, HASHABLE,
        "a budget limit raised to 2**53 after sealing",
        Expected(RecordDefect, (Defect.INT_OUT_OF_RANGE,)),
        inspected(lambda c: tampered(c.budget, max_steps=2**53), ComputeBudgetDecision)),
    corruption("canonical/str-subclass-record", _INSPECT, HASHABLE,
        "the budget's reason code re-typed as a str subclass after sealing",
        Expected(RecordDefect, (Defect.WRONG_TYPE,)),
        inspected(
        lambda c: tampered(c.budget, reason_code=Text(c.budget.reason_code)),
        ComputeBudgetDecision,
        )),
    corruption("canonical/lone-surrogate-record", _INSPECT, HASHABLE,
        "a lone surrogate appended to the budget's explanation after sealing",
        Expected(RecordDefect, (Defect.TEXT_LONE_SURROGATE,)),
        inspected(
        lambda c: tampered(c.budget, explanation=c.budget.explanation + "\udfff"),
        ComputeBudgetDecision,
        )),
    corruption("canonical/bool-for-int-span", "span.SourceSpan", HASHABLE,
        "a gate evidence span rebuilt with start=True",
        Expected(RecordError, (Defect.BOOL_NOT_INT,)), _span_with(start=True),
        "ARCHITECTURE §2 span encoding"),
    corruption("canonical/lone-surrogate-span", "span.SourceSpan", HASHABLE,
        "a gate evidence span rebuilt with a lone surrogate for its last character",
        Expected(RecordError, (Defect.TEXT_LONE_SURROGATE,)),
        lambda c: _span_with(text=c.gate.evidence_spans[0].text[:-1] + "\udbff")(c),
        "ARCHITECTURE §2 span encoding"),
    corruption("canonical/bool-for-int-run", _OPEN, HASHABLE,
        "a budget limit replaced by True after sealing, handed to the run",
        run_refused("invalid_input", "budget_malformed"),
        lambda c: open_run(c, budget_decision=tampered(c.budget, max_steps=True)), s9(11)),
    corruption("canonical/float-for-int-run", _OPEN, HASHABLE,
        "a negative budget limit as a float: not read as a negative limit",
        run_refused("invalid_input", "budget_malformed"),
        lambda c: open_run(c, budget_decision=tampered(c.budget, max_depth=-1.0)), s9(11)),
    *(
        corruption(f"loader/trace-{label}", _LOAD, LOADING,
            f"a stored trace whose first span start is {label.replace('-', ' ')}",
            Expected(TraceVerification, (TraceFailureCode.UNDECODABLE,)),
            _load(lambda data, raw=raw: int_field(data, "start", raw)), HASHABLE)
        for label, raw in (
            ("bool-for-int", b"true"),
            ("float", b"0.0"),
            ("int-beyond-safe-range", b"9007199254740992"),
        )
    ),
    corruption("loader/trace-not-canonical", _LOAD, LOADING,
        "a stored trace re-written with a trailing newline",
        Expected(TraceVerification, (TraceFailureCode.UNDECODABLE,)),
        _load(lambda data: data + b"\n")),
    corruption("loader/trace-id-forged", _LOAD, LOADING,
        "a stored trace whose trace_id is another digest",
        Expected(TraceVerification, (TraceFailureCode.TRACE_ID_MISMATCH,)),
        _load(_forged_trace_id)),
)
# fmt: on
