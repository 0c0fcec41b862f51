"""A CI that excludes 1 beside "undecided" says why (issue 32 item 4): the CI is at the
campaign's confidence, the verdict's test at alpha spread over every look."""

from __future__ import annotations

import io

from rich.console import Console

from benchrun.runner.ui.tables import verdicts_table


def _render(doc: dict) -> str:
    out = io.StringIO()
    Console(file=out, width=250).print(verdicts_table(doc))
    return out.getvalue()


def _pair(verdict: str, low: float, high: float) -> dict:
    return {"a": "x", "b": "y", "verdict": verdict, "ratio": (low + high) / 2, "ratio_low": low,
            "ratio_high": high, "test": "paired", "welch_p_holm": 0.02, "tost_p": 0.5}  # fmt: skip


def test_an_undecided_pair_whose_ci_excludes_one_says_why() -> None:
    doc = {"pairs": [_pair("undecided", 1.015, 1.117)], "confidence": 0.95, "alpha": 0.01,
           "margin": 0.01, "units": {}, "directions": {}}  # fmt: skip
    text = _render(doc)
    assert "the 95 % CI excludes 1, but the test decides at alpha 0.01 over all looks" in text


def test_no_note_where_the_ci_holds_one_or_the_pair_is_decided() -> None:
    base = {"confidence": 0.95, "alpha": 0.01, "margin": 0.01, "units": {}, "directions": {}}
    assert "excludes 1" not in _render({**base, "pairs": [_pair("undecided", 0.99, 1.05)]})
    assert "excludes 1" not in _render({**base, "pairs": [_pair("separated", 1.02, 1.05)]})


def test_the_tables_say_what_their_terms_mean(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Each term a newcomer meets without a word (issue 32: q × n_q, steady, Holm p, TOST
    p) has a line under its table."""
    from benchrun.runner.cli import main
    from tests.report.test_report_several import _two

    doc = {"pairs": [_pair("separated", 1.02, 1.05)], "confidence": 0.95, "alpha": 0.01,
           "margin": 0.01, "units": {}, "directions": {}}  # fmt: skip
    text = _render(doc)
    assert "Holm p" not in text and "p: the p-value of the test that separates" in text
    assert "TOST p: the equivalence test's" in text
    results = _two(tmp_path)
    capsys.readouterr()
    assert main(["show", str(results / "first")]) == 0
    out = capsys.readouterr().out
    assert "steady: rounds analysed, after warm-up" in out
