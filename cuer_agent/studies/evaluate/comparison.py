"""Single-shot CUE-R next to the agentic per-hop analysis, example by example.

Both analyses ask which evidence item mattered; they answer from different systems:

* **single-shot** — CUE-R's REMOVE of its target item in a single-shot run: on the whole
  question (the paper's system), or (`cuer.questions = "per_hop"`) on each hop's gold
  sub-question as its own single-shot call. An item is *flagged* when removing it breaks
  that run's answer (Δcorrectness > 0).
* **agentic** — REMOVE of hop h's target inside the agent, which then re-executes (and
  may retry the hop): Δcorrectness of the *final* answer per hop. The **critical hop** is
  the hop whose REMOVE hurts most; when several hurt as much it is a **tie** (`tied_hops`),
  reported as such and never broken to the earliest hop; none when no REMOVE hurts.

Only examples whose clean agentic run was right are compared (a wrong clean run has no
evidence whose removal could hurt it). Per example the summary puts the single-shot
targets next to the critical hop's item, and counts:

* `points_at_critical` — over the examples with one critical hop, the single-shot
  analysis flags that hop's item (by title); `independent_share` beside it is what flags
  independent of the hop would score: the share of all compared hops' items that the
  single-shot analysis flags;
* `flags_recovered` — single-shot flags on items whose agentic REMOVE did not hurt (the
  agent recovered): importance that step-level analysis reports and the agent does not
  show.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import NotRequired

from pydantic import TypeAdapter
from typing_extensions import TypedDict  # typing's has no pydantic schema on 3.11

from cuer_agent._json import JsonRow
from cuer_agent.metrics.stats import wilson_interval
from cuer_agent.studies.evaluate.summary_model import Comparison, ComparisonExample, Removal


class _Record(TypedDict):
    """What the comparison reads of an intervention record."""

    example_id: str
    condition: str
    hop: NotRequired[int]
    target_titles: NotRequired[list[str]]


class _RecordRow(TypedDict):
    """What the comparison reads of a row of `records.jsonl` (CUE-R's or the agent's)."""

    record: _Record
    metrics: dict[str, float] | None


_RECORD_ROWS = TypeAdapter(list[_RecordRow])


def _parent(example_id: str) -> tuple[str, int | None]:
    """`syn-0-3#h2` → ("syn-0-3", 2); a whole-question id → (id, None)."""
    head, sep, hop = example_id.rpartition("#h")
    return (head, int(hop)) if sep and hop.isdigit() else (example_id, None)


def _removals(records: list[_RecordRow], base: str, removal: str, metric: str,
              unit: Callable[[_Record], tuple[str, int | None]]) -> dict[str, list[Removal]]:
    """Per example: each REMOVE's hop (per `unit`), target title and Δ of `metric` against
    the same run's `base` condition."""
    before = {r["record"]["example_id"]: metrics[metric] for r in records
              if r["record"]["condition"] == base and (metrics := r["metrics"]) is not None}
    out: dict[str, list[Removal]] = defaultdict(list)
    for r in records:
        rec, metrics = r["record"], r["metrics"]
        if rec["condition"] != removal or metrics is None:
            continue
        example, hop = unit(rec)
        delta = before.get(rec["example_id"], 0.0) - metrics[metric]
        out[example].append(Removal(hop=hop, target=(rec.get("target_titles") or [""])[0],
                                    delta=round(delta, 6)))
    return out


def _agentic_hop(rec: _Record) -> tuple[str, int | None]:
    return rec["example_id"], int(rec["hop"])


def compare_analyses(single_records: Sequence[JsonRow],
                     agentic_records: Sequence[JsonRow]) -> Comparison:
    """The per-example comparison and its counts (see the module docstring), from the
    rows of the single-shot and the agentic `records.jsonl`."""
    agentic_rows = _RECORD_ROWS.validate_python(agentic_records)
    single = _removals(_RECORD_ROWS.validate_python(single_records), "original", "remove",
                       "correctness", lambda rec: _parent(rec["example_id"]))
    agentic = _removals(agentic_rows, "clean", "hop_remove", "correct", _agentic_hop)
    right = {r["record"]["example_id"] for r in agentic_rows
             if r["record"]["condition"] == "clean" and r["metrics"] is not None
             and r["metrics"]["correct"]}
    rows: list[ComparisonExample] = []
    unique = pointed = flags = recovered_flags = ties = hop_items = hop_items_flagged = 0
    for example_id in sorted(set(single) & set(agentic) & right):
        per_hop = sorted(agentic[example_id], key=lambda c: c.hop or 0)
        hurting = [c for c in per_hop if c.delta > 0]
        worst = max((c.delta for c in hurting), default=None)
        tied = [c for c in hurting if c.delta == worst]
        critical = tied[0] if len(tied) == 1 else None
        ties += len(tied) > 1
        flagged = {s.target for s in single[example_id] if s.delta > 0}
        harmless = {c.target for c in per_hop if c.delta <= 0}
        flags += len(flagged)
        recovered_flags += len(flagged & harmless)
        hop_items += len(per_hop)
        hop_items_flagged += sum(c.target in flagged for c in per_hop)
        points = None
        if critical is not None:
            unique += 1
            points = critical.target in flagged
            pointed += points
        rows.append(ComparisonExample(
            example_id=example_id,
            single_shot=sorted(single[example_id], key=lambda s: (s.hop is None, s.hop or 0)),
            critical_hop=critical.hop if critical else None,
            tied_hops=[c.hop for c in tied if c.hop is not None] if len(tied) > 1 else [],
            critical_item=critical.target if critical else None,
            critical_delta=worst, points_at_critical=points))
    critical_hops = sorted({r.critical_hop for r in rows if r.critical_hop is not None})
    return Comparison(
        n=len(rows), with_critical_hop=unique, ties=ties, points_at_critical=pointed,
        points_at_critical_share=round(pointed / unique, 6) if unique else None,
        points_at_critical_ci=wilson_interval(pointed, unique) if unique else None,
        independent_share=(round(hop_items_flagged / hop_items, 6) if hop_items else None),
        single_shot_flags=flags, flags_recovered=recovered_flags,
        flags_recovered_share=round(recovered_flags / flags, 6) if flags else None,
        critical_hops={str(h): sum(1 for r in rows if r.critical_hop == h)
                       for h in critical_hops},
        examples=rows)
