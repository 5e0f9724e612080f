"""Workbench: a read-only web display of the stored, verified traces (ADR-0226 §7G, §8.11).

Three modules, imported one way only (ARCHITECTURE §5; ``tests/architecture``):

- ``model``: the view model, pure of HTTP and HTML: outcomes as recorded and as verified,
  refusals, each case's verified standing and the caches of the full check, the list's query,
  counts and rows;
- ``pages``: pure functions from verified records and the model to HTML;
- ``server``: the HTTP server and its handler, ``serve`` and the ``workbench`` command.

server -> pages -> model -> (``product.store``, ``product.verification``, ``product.runner``,
``kernel``), never back.
"""

from .model import (
    MAX_QUERY_BYTES,
    STANDING_CACHE_ENTRIES,
    TRACE_CACHE_ENTRIES,
    BadQuery,
    GoldCheck,
    ListedCase,
    ListQuery,
    ListView,
    Outcome,
    RecordedCounts,
    RecordedOutcome,
    Refusal,
    StandingCache,
    TraceCache,
    TraceStanding,
    failure_text,
    gold_check,
    list_view,
    parse_list_query,
    recorded_counts,
    standing_of,
)
from .server import (
    CONTENT_SECURITY_POLICY,
    WorkbenchHandler,
    WorkbenchServer,
    add_subcommand,
    serve,
)

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "MAX_QUERY_BYTES",
    "STANDING_CACHE_ENTRIES",
    "TRACE_CACHE_ENTRIES",
    "BadQuery",
    "GoldCheck",
    "ListQuery",
    "ListView",
    "ListedCase",
    "Outcome",
    "RecordedCounts",
    "RecordedOutcome",
    "Refusal",
    "StandingCache",
    "TraceCache",
    "TraceStanding",
    "WorkbenchHandler",
    "WorkbenchServer",
    "add_subcommand",
    "failure_text",
    "gold_check",
    "list_view",
    "parse_list_query",
    "recorded_counts",
    "serve",
    "standing_of",
]
