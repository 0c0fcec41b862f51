"""The HTML report as a person sees it: opened offline in headless Chromium (Debian's
``chromium``, installed by ``.ci/run``), screenshot not blank, no console error, every
section present and every figure decoded."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from e2e_util import cli
from matplotlib.image import imread

SECTION_IDS = ("headline", "workloads", "comparisons", "machine", "methods", "rules")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")  # fmt: skip


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    return exe


def _run(exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_html_report_renders_offline_without_errors(
    campaigns: dict[str, Path], tmp_path: Path
) -> None:
    exe = _chromium()
    html = tmp_path / "report.html"
    proc = cli("report", str(campaigns["old"]), "--out", str(html))
    assert proc.returncode == 0, proc.stderr
    text = html.read_text()
    # self-contained: no external resource of any kind
    assert not re.search(r"""(src|href)=["'](https?:|//)""", text)
    url = html.resolve().as_uri()
    shot = tmp_path / "shot.png"
    run = _run(exe, tmp_path, "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
               "--window-size=1280,2000", url)  # fmt: skip
    assert shot.is_file(), run.stderr[-2000:]
    errors = [
        line
        for line in run.stderr.splitlines()
        if "Uncaught" in line or ("CONSOLE" in line and "error" in line.lower())
    ]
    assert not errors, errors
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (2000, 1280)
    assert float(pixels.std()) > 0.05  # not a blank page
    assert float((pixels.mean(axis=2) < 0.9).mean()) > 0.02  # text and figures drawn
    dom = _run(exe, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for sid in SECTION_IDS:
        assert f'id="{sid}"' in dom.stdout, sid
    # the fixed campaign's comparisons, computed when read, lead the report (issue 17)
    for text in ("How the campaign stopped", "verdict with next", "tests at one look",
                 "Quantile regression of", "autocorrelation by lag", "Relative half-width",
                 "Shapiro-Wilk", "We measured 3 workloads",
                 "12. Plot as much information"):  # fmt: skip
        assert text in dom.stdout, text
    assert "noise warnings" in dom.stdout or "No setting that adds noise" in dom.stdout
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,', dom.stdout)
    assert len(images) >= 4
    # every embedded PNG decodes to a non-empty figure
    for b64 in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text):
        import base64
        import io

        img = imread(io.BytesIO(base64.b64decode(b64)), format="png")
        assert img.shape[0] > 100 and float(np.std(img)) > 0.01
