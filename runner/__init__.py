"""benchrun runner: everything that touches processes, files, the machine and the user.

See docs/design.md ("Data flow of benchrun run"). ``runner`` calls ``stats``; never the
other way round.
"""

import os
import sys

#: the version when benchrun runs from a source tree that is not installed
SOURCE_VERSION = "0.0.0+source"


def _dist_info_version(name: str, paths: list[str]) -> str | None:
    """The ``Version:`` of the first ``NAME-*.dist-info/METADATA`` found in ``paths``
    (sys.path order, the order ``importlib.metadata`` searches), or None.

    A directory listing and one small read: ``importlib.metadata`` answers the same
    question but its import alone took 25-70 ms of every ``benchrun run``'s start-up
    (docs/loop.md "Startup")."""
    prefix = name + "-"
    for entry in paths:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for item in sorted(names):
            if not (item.startswith(prefix) and item.endswith(".dist-info")):
                continue
            try:
                with open(os.path.join(entry or ".", item, "METADATA"), encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break  # the headers end at the first empty line
            except OSError:
                continue
    return None


def _version() -> str:
    found = _dist_info_version("benchrun", sys.path)
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("benchrun")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return SOURCE_VERSION


__version__ = _version()
