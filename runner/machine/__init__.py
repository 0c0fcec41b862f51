"""The machine: hardware, software and environment metadata, noise checks, the quiet-machine guard."""
