"""Workbench's pages: pure functions from verified records to HTML (ADR-0226 §7G).

Every piece of text that comes from a case or a record goes through ``_e`` (``html.escape``
with quotes), so a question holding markup is displayed, never interpreted; the pages hold no
script, and styles come only from ``STYLESHEET`` at ``STYLESHEET_PATH``. A stage a trace does not
hold is rendered as missing; nothing here computes a stage.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Iterable, Sequence
from http import HTTPStatus
from urllib.parse import urlencode

from ..kernel import (
    AnswerRefusal,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    ComputeBudgetDecision,
    GeometricSearchRun,
    ProofGatedAnswer,
    ProofRecord,
    ReplayDisposition,
    ReplayRefusal,
    ReplayResult,
    SealedPracticeTrace,
    SearchRunRefusal,
    SourceSpan,
    problem_frame_digest,
)
from ..product.store import CaseRow
from ..product.verdict import StageState, Verdict, VerdictOutcome, verdict_of
from ..product.verification import Finding
from .model import GoldCheck, ListedCase, ListQuery, ListView, RecordedOutcome

HTML = "text/html; charset=utf-8"
CSS = "text/css; charset=utf-8"
STYLESHEET_PATH = "/workbench.css"

OUTCOME_LABELS = {
    "answered_direct": "answered directly",
    "answered_practice": "answered through practice",
    "refused": "refused",
    "failed_verification": "failed verification",
    "trace_missing": "trace missing",
}


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def visible(text: str) -> str:
    """``text`` as HTML with every character that would not show as itself (controls,
    bidirectional and zero-width marks, separators, unassigned code points: what
    ``str.isprintable`` refuses) replaced by a visible marker naming its code point, so a
    right-to-left override cannot reorder the digits after it and a zero-width space cannot
    hide between them. The text is set in an isolated, left-to-right run (``bdi``), so what
    remains cannot reorder what surrounds it either."""
    if text.isprintable():
        return f'<bdi dir="ltr">{_e(text)}</bdi>'
    parts = []
    for ch in text:
        if ch.isprintable():
            parts.append(_e(ch))
        else:
            code = f"U+{ord(ch):04X}"
            name = unicodedata.name(ch, "unnamed code point")
            parts.append(
                f'<span class="cp" data-cp="{code}" title="{code} {_e(name)}">{code}</span>'
            )
    return f'<bdi dir="ltr">{"".join(parts)}</bdi>'


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title>"
        f'<link rel="stylesheet" href="{STYLESHEET_PATH}"></head>'
        '<body><header class="bar"><a class="home" href="/">Workbench</a>'
        '<span class="note">read-only display of sealed practice traces</span></header>'
        f"<main>{body}</main></body></html>\n"
    )


def error_page(status: HTTPStatus, reason: str, message: str) -> str:
    return _page(
        f"{status.value} {status.phrase}",
        f"<h1>{status.value} {_e(status.phrase)}</h1>"
        f'<p class="error" id="refusal" data-reason="{_e(reason)}">{_e(message)} '
        f'<span class="code">({_e(reason)})</span></p>',
    )


def ident(value: str) -> str:
    """An identity: abbreviated on screen (CSS), whole in the text, so hovering shows it and
    copying takes all of it."""
    return f'<code class="id" tabindex="0" title="{_e(value)}">{_e(value)}</code>'


def _status(value: str) -> str:
    return f'<span class="status s-{_e(value)}">{_e(value)}</span>'


def _missing(what: str) -> str:
    return f'<p class="missing">Missing: this trace holds no {_e(what)}.</p>'


def _section(key: str, title: str, body: str, *, missing: bool = False) -> str:
    state = " missing-stage" if missing else ""
    return f'<section class="stage{state}" id="stage-{key}"><h2>{_e(title)}</h2>{body}</section>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fields(pairs: Iterable[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{_e(name)}</dt><dd>{value}</dd>" for name, value in pairs)
    return f'<dl class="fields">{items}</dl>'


def _codes(codes: Iterable[str]) -> str:
    found = [f'<span class="code">{_e(code)}</span>' for code in codes]
    return " ".join(found) if found else '<span class="none">none</span>'


def _span(span: SourceSpan) -> str:
    offsets = f'<span class="offsets">[{span.start}:{span.end}]</span>'
    return f'<q class="span-text">{visible(span.text)}</q> {offsets}'


def _spans(spans: Iterable[SourceSpan]) -> str:
    shown = [_span(span) for span in spans]
    return "; ".join(shown) if shown else '<span class="none">none</span>'


# --------------------------------------------------------------------------------------------
# The list


def _list_url(query: ListQuery, **changes: object) -> str:
    fields = {
        "outcome": query.outcome.value if query.outcome else "",
        "reason": query.reason or "",
        "q": query.text,
        "page": "",
        **{name: "" if value is None else str(value) for name, value in changes.items()},
    }
    kept = {name: value for name, value in fields.items() if value}
    return "/?" + urlencode(kept) if kept else "/"


def list_page(*, store_name: str, view: ListView) -> str:
    """The list: what the whole store's case rows record (counted in SQL, labelled as such)
    above one page of rows, each checked in full, with its verified outcome, answer, gold and
    reason, or its failure."""
    query, counts = view.query, view.counts

    def filter_link(outcome: RecordedOutcome | None, count: int) -> str:
        label = OUTCOME_LABELS[outcome.value] if outcome else "all"
        current = query.outcome is outcome and query.reason is None
        url = _list_url(query, outcome=outcome.value if outcome else None, reason=None, page=None)
        return (
            f'<a class="filter{" current" if current else ""}" href="{_e(url)}" '
            f'data-outcome="{outcome.value if outcome else "all"}" data-count="{count}">'
            f'{_e(label)} <span class="count">{count}</span></a>'
        )

    outcome_links = [filter_link(None, counts.total)] + [
        filter_link(outcome, count) for outcome, count in counts.outcomes
    ]
    if counts.unrecognized:
        outcome_links.append(
            f'<span class="filter unrecognized" data-outcome="unrecognized" '
            f'data-count="{counts.unrecognized}">not an outcome '
            f'<span class="count">{counts.unrecognized}</span></span>'
        )
    reason_rows = []
    for outcome, reason, count in counts.reasons:
        url = _list_url(query, outcome=outcome.value, reason=reason, page=None)
        current = " current" if query.outcome is outcome and query.reason == reason else ""
        reason_rows.append(
            f'<li><a class="reason{current}" href="{_e(url)}" data-outcome="{outcome.value}" '
            f'data-reason="{_e(reason)}" data-count="{count}"><span class="count">{count}</span> '
            f'{_e(OUTCOME_LABELS[outcome.value])}: <span class="code">{_e(reason)}</span></a></li>'
        )
    recorded = (
        '<section class="recorded" id="recorded"><h2>What the case rows record '
        '<span class="note">counted over the whole store; not verified</span></h2>'
        f'<nav class="filters" aria-label="recorded outcome">{"".join(outcome_links)}</nav>'
        '<details class="reasons" open><summary>by reason</summary>'
        f"<ul>{''.join(reason_rows)}</ul></details></section>"
    )
    checking = (
        '<p class="checking" id="checking">Each row below was checked in full for this page '
        "(the check of <code>practice-loop verify</code>): its outcome, answer and reason are "
        "verified, and a row that fails is shown as failed, with none of its answer. The "
        "counts above, and the filters, go by what the rows record; rows not on this page are "
        "not checked here, and <code>practice-loop verify</code> checks the whole store.</p>"
    )
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{_e(value)}">'
        for name, value in (
            ("outcome", query.outcome.value if query.outcome else ""),
            ("reason", query.reason or ""),
        )
        if value
    )
    search = (
        '<form class="search" method="get" action="/" role="search">'
        f'<input type="search" name="q" value="{_e(query.text)}" '
        'placeholder="search case text or id" aria-label="search case text">'
        f"{hidden}<button>Search</button></form>"
    )
    shown = view.shown
    failed = view.failed
    summary = (
        f'<p class="showing" data-matching="{view.matching}" data-shown="{len(shown)}" '
        f'data-failed="{failed}">{view.matching} of {counts.total} case rows match'
        + (f"; showing {view.first + 1}–{view.first + len(shown)}" if shown else "")
        + (
            f'; <span class="failed">{failed} of them failed verification</span>'
            if failed
            else ("; each verified" if shown else "")
        )
        + "</p>"
    )
    navigation = []
    if query.page > 1:
        navigation.append(f'<a rel="first" href="{_e(_list_url(query, page=None))}">first</a>')
        navigation.append(
            f'<a rel="prev" href="{_e(_list_url(query, page=query.page - 1))}">previous</a>'
        )
    if query.page < view.pages:
        navigation.append(
            f'<a rel="next" href="{_e(_list_url(query, page=query.page + 1))}">next</a>'
        )
        navigation.append(f'<a rel="last" href="{_e(_list_url(query, page=view.pages))}">last</a>')
    headers = ("case", "question", "outcome (verified)", "answer", "gold", "reason", "trace")
    body = (
        f'<h1>Traces <span class="note">in {_e(store_name)}</span></h1>'
        f"{recorded}{search}{checking}{summary}"
        + _cases_table(headers, shown)
        + (
            f'<nav class="pages" data-page="{query.page}" data-pages="{view.pages}">'
            f"{' '.join(navigation)} page {query.page} of {view.pages}</nav>"
        )
    )
    return _page("Workbench: traces", body)


def _cases_table(headers: Sequence[str], shown: Sequence[ListedCase]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    rows = "".join(
        f'<tr data-standing="{case.standing.outcome.value}">'
        + "".join(f"<td>{cell}</td>" for cell in _list_row(case))
        + "</tr>"
        for case in shown
    )
    return f'<table class="cases"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


_GOLD_WORDS = {
    GoldCheck.MATCHES: "matches the answer",
    GoldCheck.WRONG: "wrong: the answer differs",
    GoldCheck.UNJUDGED: "not judged: no integer gold",
}


def _list_row(case: ListedCase) -> list[str]:
    standing = case.standing
    outcome = standing.outcome.value
    if case.trace_id is None:
        trace = '<span class="none">none: refused before any trace</span>'
        if case.recorded is None:
            trace = '<span class="none">none: the row is not readable</span>'
    elif outcome == "trace_missing":
        trace = ident(case.trace_id)
    else:
        trace = f'<a href="/trace/{_e(case.trace_id)}">{ident(case.trace_id)}</a>'
    shown_outcome = f'<span class="outcome o-{outcome}">{_e(OUTCOME_LABELS[outcome])}</span>'
    verified = outcome in ("answered_direct", "answered_practice", "refused")
    if not verified and case.recorded is not None:
        claimed = OUTCOME_LABELS.get(case.recorded, case.recorded)
        shown_outcome += f' <span class="claimed">(the row records: {visible(claimed)})</span>'
    if standing.answer is not None:
        answer = f'<span class="answer">{visible(standing.answer)}</span>'
    elif verified:
        answer = '<span class="none">none: refused</span>'
    else:
        answer = '<span class="none">not shown: not verified</span>'
    if case.recorded is None:
        gold = ""
    else:
        gold = visible(case.gold) if case.gold is not None else '<span class="none">none</span>'
        if case.gold_check is not None:
            check = case.gold_check.value
            gold += f' <span class="gold-check g-{check}">{_e(_GOLD_WORDS[case.gold_check])}</span>'
    return [
        f'<span class="case-id">{visible(case.case_id)}</span>',
        f'<span class="question-text">{visible(case.question)}</span>'
        if case.question is not None
        else '<span class="none">not readable</span>',
        shown_outcome,
        answer,
        gold,
        f'<span class="how">{visible(standing.reason)}</span>'
        if standing.answer is not None
        else f'<span class="code">{_e(standing.reason)}</span>',
        trace,
    ]


# --------------------------------------------------------------------------------------------
# One trace


def trace_page(
    trace_id: str, read: SealedPracticeTrace | list[Finding], rows: list[CaseRow]
) -> str:
    """The page of a trace that passed the full check (``verification.check_trace``), or of
    the findings that keep it from being shown."""
    if type(read) is not SealedPracticeTrace:
        return _failed_page(trace_id, read, rows)
    assert type(read) is SealedPracticeTrace
    trace = read
    verdict = verdict_of(trace)
    off_path = {v.key: v.summary for v in verdict.stages if v.state is StageState.NOT_ON_PATH}
    sections = [
        _cases_section(rows),
        _question_section(trace),
        _frame_section(trace),
        _assessment_section(trace),
        *(
            _not_on_path(key, title, off_path[key]) if key in off_path else render(trace)
            for key, title, render in _PATH_SECTIONS
        ),
        _outcome_section(trace),
        _seal_section(trace),
    ]
    banner = (
        '<p class="seal verified" id="seal-status" data-status="verified">Seal verified: the '
        "stored bytes decode strictly, every identity and cross-identity recomputes, and "
        "re-running the case from its question gives these bytes and this case row exactly, "
        "prose included.</p>"
    )
    body = f"<h1>Trace {ident(trace_id)}</h1>{_verdict_section(verdict)}{banner}{''.join(sections)}"
    return _page(f"Workbench: trace {trace_id[:12]}", body)


_VERDICT_WORDS = {
    VerdictOutcome.ANSWERED_DIRECT: "Answered directly",
    VerdictOutcome.ANSWERED_PRACTICE: "Answered through practice",
    VerdictOutcome.REFUSED: "Refused",
}
_STATE_WORDS = {
    StageState.PASSED: "passed",
    StageState.REFUSED: "refused",
    StageState.DECISIVE: "stopped the case",
    StageState.NOT_ON_PATH: "not on this path",
    StageState.MISSING: "missing",
}


def _verdict_section(verdict: Verdict) -> str:
    """The summary that opens a trace page: outcome, the answer or the decisive cause of the
    refusal, seal, replay and budget, and the flow of the stages (issue 20)."""
    head = f"<strong>{_VERDICT_WORDS[verdict.outcome]}"
    if verdict.answer is not None:
        head += f": {visible(verdict.answer)}</strong>"
    else:
        head += "</strong>"
        if verdict.decisive is not None:
            cause = verdict.decisive
            head += (
                f' &mdash; decided at <a href="#stage-{cause.key}">{_e(cause.title)}</a>: '
                f'<span class="code" id="decisive" data-stage="{cause.key}">'
                f"{_e(cause.summary)}</span>"
            )
    pairs = []
    if verdict.refusal_reasons:
        pairs.append(("answer refusal", _codes(verdict.refusal_reasons)))
    pairs += [("seal", "verified"), ("replay", _e(verdict.replay))]
    if verdict.budget:
        bars = "".join(
            f'<span class="use">{_e(use.limit)} '
            + (
                f'<meter min="0" max="{use.granted}" value="{min(use.used, use.granted)}" '
                f'title="{use.used} of {use.granted}">{use.used} of {use.granted}</meter> '
                f"{use.used} of {use.granted}"
                if use.used is not None and use.granted > 0
                else f"{'nothing' if use.used is None else use.used} used of {use.granted}"
            )
            + "</span>"
            for use in verdict.budget
        )
        pairs.append(("budget", f'<span class="uses">{bars}</span>'))
    else:
        pairs.append(("budget", '<span class="none">not on this path</span>'))
    flow = "".join(
        f'<li class="st-{v.state.value}" data-stage="{v.key}" data-state="{v.state.value}" '
        f'title="{_e(v.title)}: {_e(_STATE_WORDS[v.state])}: {_e(v.summary)}">'
        f'<a href="#stage-{v.key}">{_e(v.title)}</a>'
        f'<span class="state">{_e(_STATE_WORDS[v.state])}</span></li>'
        for v in verdict.stages
    )
    legend = (
        '<p class="note">Each stage of the loop (ADR-0226 §6) in the order it runs, coloured by '
        "what it decided; grey stages are not on this case's path, and a stage the path needs "
        "but the trace does not hold is marked missing.</p>"
    )
    return (
        f'<section class="verdict v-{verdict.outcome.value}" id="verdict" '
        f'data-outcome="{verdict.outcome.value}"><p class="verdict-head">{head}</p>'
        f'{_fields(pairs)}<ol class="flow" id="flow">{flow}</ol>{legend}</section>'
    )


def _not_on_path(key: str, title: str, why: str) -> str:
    body = f'<p class="not-on-path">Not on this path: {_e(why)}.</p>'
    return f'<section class="stage off-path" id="stage-{key}"><h2>{_e(title)}</h2>{body}</section>'


def _failed_page(trace_id: str, findings: list[Finding], rows: list[CaseRow]) -> str:
    failures = _table(
        ("reason", "stage", "detail"),
        ((f'<span class="code">{_e(f.code)}</span>', _e(f.stage), _e(f.detail)) for f in findings),
        "failures",
    )
    banner = (
        '<p class="seal failed" id="seal-status" data-status="failed">Verification failed: '
        "this trace is not shown. Its stored bytes, or the case rows beside them, are not "
        "what the sealed trace and its case give.</p>"
    )
    body = f"<h1>Trace {ident(trace_id)}</h1>{banner}{failures}{_cases_section(rows)}"
    return _page(f"Workbench: trace {trace_id[:12]} failed", body)


def _cases_section(rows: list[CaseRow]) -> str:
    if not rows:
        return _section(
            "cases",
            "Cases",
            '<p class="missing">Missing: no case row names this trace.</p>',
            missing=True,
        )
    table = _table(
        ("case", "source", "question (case row, not sealed)", "gold"),
        (
            (
                f'<span class="case-id">{visible(row.case_id)}</span>',
                _e(row.source),
                f'<span class="question-text">{visible(row.question)}</span>',
                _e(row.gold) if row.gold is not None else '<span class="none">none</span>',
            )
            for row in rows
        ),
    )
    return _section("cases", "Cases", table)


def evidence_spans(trace: SealedPracticeTrace) -> list[tuple[str, str, SourceSpan]]:
    """Every span the trace's records cite, as (kind, label, span), in stage order."""
    frame = trace.frame
    found: list[tuple[str, str, SourceSpan]] = []
    found += [("fact", f"fact {f.fact_id}", f.span) for f in frame.facts]
    found += [("cue", f"cue {c.direction.value}", c.span) for c in frame.cues]
    for proposal in frame.proposals:
        for binding in proposal.bindings:
            found += [
                ("binding", f"binding {binding.role.value}", s) for s in binding.evidence_spans
            ]
    if frame.target is not None:
        found.append(("target", "target", frame.target.span))
    for hazard in frame.hazards:
        found += [("hazard", f"hazard {hazard.code.value}", s) for s in hazard.evidence_spans]
    for blocker in trace.original_assessment.blockers:
        found += [("blocker", f"blocker {blocker.code.value}", s) for s in blocker.evidence_spans]
    for residual in trace.residuals:
        found += [
            ("residual", f"residual {residual.kind.value}", s) for s in residual.evidence_spans
        ]
    if trace.gate_decision is not None:
        found += [("gate", "gate", s) for s in trace.gate_decision.evidence_spans]
    if trace.budget_decision is not None:
        found += [("budget", "budget", s) for s in trace.budget_decision.evidence_spans]
    for outcome in trace.operator_outcomes:
        if type(outcome) is CandidateOperatorResult:
            index = outcome.attempt_index
            found += [("candidate", f"candidate {index}", s) for s in outcome.evidence_spans]
            cue = outcome.reconstruction.candidate_payload.cue_span
            found.append(("candidate", f"candidate {index} cue", cue))
    return found


def _in_source(span: SourceSpan, text: str) -> bool:
    return text[span.start : span.end] == span.text


def highlighted(text: str, spans: list[tuple[str, str, SourceSpan]]) -> str:
    """The question with each stretch covered by spans marked at its exact offsets; the
    title lists every span over it. A span that is not the text at its offsets is not marked
    (the span table names it)."""
    placed = [(kind, label, span) for kind, label, span in spans if _in_source(span, text)]
    bounds = sorted({0, len(text)} | {s.start for *_, s in placed} | {s.end for *_, s in placed})
    parts = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        over = [(k, lb, s) for k, lb, s in placed if s.start <= start and end <= s.end]
        piece = visible(text[start:end])
        if not over:
            parts.append(piece)
            continue
        kinds = list(dict.fromkeys(kind for kind, *_ in over))
        title = "; ".join(dict.fromkeys(f"{lb} [{s.start}:{s.end}]" for _, lb, s in over))
        parts.append(
            f'<mark class="k-{kinds[0]}" data-start="{start}" data-end="{end}" '
            f'data-kinds="{" ".join(kinds)}" title="{_e(title)}">{piece}</mark>'
        )
    return f'<p class="question" id="question">{"".join(parts)}</p>'


def _question_section(trace: SealedPracticeTrace) -> str:
    text = trace.frame.source_text
    spans = evidence_spans(trace)
    # One row per distinct span, in text order, naming every record that cites it.
    cited: dict[tuple[int, int, str], list[tuple[str, str]]] = {}
    for kind, label, span in spans:
        cited.setdefault((span.start, span.end, span.text), []).append((kind, label))
    rows = []
    for (start, end, span_text), citations in sorted(cited.items()):
        at = (
            ""
            if text[start:end] == span_text
            else ' <span class="failed">not the question at these offsets</span>'
        )
        kinds = " ".join(
            f'<span class="k-{kind} swatch">{_e(kind)}</span>'
            for kind in dict.fromkeys(kind for kind, _ in citations)
        )
        rows.append(
            (
                f'<span class="offsets">{start}:{end}</span>',
                f'<q class="span-text">{visible(span_text)}</q>{at}',
                kinds,
                _e(", ".join(dict.fromkeys(label for _, label in citations))),
            )
        )
    legend = (
        '<p class="note">Marked: every span a record of this trace cites, at its exact '
        "offsets (code points); hover a mark to see which records cite it.</p>"
    )
    table = _table(("offsets", "text", "kinds", "cited by"), rows, "spans")
    return _section("question", "Question", highlighted(text, spans) + legend + table)


def _frame_section(trace: SealedPracticeTrace) -> str:
    frame = trace.frame
    facts = (
        _table(
            ("fact", "value", "unit", "entity", "span"),
            (
                (_e(f.fact_id), _e(f.value), visible(f.unit), visible(f.entity), _span(f.span))
                for f in frame.facts
            ),
        )
        if frame.facts
        else '<p class="none">no facts</p>'
    )
    cues = (
        _table(("direction", "span"), ((_e(c.direction.value), _span(c.span)) for c in frame.cues))
        if frame.cues
        else '<p class="none">no cues</p>'
    )
    proposals = []
    for proposal in frame.proposals:
        bindings = (
            _table(
                ("role", "bound to", "evidence"),
                (
                    (
                        _e(b.role.value),
                        _e(
                            b.fact_id
                            if b.fact_id is not None
                            else (b.direction.value if b.direction else "the question target")
                        ),
                        _spans(b.evidence_spans),
                    )
                    for b in proposal.bindings
                ),
            )
            if proposal.bindings
            else '<p class="none">no bindings</p>'
        )
        proposals.append(
            f'<div class="proposal"><h4>{_e(proposal.relation_type)}</h4>{bindings}</div>'
        )
    target = (
        f"{_e(frame.target.unit)} of {_e(frame.target.entity)} {_span(frame.target.span)}"
        if frame.target is not None
        else '<span class="none">none: the question names no target</span>'
    )
    hazards = (
        _table(
            ("hazard", "evidence"),
            ((_e(h.code.value), _spans(h.evidence_spans)) for h in frame.hazards),
        )
        if frame.hazards
        else '<p class="none">no hazards</p>'
    )
    body = (
        _fields(
            (
                ("frame digest", ident(problem_frame_digest(frame))),
                ("organ", _e(frame.organ)),
                ("schema", _e(frame.schema_version)),
                ("target", target),
            )
        )
        + f"<h3>Facts</h3>{facts}<h3>Cues</h3>{cues}"
        + "<h3>Proposals and bindings</h3>"
        + ("".join(proposals) or '<p class="none">no proposals</p>')
        + f"<h3>Hazards</h3>{hazards}"
    )
    return _section("frame", "Frame", body)


def _assessment_section(trace: SealedPracticeTrace) -> str:
    a = trace.original_assessment
    blockers = (
        _table(
            ("blocker", "role", "evidence"),
            (
                (_e(b.code.value), _e(b.role.value) if b.role else "", _spans(b.evidence_spans))
                for b in a.blockers
            ),
        )
        if a.blockers
        else '<p class="none">no blockers</p>'
    )
    body = (
        _fields(
            (
                ("assessment", ident(a.assessment_id)),
                (
                    "status",
                    _status(a.status.value),
                ),
                ("organ", _e(f"{a.organ} {a.organ_version}")),
                ("explanation", _e(a.explanation)),
            )
        )
        + f"<h3>Blockers</h3>{blockers}"
    )
    return _section("assessment", "Original assessment", body)


def _proof_fields(proof: ProofRecord) -> str:
    obligations = _table(
        ("obligation", "holds"),
        (
            (_e(o.obligation.value), "holds" if o.holds else '<span class="failed">fails</span>')
            for o in proof.obligations
        ),
    )
    derived = (
        f"{_e(proof.derived_value)} {_e(proof.derived_unit)}"
        if proof.derived_value is not None
        else '<span class="none">none</span>'
    )
    return (
        _fields(
            (
                ("proof", ident(proof.proof_id)),
                (
                    "status",
                    _status(proof.status.value),
                ),
                ("derived", derived),
                ("explanation", _e(proof.explanation)),
            )
        )
        + obligations
    )


def _proof_section(key: str, title: str, proof: ProofRecord | None) -> str:
    if proof is None:
        return _section(key, title, _missing("direct proof"), missing=True)
    return _section(key, title, _proof_fields(proof))


def _direct_proof_section(trace: SealedPracticeTrace) -> str:
    return _proof_section("direct-proof", "Direct proof", trace.direct_proof)


def _residuals_section(trace: SealedPracticeTrace) -> str:
    if not trace.residuals:
        return _section("residuals", "Residuals", _missing("residual"), missing=True)
    table = _table(
        ("residual", "kind", "code", "role", "evidence", "explanation"),
        (
            (
                ident(r.residual_id),
                _e(r.kind.value),
                _e(r.residual_code),
                _e(r.role.value) if r.role else "",
                _spans(r.evidence_spans),
                _e(r.explanation),
            )
            for r in trace.residuals
        ),
    )
    return _section("residuals", "Residuals", table)


def _gate_section(trace: SealedPracticeTrace) -> str:
    gate = trace.gate_decision
    if gate is None:
        return _section("gate", "Search gate", _missing("gate decision"), missing=True)
    body = _fields(
        (
            ("decision", ident(gate.decision_id)),
            ("disposition", _status(gate.status.value)),
            ("reason", f'<span class="code">{_e(gate.reason_code)}</span>'),
            ("policy", _e(gate.policy_version)),
            ("input", ident(gate.input_digest)),
            ("evidence", _spans(gate.evidence_spans)),
            ("explanation", _e(gate.explanation)),
        )
    )
    return _section("gate", "Search gate", body)


_LIMITS = (
    ("candidates", "max_candidates", "candidates_considered"),
    ("depth", "max_depth", "depth_reached"),
    ("steps", "max_steps", "steps_used"),
    ("parallelism", "max_parallelism", "parallelism_used"),
)


def _budget_rows(budget: ComputeBudgetDecision, run: object) -> list[list[str]]:
    rows = []
    consumed = run.budget_consumed if type(run) is GeometricSearchRun else None
    for name, limit_field, used_field in _LIMITS:
        granted = getattr(budget, limit_field)
        if consumed is None:
            used, bar = '<span class="none">none: no run consumed the budget</span>', ""
        else:
            value = getattr(consumed, used_field)
            used = str(value)
            bar = (
                f'<meter min="0" max="{granted}" value="{min(value, granted)}" '
                f'title="{value} of {granted}">{value} of {granted}</meter>'
                if granted > 0
                else '<span class="none">nothing granted</span>'
            )
        rows.append([_e(name), str(granted), used, bar])
    wallclock = budget.max_wallclock_ms
    rows.append(
        [
            "wall clock",
            f"{wallclock} ms" if wallclock is not None else '<span class="none">no limit</span>',
            '<span class="none">not measured: no identity holds a clock</span>',
            "",
        ]
    )
    return rows


def _budget_section(trace: SealedPracticeTrace) -> str:
    budget = trace.budget_decision
    if budget is None:
        return _section("budget", "Compute budget", _missing("budget decision"), missing=True)
    body = _fields(
        (
            ("budget", ident(budget.budget_id)),
            ("disposition", _status(budget.status.value)),
            ("reason", f'<span class="code">{_e(budget.reason_code)}</span>'),
            ("policy", _e(budget.policy_version)),
            ("gate decision", ident(budget.gate_decision_id)),
            ("explanation", _e(budget.explanation)),
        )
    ) + _table(
        ("limit", "granted", "consumed", ""), _budget_rows(budget, trace.run_outcome), "budget"
    )
    return _section("budget", "Compute budget", body)


def _run_section(trace: SealedPracticeTrace) -> str:
    parts = []
    bound = trace.search_input
    parts.append(
        _fields((("search input", ident(bound.input_digest())),))
        if bound is not None
        else _missing("search input")
    )
    opened, run = trace.opened_run, trace.run_outcome
    if opened is not None:
        parts.append(
            _fields(
                (("opened run", ident(opened.run_id)), ("policy", _e(opened.run_policy_version)))
            )
        )
    elif type(run) is SearchRunRefusal:  # refused before opening: nothing was to be opened
        parts.append('<p class="none">No opened run: the run was refused before it opened.</p>')
    else:
        parts.append(_missing("opened run"))
    if type(run) is GeometricSearchRun:
        attempts = (
            _table(
                ("#", "attempt", "operator", "candidate", "depth", "replay status", "blockers"),
                (
                    (
                        str(a.attempt_index),
                        ident(a.attempt_id),
                        _e(f"{a.operator_id} {a.operator_version}"),
                        ident(a.candidate_digest),
                        str(a.depth),
                        _e(a.replay_status.value),
                        _codes(a.replay_blockers),
                    )
                    for a in run.candidate_attempts
                ),
            )
            if run.candidate_attempts
            else '<p class="none">no attempts</p>'
        )
        parts.append(
            _fields(
                (
                    ("run", ident(run.run_id)),
                    ("disposition", _status(run.run_disposition.value)),
                    (
                        "exhaustion",
                        _e(run.exhaustion_code.value)
                        if run.exhaustion_code
                        else '<span class="none">none</span>',
                    ),
                    ("explanation", _e(run.explanation)),
                )
            )
            + attempts
        )
    elif run is not None:
        parts.append(
            _fields(
                (
                    ("run refused", ident(run.outcome_id)),
                    ("disposition", _status(run.run_disposition.value)),
                    ("reasons", _codes(run.reason_codes)),
                    ("explanation", _e(run.explanation)),
                )
            )
        )
    else:
        parts.append(_missing("search run"))
    missing = bound is None and opened is None and run is None
    return _section("run", "Search run", "".join(parts), missing=missing)


def _replay_of(trace: SealedPracticeTrace, result: CandidateOperatorResult) -> str:
    for replay in trace.replays:
        if type(replay) is ReplayResult and (replay.attempt_id, replay.candidate_digest) == (
            result.attempt_id,
            result.candidate_digest,
        ):
            return f"{_status(replay.disposition.value)} blockers: {_codes(replay.replay_blockers)}"
        if type(replay) is ReplayRefusal and (
            replay.candidate_reconstruction_digest == result.candidate_reconstruction_digest
        ):
            return f'<span class="status">replay refused</span> {_codes(replay.reason_codes)}'
    return '<span class="missing">missing: no replay of this candidate</span>'


def _candidates_section(trace: SealedPracticeTrace) -> str:
    if not trace.operator_outcomes:
        return _section(
            "candidates", "Candidates", _missing("candidate operator outcome"), missing=True
        )
    rows = []
    for outcome in trace.operator_outcomes:
        if type(outcome) is CandidateOperatorResult:
            payload = outcome.reconstruction.candidate_payload
            rows.append(
                (
                    str(outcome.attempt_index),
                    ident(outcome.candidate_digest),
                    _e(f"{payload.role.value} = {payload.direction.value} from {payload.source} ")
                    + _span(payload.cue_span),
                    _e(f"{outcome.operator_name} {outcome.operator_version}"),
                    _replay_of(trace, outcome),
                )
            )
        else:
            assert type(outcome) is CandidateOperatorRefusal
            rows.append(
                (
                    "",
                    ident(outcome.operator_refusal_id),
                    f"operator refused: {_codes(outcome.reason_codes)}",
                    _e(outcome.operator_name),
                    '<span class="none">no candidate to replay</span>',
                )
            )
    table = _table(
        ("#", "candidate", "proposal", "operator", "replay disposition"), rows, "candidates"
    )
    return _section("candidates", "Candidates, in order", table)


def _replays_section(trace: SealedPracticeTrace) -> str:
    if not trace.replays:
        return _section("replays", "Contract and proof replays", _missing("replay"), missing=True)
    blocks = []
    for replay in trace.replays:
        if type(replay) is ReplayResult:
            proof = replay.replay_proof
            blocks.append(
                _fields(
                    (
                        ("replay", ident(replay.replay_id)),
                        (
                            "disposition",
                            _status(replay.disposition.value),
                        ),
                        ("blockers", _codes(replay.replay_blockers)),
                        ("candidate", ident(replay.candidate_digest)),
                        ("reconstruction", ident(replay.candidate_reconstruction_digest)),
                        ("candidate frame", ident(problem_frame_digest(replay.candidate_frame))),
                        (
                            "replay assessment",
                            ident(replay.replay_assessment.assessment_id)
                            + " "
                            + _status(replay.replay_assessment.status.value),
                        ),
                        (
                            "replay proof",
                            f"{ident(proof.proof_id)} {_e(proof.status.value)}"
                            if proof is not None
                            else _no_replay_proof(replay),
                        ),
                        ("explanation", _e(replay.explanation)),
                    )
                )
            )
        else:
            assert type(replay) is ReplayRefusal
            blocks.append(
                _fields(
                    (
                        ("replay refused", ident(replay.replay_refusal_id)),
                        ("reasons", _codes(replay.reason_codes)),
                        ("explanation", _e(replay.explanation)),
                    )
                )
            )
    return _section("replays", "Contract and proof replays", "".join(blocks))


def _no_replay_proof(replay: ReplayResult) -> str:
    if replay.disposition is ReplayDisposition.CONTRACT_REFUSED:  # proof follows the contract
        return '<span class="none">none: the contract refused, so no proof was replayed</span>'
    return '<span class="missing">missing: no proof replayed</span>'


def _outcome_section(trace: SealedPracticeTrace) -> str:
    outcome = trace.outcome
    if type(outcome) is ProofGatedAnswer:
        body = (
            f'<p class="answer" id="final">Answer: <strong>{_e(outcome.value)} '
            f"{visible(outcome.unit)}</strong> ({_e(outcome.path.value)})</p>"
            + _fields(
                (
                    ("answer", ident(outcome.answer_id)),
                    ("proof", ident(outcome.proof_id)),
                    (
                        "replays",
                        " ".join(ident(r) for r in outcome.replay_ids)
                        or '<span class="none">none</span>',
                    ),
                    ("explanation", _e(outcome.explanation)),
                )
            )
        )
    else:
        assert type(outcome) is AnswerRefusal
        body = (
            f'<p class="refusal" id="final">Refused: {_codes(outcome.reason_codes)}</p>'
            + _fields(
                (
                    ("refusal", ident(outcome.answer_refusal_id)),
                    ("explanation", _e(outcome.explanation)),
                )
            )
        )
    return _section("outcome", "Proof-gated answer or refusal", body)


def _seal_section(trace: SealedPracticeTrace) -> str:
    digests = _table(
        ("stage", "identity"), ((_e(stage), ident(value)) for stage, value in trace.stage_digests)
    )
    versions = _table(("component", "version"), ((_e(n), _e(v)) for n, v in trace.versions))
    body = (
        _fields((("trace", ident(trace.trace_id)), ("schema", _e(trace.schema_version))))
        + f"<h3>Stage identities</h3>{digests}<h3>Versions</h3>{versions}"
    )
    return _section("seal", "Seal", body)


# The stages a case's path may not have, with their sections (the keys of verdict_of).
_PATH_SECTIONS = (
    ("direct-proof", "Direct proof", _direct_proof_section),
    ("residuals", "Residuals", _residuals_section),
    ("gate", "Search gate", _gate_section),
    ("budget", "Compute budget", _budget_section),
    ("run", "Search run", _run_section),
    ("candidates", "Candidates, in order", _candidates_section),
    ("replays", "Contract and proof replays", _replays_section),
)

STYLESHEET = """
:root { color-scheme: light; --ink: #1d2330; --muted: #5c6475; --line: #d9dde5;
  --ok: #1d7a3a; --bad: #b3261e; --paper: #fbfbfd; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: var(--ink);
  background: var(--paper); }
header.bar { display: flex; gap: 1em; align-items: baseline; padding: .6em 1.2em;
  background: #24304a; color: #fff; }
header.bar a.home { color: #fff; font-weight: 700; text-decoration: none; }
header.bar .note { color: #c9d2e6; }
main { max-width: 1200px; margin: 0 auto; padding: 1em 1.2em 3em; }
h1 { font-size: 1.5em; margin: .4em 0; } h2 { font-size: 1.15em; margin: 0 0 .5em; }
h3 { font-size: 1em; margin: .8em 0 .3em; color: var(--muted); } h4 { margin: .4em 0; }
.note { color: var(--muted); font-weight: normal; font-size: .9em; }
table { border-collapse: collapse; width: 100%; margin: .3em 0 .6em; background: #fff; }
th, td { border: 1px solid var(--line); padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #eef1f6; font-weight: 600; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; margin: .3em 0; }
dl.fields dt { color: var(--muted); } dl.fields dd { margin: 0; }
code.id { display: inline-block; max-width: 14ch; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; vertical-align: bottom; user-select: all; cursor: copy;
  font: 13px/1.4 ui-monospace, monospace; background: #eef1f6; padding: 0 .3em;
  border-radius: 3px; }
code.id:hover, code.id:focus { outline: 1px solid #8fa3c7; }
.code { font-family: ui-monospace, monospace; font-size: .92em; }
.none { color: var(--muted); font-style: italic; }
.missing { color: #8a5a00; background: #fff4d6; border-left: 3px solid #e0a800;
  padding: .2em .5em; }
section.stage { background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: .8em 1em; margin: .8em 0; }
section.missing-stage { background: #fffaf0; border-style: dashed; }
.seal { padding: .5em .8em; border-radius: 6px; font-weight: 600; }
.seal.verified { background: #e3f4e8; color: var(--ok); border: 1px solid #9fd3ad; }
.seal.failed { background: #fde7e5; color: var(--bad); border: 1px solid #f0a39c; }
.failed { color: var(--bad); font-weight: 600; }
p.question { font-size: 1.1em; white-space: pre-wrap; background: #fff; padding: .6em .8em;
  border: 1px solid var(--line); border-radius: 6px; }
mark { border-radius: 2px; padding: 0; color: inherit; }
.k-fact { background: #cfe3ff; } .k-cue { background: #ffe0b3; } .k-target { background: #d6f5d6; }
.k-binding { background: #e6dcff; } .k-hazard, .k-blocker { background: #ffd1cc; }
.k-residual { background: #ffe3e0; } .k-gate, .k-budget { background: #eee; }
.k-candidate { background: #fff1a8; }
.swatch { padding: 0 .4em; border-radius: 3px; }
.offsets { color: var(--muted); font-family: ui-monospace, monospace; font-size: .9em; }
q.span-text { font-family: ui-monospace, monospace; font-size: .95em; }
nav.filters { display: flex; flex-wrap: wrap; gap: .4em; margin: .5em 0; }
a.filter, a.reason { text-decoration: none; color: var(--ink); }
a.filter { border: 1px solid var(--line); border-radius: 999px; padding: .2em .8em;
  background: #fff; }
a.filter.current, a.reason.current { background: #24304a; color: #fff; }
a.reason { display: inline-block; padding: 0 .3em; border-radius: 3px; }
.count { font-weight: 700; }
details.reasons ul { columns: 2; margin: .3em 0; padding-left: 1.2em; }
form.search { display: flex; gap: .4em; margin: .6em 0; }
form.search input { flex: 1; padding: .3em .5em; font: inherit; }
.outcome.o-answered_direct, .outcome.o-answered_practice { color: var(--ok); font-weight: 600; }
.outcome.o-failed_verification, .outcome.o-trace_missing { color: var(--bad); font-weight: 700; }
section.recorded { border: 1px dashed var(--line); border-radius: 6px; padding: .4em .8em;
  margin: .5em 0; background: #f6f7fa; }
section.recorded h2 { font-size: 1em; margin: .2em 0; }
span.filter.unrecognized { border: 1px dashed var(--bad); border-radius: 999px;
  padding: .2em .8em; color: var(--bad); }
p.checking { color: var(--muted); font-size: .92em; margin: .3em 0; }
tr[data-standing="failed_verification"], tr[data-standing="trace_missing"] { background: #fdf0ef; }
span.claimed { color: var(--muted); font-size: .9em; font-weight: normal; }
span.answer { font-weight: 600; color: var(--ok); white-space: nowrap; }
.gold-check { font-size: .85em; padding: 0 .3em; border-radius: 3px; white-space: nowrap; }
.g-matches { background: #e3f4e8; color: var(--ok); }
.g-wrong { background: #fde7e5; color: var(--bad); font-weight: 700; }
.g-unjudged { background: #eef1f6; color: var(--muted); }
span.how { font-size: .92em; }
table.cases td:nth-child(2) { min-width: 16em; } table.cases td:nth-child(6) { min-width: 12em; }
meter { width: 10em; }
p.answer strong { font-size: 1.2em; color: var(--ok); }
nav.pages { margin: .6em 0; color: var(--muted); } nav.pages a { margin-right: .6em; }
bdi { unicode-bidi: isolate; }
.cp { display: inline-block; font: 11px/1.3 ui-monospace, monospace; color: #7a1d14;
  background: #fde7e5; border: 1px solid #f0a39c; border-radius: 3px; padding: 0 .2em;
  margin: 0 .1em; vertical-align: middle; }
section.verdict { border: 2px solid var(--line); border-radius: 8px; padding: .8em 1em;
  margin: .6em 0 1em; background: #fff; }
section.verdict.v-answered_direct, section.verdict.v-answered_practice { border-color: #9fd3ad; }
section.verdict.v-refused { border-color: #f0c36d; }
p.verdict-head { font-size: 1.25em; margin: 0 0 .4em; }
.uses { display: flex; flex-wrap: wrap; gap: .3em 1.2em; } .use meter { width: 6em; }
ol.flow { display: flex; flex-wrap: wrap; gap: .5em 1.6em; list-style: none; padding: 0;
  margin: .8em 0 .3em; }
ol.flow li { position: relative; border: 2px solid var(--line); border-radius: 6px;
  padding: .25em .6em; min-width: 7.5em; background: #fff; }
ol.flow li + li::before { content: "\\2192"; position: absolute; left: -1.35em; top: .6em;
  color: var(--muted); }
ol.flow li a { display: block; font-weight: 600; color: inherit; text-decoration: none; }
ol.flow li .state { font-size: .8em; }
ol.flow li.st-passed { border-color: #9fd3ad; background: #e3f4e8; }
ol.flow li.st-refused { border-color: #f0c36d; background: #fff4d6; }
ol.flow li.st-decisive { border-color: var(--bad); background: #fde7e5; color: var(--bad); }
ol.flow li.st-not_on_path { border-style: dashed; color: #9aa1ae; background: #f3f4f7; }
ol.flow li.st-missing { border-color: #e0a800; border-style: dashed; background: #fff4d6; }
section.off-path { background: #f6f7f9; border-style: dashed; color: var(--muted); }
p.not-on-path { margin: 0; font-style: italic; }
"""
