"""benchrun runner: everything that touches processes, files, the machine and the user.

See docs/design.md ("Data flow of benchrun run"). ``runner`` calls ``stats``; never the
other way round.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("benchrun")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
