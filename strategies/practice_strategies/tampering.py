"""Build records that construction would refuse, the way an attacker or a bug would.

Kernel records validate on construction, so a malformed record can only arrive through
``object.__setattr__``, a foreign type or a decoder. These helpers make such values so that
tests can prove every stage refuses them with the exact typed reason. They are the
catalogue's own forging helpers (``practice_loop.harness.catalogue.forging``, standard
library only), so that the strategies, the catalogue and the golden vectors forge alike.
"""

from __future__ import annotations

from practice_loop.harness.catalogue.forging import (
    fields_for_sealing,
    neighbouring_digest,
    other_digest,
    resealed,
    tampered,
)

__all__ = ["fields_for_sealing", "neighbouring_digest", "other_digest", "resealed", "tampered"]
