"""The studies: data statistics, single-shot CUE-R, per-hop propagation."""
