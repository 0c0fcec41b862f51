"""Reports a person can publish (``benchrun report``), built on the store and ``stats``.

One module per concern, as in hyperfine's exporters (docs/design.md "Models to follow"):

- :mod:`runner.report.model`: gathers one campaign from the store into plain data
  (per-workload series, estimates, diagnostics); computes no test itself.
- :mod:`runner.report.analysis`: the comparisons (ranking and neighbour verdicts, relative
  to the best, quantile regression, and for suites HPT, Speedup-Test, bootstrap, biplot),
  all by calling ``stats``.
- :mod:`runner.report.methods`: the methods paragraph and Hoefler & Belli's twelve rules
  (the machine record's facts they state read once, as
  :meth:`runner.machine.facts.MachineFacts.from_stored` reads every stored record).
- :mod:`runner.report.plots`: matplotlib figures (PNG bytes).
- :mod:`runner.report.html`, :mod:`runner.report.markdown`, :mod:`runner.report.tabular`:
  one renderer per output format behind :func:`runner.report.render.write_report`.
- :mod:`runner.report.exchange`, :mod:`runner.report.compare`: the export document and
  ``benchrun compare`` (an export read back once by :mod:`runner.report.exported`).
"""

from __future__ import annotations

FORMATS: tuple[str, ...] = ("html", "md", "json", "csv")

__all__ = ["FORMATS"]
