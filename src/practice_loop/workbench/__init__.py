"""Workbench: a read-only web display of the stored, verified traces (ADR-0226 §7G, §8.11).

Three modules, imported one way only (ARCHITECTURE §5; ``tests/architecture``):

- ``model``: the view model, pure of HTTP and HTML: outcomes, refusals, each case's verified
  standing and its cache, the list and its query;
- ``pages``: pure functions from verified records and the model to HTML;
- ``server``: the HTTP server and its handler, ``serve`` and the ``workbench`` command.

server -> pages -> model -> (``product.store``, ``product.verification``, ``product.progress``,
``kernel``), never back.
"""

from .model import (
    BadQuery,
    ListedCase,
    ListQuery,
    Outcome,
    Refusal,
    StandingCache,
    TraceStanding,
    failure_text,
    list_cases,
    parse_list_query,
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
    "BadQuery",
    "ListQuery",
    "ListedCase",
    "Outcome",
    "Refusal",
    "StandingCache",
    "TraceStanding",
    "WorkbenchHandler",
    "WorkbenchServer",
    "add_subcommand",
    "failure_text",
    "list_cases",
    "parse_list_query",
    "serve",
    "standing_of",
]
