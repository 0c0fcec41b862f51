"""runner/results/verdicts.py: a campaign's stored comparisons read back as typed records.

The stored form is the controller's (``PairStatus``/``BaselineStatus`` as dicts in the
"verdicts" event); the expected field values are the stored ones written here, under the
names the records give them (docs/export-format.md "comparisons").
"""

from __future__ import annotations

import math

from benchrun.runner.results.verdicts import verdicts_from_dict
from benchrun.runner.ui.tables import verdicts_table

PAIR = {"a": "x", "b": "y", "verdict": "separated", "test": "paired", "ratio": 1.25,
        "ratio_low": 1.2, "ratio_high": 1.3, "passes": 40, "welch_p": 1e-6,
        "welch_p_holm": 2e-6, "tost_p": 0.9, "look": 3, "alpha": 0.004,
        "relative_difference": 0.25, "rounds_needed": None, "notes": ["n1"]}  # fmt: skip
BASE = {"baseline": "x", "name": "z", "verdict": "undecided", "test": "welch",
        "ratio": 1.01, "ratio_low": 0.98, "ratio_high": 1.04, "welch_p": "not a number",
        "welch_p_holm": float("nan"), "relative_change": 0.01, "rounds_needed": 120.0}  # fmt: skip
DOC = {"pairs": [PAIR], "baselines": [BASE], "units": {"x": "s", "y": "s", "z": "s"},
       "conditions_met": False, "reason": "max_time", "margin": 0.01, "alpha": 0.01,
       "confidence": 0.95}  # fmt: skip


def test_pair_and_baseline_fields_under_their_record_names() -> None:
    v = verdicts_from_dict(DOC)
    (pair,) = v.pairs
    (base,) = v.baselines
    assert (pair.kind, pair.a, pair.b, pair.verdict, pair.test) == (
        "pair", "x", "y", "separated", "paired")  # fmt: skip
    assert (pair.ratio, pair.ratio_low, pair.ratio_high) == (1.25, 1.2, 1.3)
    assert (pair.p, pair.p_holm, pair.tost_p) == (1e-6, 2e-6, 0.9)
    assert (pair.passes, pair.look, pair.alpha) == (40, 3, 0.004)
    assert pair.relative_difference == 0.25 and pair.notes == ("n1",)
    # a baseline stores its two sides as baseline/name and its change as relative_change
    assert (base.a, base.b, base.relative_difference) == ("x", "z", 0.01)
    # values that are no number are read as missing, never as NaN
    assert base.p is None and base.p_holm is None
    assert base.rounds_needed == 120 and base.independent_p is None
    assert v.budget_stop and v.margin == 0.01 and v.confidence == 0.95
    assert not any(isinstance(x, float) and math.isnan(x) for x in base.to_dict().values())


def test_the_terminal_table_takes_the_record_or_the_stored_form() -> None:
    typed = verdicts_table(verdicts_from_dict(DOC))
    stored = verdicts_table(DOC)
    assert typed is not None and stored is not None
    assert [c.headline for c in typed.items] == [c.headline for c in stored.items]
    # baselines first, as in every output
    assert [c.verdict for c in typed.items] == ["undecided", "separated"]
    assert typed.items[0].note == "~120 more rounds"
    assert verdicts_table({"pairs": [], "baselines": []}) is None
