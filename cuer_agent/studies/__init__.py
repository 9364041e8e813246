"""The studies, a room each: `cuer` (single-shot CUE-R), `propagation` (faults injected
per hop, the agent re-executing the suffix), `diagnose` (the diagnosers scored against
the certified hop) and `evaluate` (the three together, with the headline and the
caveats). Each room holds its runner, its summary, its cells (the summary's typed model)
and its report section; `_common` holds what they share. `schemas` and `replay` stand
above the rooms. A room imports `_common` and the rooms below it, never one above."""
