"""Results of a stored campaign: per-workload estimates, baselines, comparison headlines."""
