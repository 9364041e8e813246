"""Single-shot CUE-R: one evidence item removed, replaced or duplicated, and the effect on
correctness, grounding, confidence error and trace divergence."""
