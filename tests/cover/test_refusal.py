"""``StageRefusal`` and ``refuse`` (docs/adr/0003, "Refusals"): a refusal names its stage and
at least one closed reason code, and ``refuse`` is called by name."""

from __future__ import annotations

import pytest

from practice_loop.kernel import Defect, RecordDefect, RecordError, Stage, StageRefusal
from practice_loop.kernel.refusal import refuse
from practice_strategies import fields_for_sealing


@pytest.mark.obligation("LOCAL-0003/refusal_shapes")
def test_a_refusal_is_built_by_name_and_names_its_reason():
    refusal = refuse(stage=Stage.ASSESSMENT, reason="frame_malformed")
    assert (refusal.stage, refusal.reason_codes) == (Stage.ASSESSMENT, ("frame_malformed",))
    assert refusal.explanation == "frame malformed"


@pytest.mark.obligation("LOCAL-0003/refusal_shapes")
def test_a_refusal_without_a_reason_is_malformed():
    refusal = refuse(Stage.PROOF, "frame_malformed")
    with pytest.raises(RecordError) as caught:
        StageRefusal.sealed(**fields_for_sealing(refusal, reason_codes=()))
    expected = RecordDefect("StageRefusal", "reason_codes", Defect.SEQUENCE_EMPTY)
    assert caught.value.found == expected
