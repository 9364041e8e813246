"""The report's section on natural failures: the clean runs that ended wrong, labelled
from the data set's gold chain (`cuer_agent.studies.natural`), and every diagnoser scored
on them beside the controls it must beat."""

from __future__ import annotations

from cuer_agent.interventions.repairs import REPAIRS, RepairAbout, reads_gold, repair_names
from cuer_agent.report._format import ci, mean_ci, num
from cuer_agent.report._render import Block, Heading, Para, Table
from cuer_agent.studies._common.summary_model import hop_key
from cuer_agent.studies.diagnose.summary import beats
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.evaluate.caveats import NATURAL_CONTROLS
from cuer_agent.studies.natural.summary import NaturalCounts, NaturalSummary

DASH = "—"


def counts_text(counts: NaturalCounts) -> str:
    """One paragraph: what was labelled, how, and what was left out."""
    left = "; ".join(f"{n} {reason}" for reason, n in counts.unlabelled.items())
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.by_kind.items())
    hops = ", ".join(f"hop {h}: {n}" for h, n in counts.by_hop.items())
    return (f"Clean runs: {counts.clean_runs}; correct {counts.correct}; natural failures "
            f"{counts.failed}, of which the rule `{counts.rule}` placed {counts.labelled}"
            + (f" ({counts.labelled_share:.0%})" if counts.labelled_share is not None else "")
            + (f"; not placed: {left}" if left else "")
            + (f"; not scored (request error or parse failure): {counts.not_scored}"
               if counts.not_scored else "")
            + (f". By kind: {kinds}. First-error hop: {hops} (0: the answer step; n+1: "
               "stopped early)." if kinds else ".")
            + (f" Cascades (two or more wrong hops): {counts.cascades} of {counts.labelled}"
               f" ({counts.cascade_share:.0%})." if counts.cascade_share is not None
               and counts.cascades is not None else ""))


def _beats(d: DiagnoserSummary, control: DiagnoserSummary | None) -> str:
    """Whether the lower end of d's pooled Wilson interval lies above the control's."""
    if control is None or control.exact_hop_acc.mean is None or d.exact_hop_acc.ci is None:
        return DASH
    return "yes" if beats(d.exact_hop_acc.ci, control.exact_hop_acc.mean) else "no"


def accuracy_table(part: NaturalSummary) -> Table:
    """Diagnoser × depth on natural failures, pooled with its interval, clean blame, and
    whether it beats each control pooled."""
    diagnosers = part.diagnosers
    depths = sorted({h for d in diagnosers.values() for h in d.by_depth}, key=hop_key)
    controls = [c for c in NATURAL_CONTROLS if c in diagnosers]
    rows = []
    for name, d in diagnosers.items():
        cells = [DASH if (c := d.by_depth.get(h)) is None or c.acc is None
                 else f"{num(c.acc, 2)} ({c.n})" for h in depths]
        rows.append((name + (" (constant)" if d.constant else ""), str(d.n),
                     num(d.exact_hop_acc.mean, 2), ci(d.exact_hop_acc.ci, 2) or DASH,
                     mean_ci(d.balanced, 2), mean_ci(d.kappa, 2),
                     DASH if d.wrong_hop_acc is None else num(d.wrong_hop_acc.mean, 2), *cells,
                     num(d.clean_blame_rate, 2), num(d.stage_acc.mean, 2),
                     *(DASH if c == name else _beats(d, diagnosers[c]) for c in controls)))
    return Table(caption="Exact-hop accuracy on natural failures (the agent's own wrong "
                         "answers, labelled from the gold chain), pooled and by first-error "
                         "hop",
                 headers=("diagnoser", "failed n", "pooled acc", "95% CI (Wilson)",
                          "balanced acc", "κ", "names a wrong hop", *(f"hop {h}" for h in depths),
                          "clean blame",
                          "stage acc",
                          *(f"beats {c}" for c in controls)),
                 rows=tuple(rows),
                 footnote=("Balanced acc: the mean of the per-hop accuracies over the hops "
                           "with 5 failures or more; κ: Cohen's κ against the labels (an "
                           "abstention a category of its own): a constant scores 1/k and 0 on "
                           "them, so they are where a diagnoser shows it read something; "
                           "(constant): it names one hop on 90 % of the failures or more. "
                           "Names a wrong hop: the hop it names is one the gold-chain walk "
                           "calls wrong (any of a cascade's), or the first error. "
                           "Cells: accuracy (failures at that hop). Hop 0: every gold step was "
                           "found and the answer still wrong; n+1: the agent stopped with "
                           "steps left. A constant hop is perfect at its own depth, so the "
                           "comparison is pooled: beats X — the lower end of the diagnoser's "
                           "Wilson interval lies above X's pooled accuracy. Clean blame: share "
                           "of the correct clean runs on which it names a hop. Stage acc: no "
                           "diagnoser names the stage `read` (their stages are retrieval, "
                           "tool, answer), so stage accuracy on read failures is 0 by "
                           "construction."))


def kind_table(part: NaturalSummary) -> Table | None:
    """Diagnoser × kind of natural failure: exact-hop accuracy (n)."""
    kinds = sorted({k for d in part.diagnosers.values() for k in d.by_fault})
    if not kinds:
        return None
    rows = tuple((name, *(DASH if (c := d.by_fault.get(k)) is None or c.acc is None
                          else f"{num(c.acc, 2)} ({c.n})" for k in kinds))
                 for name, d in part.diagnosers.items())
    return Table(caption="Exact-hop accuracy on natural failures by kind (the rule's stage)",
                 headers=("diagnoser", *(k.removeprefix("natural/") for k in kinds)),
                 rows=rows)


def repair_table(part: NaturalSummary) -> Table:
    """Probe × what its repairs did on the natural failures."""
    rows = []
    for name, o in (part.probes or {}).items():
        fixed = "; ".join(f"{repair} " + ", ".join(f"hop {h}: {n}" for h, n in hops.items())
                          for repair, hops in o.fixed_by.items()) or DASH
        rows.append((name, str(o.probed), fixed, str(o.one_more_hop),
                     f"{o.no_repair_fixes} ({num(o.no_repair_share, 2)})", str(o.not_probed),
                     num(o.calls_per_failure, 1)))
    return Table(caption="Repairs on natural failures: which repair at which hop made the "
                         "run right",
                 headers=("probe", "probed", "fixed by (repair: hop)", "one more hop",
                          "no single-hop repair fixes (share)", "not probed",
                          "calls per failure"),
                 rows=tuple(rows),
                 footnote=("Each probe tries the repairs the agent allows at hops 1.., the "
                           f"first that makes the run right is blamed: {_repairs()}. "
                           "Right: by the gold answer for frozen-hop and suffix-regen (an "
                           "answer oracle), by the agent's own verification and confidence "
                           "for the -free variants. No repair fixes it: the probe abstains."))


def _repairs() -> str:
    """Each registered repair with what it does (and "a gold oracle" where it reads gold)."""
    return ", ".join(f"{name} ({REPAIRS.about(name, RepairAbout).help}"
                     f"{': a gold oracle' if reads_gold(name) else ''})"
                     for name in repair_names())


def natural(part: NaturalSummary) -> list[Block]:
    """The section: counts, the accuracy table, the kind table, what did not run."""
    blocks: list[Block] = [
        Heading(2, "Natural failures: wrong answers no one designed"),
        Para("Every clean run that ended wrong is a failure nobody designed. Its first-error "
             "hop is placed by walking the agent's findings along the data set's gold chain "
             "(MuSiQue decomposition, 2Wiki evidences, the synthetic fact chain); no "
             "diagnoser reads that chain. Injected faults are the stress test beside this "
             "yardstick. The files `natural/spans.jsonl` (OpenInference) and "
             "`natural/labels.jsonl` let any tool score itself on the same failures "
             "(`cuer-agent diagnose --traces natural/spans.jsonl --labels "
             "natural/labels.jsonl`)."),
        Para(counts_text(part.counts))]
    if not part.diagnosers:
        return [*blocks, Para("Not run: this summary has no diagnosers on natural failures, "
                              "so there is nothing to score here.")]
    blocks.append(accuracy_table(part))
    if (kinds := kind_table(part)) is not None:
        blocks.append(kinds)
    if part.probes:
        blocks.append(repair_table(part))
    if part.not_run:
        blocks.append(Para("Not run on natural failures: " + "; ".join(
            sorted({f"{reason} ({', '.join(n for n, r in part.not_run.items() if r == reason)})"
                    for reason in part.not_run.values()})) + "."))
    return blocks
