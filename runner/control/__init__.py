"""From stored rounds to decisions: the collector (steady state, subsessions), pairing, the controller."""
