"""Example budgets for parametrized properties.

A test parametrized over many labelled cases runs each case as its own property; giving each
the profile's full example count multiplies the suite's cost by the number of cases without
adding much: the cases differ in their corruption, not in the chains they draw. ``share(n)``
gives such a test a fixed fraction of whatever profile is loaded, so ``nightly`` still scales
every case up.
"""

from __future__ import annotations

from hypothesis import settings


def share(divisor: int) -> settings:
    """Settings with ``1/divisor`` of the loaded profile's examples (at least 5)."""
    return settings(max_examples=max(5, settings().max_examples // divisor))
