"""Support for ``benchrun analyze``: options, calls into stats, terminal views."""
