"""runner/safefs.py and runner/files.py: which directories and files benchrun trusts, played
with a second user (``nobody``); owners and modes are what the kernel reports (os.stat)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrun.runner.files import atomic_write_text
from benchrun.runner.safefs import (
    UnsafePath,
    open_dir,
    open_file,
    read_trusted,
)
from tests.other_user import OTHER_UID, as_other_user, needs_root, plant, plant_symlink, shared_dir


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky directory every user may write, reachable by the other user."""
    d = shared_dir(Path(tempfile.mkdtemp(prefix="benchrun-shared-", dir="/tmp")))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _dir_of(fd: int) -> os.stat_result:
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def test_missing_directories_are_made_0700_whatever_the_umask(
    tmp_path: Path, umask_000: None
) -> None:
    st = _dir_of(open_dir(tmp_path / "a" / "b" / "c", create=True))
    assert st.st_ino == os.stat(tmp_path / "a" / "b" / "c").st_ino
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3


def test_a_symlink_in_a_directory_of_ours_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    (tmp_path / "abs").symlink_to(tmp_path / "real")
    real = os.stat(tmp_path / "real").st_ino
    assert _dir_of(open_dir(tmp_path / "link")).st_ino == real
    assert _dir_of(open_dir(tmp_path / "abs" / ".." / "link")).st_ino == real
    # ".." after a symlink is the parent of its target, as the kernel has it
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "real" / "up").symlink_to(tmp_path / "deep" / "er")
    deep = os.stat(tmp_path / "deep").st_ino
    assert _dir_of(open_dir(tmp_path / "real" / "up" / "..")).st_ino == deep
    assert os.stat(tmp_path / "real" / "up" / "..").st_ino == deep


@needs_root
def test_a_symlink_another_user_planted_in_a_shared_directory_is_refused(
    shared: Path, tmp_path: Path
) -> None:
    target = tmp_path / "root-only"
    target.mkdir()
    plant_symlink(shared / "results", target)
    with pytest.raises(UnsafePath, match=f"symbolic link \\(owned by uid {OTHER_UID}\\)"):
        open_dir(shared / "results" / "campaign", create=True)
    assert not (target / "campaign").exists()


@needs_root
def test_our_own_symlink_in_a_sticky_directory_is_followed(shared: Path, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (shared / "mine").symlink_to(tmp_path / "real")  # root's: only root may replace it
    assert _dir_of(open_dir(shared / "mine")).st_ino == os.stat(tmp_path / "real").st_ino


@needs_root
def test_a_directory_of_another_user_is_refused_but_may_receive_a_rename(
    shared: Path,
) -> None:
    def make() -> None:
        (shared / "hers").mkdir(mode=0o755)

    as_other_user(make)
    with pytest.raises(UnsafePath, match=f"belongs to uid {OTHER_UID}"):
        open_dir(shared / "hers")
    os.close(open_dir(shared / "hers", check=False))


def test_a_directory_others_may_write_is_refused_unless_sticky(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    with pytest.raises(UnsafePath, match="writable by other users \\(mode 0777"):
        open_dir(d)
    d.chmod(0o1777)
    os.close(open_dir(d))


def _upg_user() -> tuple[int, int] | None:
    """A non-root user with a private group (named like it, no other member), if any."""
    for user in pwd.getpwall():
        try:
            group = grp.getgrgid(user.pw_gid)
        except KeyError:
            continue
        if user.pw_uid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}:
            return user.pw_uid, user.pw_gid
    return None


@needs_root
def test_group_write_is_trusted_only_for_a_users_private_group(shared: Path) -> None:
    d = shared / "umask002"
    d.mkdir()
    d.chmod(0o775)  # root's group: never private, its members could swap our files
    with pytest.raises(UnsafePath, match="writable by other users \\(mode 0775"):
        open_dir(d)
    upg = _upg_user()
    if upg is None:
        pytest.skip("no user with a private group here")
    uid, gid = upg
    os.chown(d, uid, gid)

    def opens() -> str:
        try:
            os.close(open_dir(d))
        except UnsafePath as exc:
            return exc.reason
        return "ok"

    assert as_other_user(opens, uid=uid, gid=gid) == "ok"  # umask 002 with per-user groups
    os.chown(d, uid, OTHER_UID)  # the same bits for a group of other users
    assert "writable by other users" in as_other_user(opens, uid=uid, gid=gid)


def test_a_file_where_a_directory_should_be_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(UnsafePath, match="f: not a directory"):
        open_dir(tmp_path / "f" / "sub", create=True)


def test_open_file_creates_0600_and_never_truncates(tmp_path: Path, umask_000: None) -> None:
    dir_fd = open_dir(tmp_path)
    try:
        fd = open_file(dir_fd, "lock", tmp_path / "lock", write=True, create=True)
        os.write(fd, b"123")
        os.close(fd)
        assert _mode(tmp_path / "lock") == 0o600
        os.close(open_file(dir_fd, "lock", tmp_path / "lock", write=True, create=True))
        assert (tmp_path / "lock").read_bytes() == b"123"
    finally:
        os.close(dir_fd)


@needs_root
@pytest.mark.parametrize("kind", ["symlink", "other user", "hard link", "fifo", "0666"])
def test_open_file_refuses_what_another_user_could_have_planted(
    shared: Path, tmp_path: Path, kind: str
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    secret.chmod(0o600)
    name = shared / "f"
    expected = {
        "symlink": "a symbolic link",
        "other user": f"owned by uid {OTHER_UID}",
        "hard link": "2 hard links",
        "fifo": "not a regular file",
        "0666": "writable by other users \\(mode 0666",
    }[kind]
    if kind == "symlink":
        plant_symlink(name, secret)
    elif kind == "other user":
        plant(name, "hers")
    elif kind == "hard link":
        os.link(secret, name)
    elif kind == "fifo":
        os.mkfifo(name)
    else:
        name.write_text("x")
        name.chmod(0o666)
    dir_fd = open_dir(shared)
    try:
        with pytest.raises(UnsafePath, match=expected):
            open_file(dir_fd, "f", name, write=True, create=True)
    finally:
        os.close(dir_fd)
    assert secret.read_text() == "root's\n"


def test_read_trusted_reads_at_most_the_limit(tmp_path: Path) -> None:
    (tmp_path / "r").write_bytes(b"x" * 10)
    assert read_trusted(tmp_path / "r", 10) == b"x" * 10
    with pytest.raises(UnsafePath, match="longer than 9 bytes"):
        read_trusted(tmp_path / "r", 9)
    with pytest.raises(FileNotFoundError):
        read_trusted(tmp_path / "missing", 9)


def test_atomic_write_sets_the_mode_whatever_the_umask(tmp_path: Path, umask_000: None) -> None:
    atomic_write_text(tmp_path / "new" / "status.json", "{}")
    atomic_write_text(tmp_path / "report.html", "<p>", mode=0o644)
    assert _mode(tmp_path / "new") == 0o700
    assert _mode(tmp_path / "new" / "status.json") == 0o600
    assert _mode(tmp_path / "report.html") == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "report.html"]


@needs_root
def test_atomic_write_replaces_a_planted_symlink_instead_of_following_it(
    shared: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root's\n")
    plant_symlink(shared / "report.html", secret)
    atomic_write_text(shared / "report.html", "<p>report</p>", mode=0o644)
    assert secret.read_text() == "root's\n"
    st = os.lstat(shared / "report.html")
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0
    assert (shared / "report.html").read_text() == "<p>report</p>"
