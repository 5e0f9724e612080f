"""Hypothesis profiles shared by every test (tests/README.md).

``dev`` is the local default; ``ci`` is chosen when ``CI=true`` (derandomized, so a CI
failure reproduces from the same seed; it deliberately replaces the ``ci`` profile Hypothesis
itself loads whenever ``CI`` is set); ``nightly`` is for long campaigns with a persistent
example database; ``crosshair`` runs properties on the CrossHair backend and exists only where
``hypothesis-crosshair`` is installed. ``HYPOTHESIS_PROFILE`` or pytest's
``--hypothesis-profile`` overrides the choice.
"""

from __future__ import annotations

import inspect
import os
import re
import signal

import pytest
from hypothesis import HealthCheck, settings

from practice_loop.harness.fuzz_database import database_from_environment

# The tests that press Ctrl-C on a child process (the command line, the fuzz campaign,
# Workbench) need a child that can receive it, but a session started in the background (`&` in
# a script, nohup) inherits SIGINT ignored, and so would every child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Every profile starts from Hypothesis's defaults: when CI is set, Hypothesis has already
# loaded its own derandomized "ci" profile, which profiles would otherwise inherit from.
_DEFAULTS = settings.get_profile("default")

settings.register_profile("dev", parent=_DEFAULTS, max_examples=60, deadline=None)
settings.register_profile(
    "ci",
    parent=_DEFAULTS,
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "nightly",
    parent=_DEFAULTS,
    max_examples=5_000,
    deadline=None,
    # A directory (default .hypothesis/nightly) or redis://HOST:PORT from
    # $PRACTICE_LOOP_EXAMPLE_DB, read-only or with a replayed source (docs/nightly-fuzzing.md).
    database=database_from_environment(os.environ),
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

try:
    import hypothesis_crosshair_provider  # noqa: F401  (registers the "crosshair" backend)
except ImportError:
    pass
else:
    settings.register_profile(
        "crosshair",
        parent=_DEFAULTS,
        backend="crosshair",
        max_examples=50,
        deadline=None,
        database=None,
        # Symbolic execution is slow per example and realises values lazily: none of the
        # timing, size or filtering checks says anything about the code under test here.
        suppress_health_check=list(HealthCheck),
    )

_default = "ci" if os.environ.get("CI", "").lower() == "true" else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))


# A failing test names the clause it proves: each test's docstring cites it (tests/README.md),
# and so do its ``obligation`` markers where it has them; both are added to the report.
_CLAUSE = re.compile(r"(ADR-\d{4}[^.;:\n]*|docs/adr/\d{4}[^.;:\n]*|ARCHITECTURE[^.;:\n]*)")


def _clauses_of(item: pytest.Item) -> str:
    found = []
    for marker in item.iter_markers("obligation"):
        found.extend(str(argument) for argument in marker.args)
    for owner in (getattr(item, "function", None), getattr(item, "cls", None), item.module):
        doc = inspect.getdoc(owner) if owner is not None else None
        if doc:
            found.extend(match.strip() for match in _CLAUSE.findall(" ".join(doc.split())))
            if found:
                break
    return "; ".join(dict.fromkeys(found))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.failed:
        clauses = _clauses_of(item)
        if clauses:
            report.sections.append(("violated clause", clauses))
            crash = getattr(report.longrepr, "reprcrash", None)
            if crash is not None:
                crash.message = f"[{clauses}] {crash.message}"
    return report
