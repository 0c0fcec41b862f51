"""The terminal: live display and tables."""
