"""Sub-commands of ``benchrun``: one module each, each exposing ``register(subparsers)``."""
