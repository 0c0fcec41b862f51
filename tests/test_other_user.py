"""The second-user helpers do what the security tests rely on (owner, link owner, uid)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.other_user import OTHER_UID, as_other_user, needs_root, plant, plant_symlink, shared_dir


@needs_root
def test_planted_files_and_links_belong_to_the_other_user(tmp_path: Path) -> None:
    d = shared_dir(tmp_path / "open")
    assert d.stat().st_mode & 0o7777 == 0o1777
    assert plant(d / "f", "x").stat().st_uid == OTHER_UID
    assert os.lstat(plant_symlink(d / "l", "/nonexistent")).st_uid == OTHER_UID
    assert as_other_user(os.getuid) == OTHER_UID
    assert as_other_user(os.getgid) == OTHER_UID
