"""The caveats `evaluate` prints and the report lists under "Read this before quoting a
number": each derived from the run's own results, never boilerplate, and each said once
with the diagnosers or faults it concerns.

Each caveat carries an `impact`: how far it moves a number of the headline table
(`evaluate.headline`), in that table's units (an accuracy or a recovery, 0–1) —

* the best oracle probe's lead over the best gold-free diagnoser (what the oracle buys);
* the best gold-free diagnoser's accuracy minus its accuracy without the forced faults
  (a stop the agent did not choose is found from the trace's length);
* how far `trace-rule` or the independence baseline sits above the lower end of a headline
  diagnoser's interval;
* a headline diagnoser's clean-blame rate (how often it names a hop where nothing failed);
* a detectable injection's AUC above 0.5; a reader's accuracy carried by its word table;
* the widest interval half-width among cells with fewer than 10 traces.

Caveats about diagnosers outside the headline, and facts the table already shows (the
retries-off control, what each diagnoser reads), have impact 0. The report shows the five
with the largest impact and folds the rest.
"""

from __future__ import annotations

from collections.abc import Mapping

from cuer_agent.llm.backends import backend_about
from cuer_agent.llm.cache import PARSE_FAILURE_FLAG
from cuer_agent.studies.cuer.report import FLOOR
from cuer_agent.studies.diagnose.summary import beats
from cuer_agent.studies.diagnose.summary_model import DiagnoserSummary
from cuer_agent.studies.evaluate.headline import best_of, family
from cuer_agent.studies.evaluate.summary_model import Caveat, EvaluateResults
from cuer_agent.studies.propagation.summary_model import FaultCell, PropagationResults

Diagnosers = Mapping[str, DiagnoserSummary]

SHOWN = 5
"""Caveats the report and the console show before the fold."""


def caveat(text: str, concerns: list[str] | tuple[str, ...] = (),
           impact: float = 0.0) -> Caveat:
    """A caveat about `concerns` (said once, each named once, in name order) that moves a
    headline number by `impact` (never below 0; rounded to 6 digits)."""
    return Caveat(text=text, concerns=sorted(set(concerns)),
                  impact=round(max(0.0, float(impact)), 6))


def ranked(caveats: list[Caveat]) -> list[Caveat]:
    """By impact, largest first; equal impacts keep the order they were made in."""
    return sorted(caveats, key=lambda c: -c.impact)


def honest_caveats(summary: EvaluateResults, backend: str,
                   constant: dict[str, int] | None = None) -> list[Caveat]:
    """Every caveat a reader needs before quoting a number, ranked (see the module)."""
    diagnosers = summary.diagnosers
    best = best_of(diagnosers, "gold-free", summary.natural.diagnosers)
    oracle = best_of(diagnosers, "oracle probes")
    headline = {n for n in (best, oracle, "trace-rule") if n}
    out = [*_diagnoser_caveats(diagnosers, backend, constant or {}, best, oracle, headline,
                               summary),
           *natural_caveats(summary.natural.diagnosers, best),
           *construction_caveats(summary),
           *_run_caveats(summary, backend)]
    return ranked(out)


NATURAL_CONTROLS = ("chain-rule", "trace-rule", "first-hop", "last-hop")
"""The controls a diagnoser must beat on natural failures (pooled over depths)."""


def natural_caveats(natural: dict[str, DiagnoserSummary], best: str | None) -> list[Caveat]:
    """The best gold-free diagnoser on the agent's own failures, when the lower end of its
    Wilson interval does not lie above the best control's accuracy there: its
    injected-fault figure does not carry over."""
    mine = natural.get(best or "")
    controls = {n: acc for n in NATURAL_CONTROLS
                if n in natural and (acc := natural[n].exact_hop_acc.mean) is not None}
    if best is None or mine is None or mine.exact_hop_acc.mean is None or not controls:
        return []
    top = max(controls, key=lambda n: controls[n])
    if beats(mine.exact_hop_acc.ci, controls[top]):
        return []
    return [Caveat(
        text=(f"On the agent's own failures (natural, labelled from the gold chain) {best} "
              f"scores {mine.exact_hop_acc.mean:.2f} over {mine.n}, not above the control "
              f"{top} ({controls[top]:.2f}): its injected-fault accuracy does not carry over "
              "to failures no one built."),
        concerns=[best, top], impact=0.95)]


def _acc(d: DiagnoserSummary) -> float | None:
    return d.exact_hop_acc.mean


def _not_beating_independence(d: DiagnoserSummary) -> list[str]:
    """The depths where `d` has an accuracy that is not above its independence baseline."""
    return [h for h, cell in d.by_depth.items()
            if cell.acc is not None and cell.beats_independence is False]


def _not_beating_trace_rule(d: DiagnoserSummary) -> list[str]:
    """The depths where `d` has an accuracy that is not above the trace-rule control's
    (none when trace-rule did not run)."""
    return [h for h, cell in d.by_depth.items()
            if cell.acc is not None and cell.beats_trace_rule is False]


def _listing(members: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} (depth {', '.join(depths)})" if depths else name
                     for name, depths in sorted(members.items()))


def _oracle_probe_caveat(diagnosers: Diagnosers, backend: str, best: str | None,
                         oracle: str | None) -> Caveat | None:
    """Oracle probes are upper bounds: how far the best leads the best gold-free
    diagnoser, and which score 1.00 by design."""
    probes = sorted(n for n, d in diagnosers.items() if family(d) == "oracle probes")
    if not probes:
        return None
    lead = ((_acc(diagnosers[oracle]) or 0.0) - (_acc(diagnosers[best]) or 0.0)
            if oracle and best else 0.0)
    exact = sorted(n for n in probes
                   if any(c.acc == 1.0 for c in diagnosers[n].by_depth.values()))
    text = ("Oracle probes are upper bounds, not methods: they re-run hops against a clean "
            "tool (an environment oracle) or judge a repair by the gold answer, which no "
            "deployed user can" + (f"; the best of them ({oracle}) leads the best "
                                   f"gold-free diagnoser ({best}) by {lead:+.2f}"
                                   if oracle and best else "") + ".")
    if exact:
        text += (f" {', '.join(exact)} score 1.00 at some depth: on a deterministic agent "
                 "repairing the injected hop restores the clean run while repairing any "
                 "other leaves the fault in force — exact by design here")
        text += (f", and the {backend} backend is deterministic: a sampling model would "
                 "not give the probe the same run twice."
                 if backend_about(backend).rule_based else ".")
    return caveat(text, probes, lead)


def _trace_rule_caveats(diagnosers: Diagnosers, headline: set[str]) -> list[Caveat]:
    """The headline diagnosers that do not beat the trace-rule control at some depth, one
    caveat each, then the other gold-free ones in one."""
    out = []
    rule = diagnosers["trace-rule"].by_depth if "trace-rule" in diagnosers else {}
    for name in sorted(headline - {"trace-rule"}):
        d = diagnosers.get(name)
        if d is None:
            continue
        gaps = {h: rule_acc - c.ci[0] for h, c in d.by_depth.items()
                if c.ci is not None and h in rule and (rule_acc := rule[h].acc) is not None}
        behind = _not_beating_trace_rule(d)
        if behind and gaps:
            out.append(caveat(f"{name} does not beat the trace-rule control (what the agent's "
                              f"own trace says) at depth {', '.join(behind)}.", [name],
                              max(gaps[h] for h in behind)))
    behind_rule = {n: _not_beating_trace_rule(d) for n, d in diagnosers.items()
                   if family(d) == "gold-free" and n not in headline}
    behind_rule = {n: h for n, h in behind_rule.items() if h}
    if behind_rule:
        out.append(caveat("Gold-free diagnosers that do not beat the trace-rule control (what "
                          "the agent's own trace says) at some depth: "
                          f"{_listing(behind_rule)}.", list(behind_rule)))
    return out


def _diagnoser_caveats(diagnosers: Diagnosers, backend: str, constant: dict[str, int],
                       best: str | None, oracle: str | None, headline: set[str],
                       summary: EvaluateResults) -> list[Caveat]:
    out = []
    probe_caveat = _oracle_probe_caveat(diagnosers, backend, best, oracle)
    if probe_caveat is not None:
        out.append(probe_caveat)
    forced = {f for f, per in summary.agentic.faults.items()
              if any(c.forced for c in per.values())}
    if best and forced:
        out.append(_forced_caveat(best, diagnosers[best], forced))
    out += _trace_rule_caveats(diagnosers, headline)
    behind_ind = {n: _not_beating_independence(d) for n, d in diagnosers.items()}
    behind_ind = {n: h for n, h in behind_ind.items() if h}
    if behind_ind:
        shortfalls = [c.independence - c.ci[0]
                      for n in behind_ind if n in headline
                      for c in diagnosers[n].by_depth.values()
                      if c.ci is not None and c.beats_independence is False]
        out.append(caveat("Not above their independence baseline (their own blame histogram, "
                          "blind to the truth: the lower end of the Wilson interval is not "
                          f"above it): {_listing(behind_ind)}.", list(behind_ind),
                          max(shortfalls, default=0.0)))
    blamers = {n: rate for n, d in diagnosers.items()
               if (rate := d.clean_blame_rate) is not None and rate >= 0.5
               and family(d) != "controls"}  # a control names a hop by design
    if blamers:
        listed = "; ".join(f"{n} {r:.0%}" for n, r in sorted(blamers.items()))
        out.append(caveat("Name a hop on at least half of the clean, correct, unfaulted runs, "
                          f"where there is nothing to find: {listed} — a hop they name is no "
                          "sign that the run failed.", list(blamers),
                          max((r for n, r in blamers.items() if n in headline), default=0.0)))
    if constant:
        listed = "; ".join(f"{n} (the answer level, hop 0)" if hop == 0 else f"{n} (hop {hop})"
                           for n, hop in sorted(constant.items()))
        out.append(caveat("Name one hop for (almost) every trace — a constant guess, not "
                          f"localisation, whatever their accuracy at that depth: {listed}.",
                          list(constant),
                          max((_acc(diagnosers[n]) or 0.0 for n in constant
                               if n in headline and n in diagnosers), default=0.0)))
    stand_ins = {n: d.stand_in for n, d in diagnosers.items() if d.stand_in}
    if stand_ins:
        out.append(caveat("Rule-based stand-ins, not the method they are named after: "
                          + "; ".join(f"{n} — {why}" for n, why in sorted(stand_ins.items()))
                          + ".", list(stand_ins)))
    gold = sorted(n for n, d in diagnosers.items() if d.uses_gold)
    if gold:
        out.append(caveat(f"Read the gold answer (declared), so not deployable: "
                          f"{', '.join(gold)}.", gold))
    return out


def _forced_caveat(name: str, d: DiagnoserSummary, forced: set[str]) -> Caveat:
    """How much of the best gold-free diagnoser's pooled accuracy the forced faults carry."""
    cells = [(f, c.acc, c.n) for f, per in d.by_fault_depth.items()
             for c in per.values() if c.acc is not None and c.n]
    total = sum(n for _, _, n in cells)
    right = sum(acc * n for _, acc, n in cells)
    rest = [(acc, n) for f, acc, n in cells if f not in forced]
    rest_n = sum(n for _, n in rest)
    without = sum(acc * n for acc, n in rest) / rest_n if rest_n else None
    pooled = right / total if total else None
    if pooled is None or without is None:
        return caveat(f"{', '.join(sorted(forced))}: a stop the agent did not choose.",
                      sorted(forced))
    return caveat(f"{name}'s pooled accuracy {pooled:.2f} includes {', '.join(sorted(forced))} "
                  "(a stop the agent did not choose, visible in the trace's length); without "
                  f"it, {without:.2f}.", [name, *sorted(forced)], pooled - without)


def _run_caveats(summary: EvaluateResults, backend: str) -> list[Caveat]:
    """The backend, the single-shot floor, request errors, recovery and small cells."""
    out = []
    if backend_about(backend).rule_based:
        out.append(caveat(f"The backend is the {backend} reader: a deterministic rule-based "
                          "stand-in, not a language model; its failures are systematic."))
    first = summary.single_shot.conditions.get("original")
    original = None if first is None else first.correctness.mean
    if original is not None and original < FLOOR:
        out.append(caveat(f"The single-shot baseline answers {original:.0%} correctly, so its "
                          "CUE-R deltas on correctness sit near a floor; grounding and D still "
                          "move."))
    rate = summary.ledger.parse_failure_rate
    if rate > PARSE_FAILURE_FLAG:
        worst = max(summary.ledger.by_skill.items(), key=lambda kv: kv[1].parse_failure_rate)
        out.append(caveat(
            f"{rate:.0%} of the studies' skill replies failed to parse (over "
            f"{PARSE_FAILURE_FLAG:.0%}; most often {worst[0]}: "
            f"{worst[1].parse_failure_rate:.0%}): a run that ends in a parse failure is "
            "neither recovered nor failed and is never diagnosed, so these traces measure "
            "the model's output format as much as the agent (per skill: the ledger).",
            impact=rate))
    errors = summary.ledger.errors
    if errors:
        clean_n = summary.agentic.clean.n
        out.append(caveat(
            f"{errors} trace(s) stopped early because a request to the model server still "
            "failed after every retry (their `error` field in traces.jsonl says why). An "
            "injected run among them, or one that ended in a parse failure, is neither "
            "recovered nor failed: it is counted apart and never diagnosed. Rerunning the same "
            "command redoes the examples they belong to.",
            impact=errors / clean_n if clean_n else 0.0))
    agentic = summary.agentic
    recovery = recovery_notes(agentic)
    if recovery:
        out.append(caveat("Recovery, pooled over hops (the table shows it per hop beside the "
                          "retries-off control): " + " ".join(recovery),
                          list(agentic.faults)))
    small = {f: [h for h, c in per.items() if c.descriptive_only]
             for f, per in agentic.faults.items()}
    small = {f: h for f, h in small.items() if h}
    if small:
        widths = [(c.ci[1] - c.ci[0]) / 2 for f, per in agentic.faults.items()
                  for h, c in per.items() if h in small.get(f, []) and c.ci is not None]
        out.append(caveat("Fewer than 10 injections — those recovery cells are descriptive "
                          "only: " + "; ".join(f"{f} at hop {', '.join(h)}"
                                               for f, h in sorted(small.items())) + ".",
                          list(small), max(widths, default=0.0)))
    return out


def recovery_notes(agentic: PropagationResults) -> list[str]:
    """Per fault, what the run itself shows: how many injections changed hop h, how many
    VERIFY flagged, recovery with the agent's retries and without them (the control), and
    where the fault never reached the agent; and what the fault persistence implies."""
    notes = []
    persistence = agentic.persistence
    if persistence == "hop":
        notes.append("Fault persistence is `hop`: every retrieval at the faulted hop meets "
                     "the fault, so recovery is impossible by design and its figures measure "
                     "nothing but that.")
    elif persistence == "once":
        notes.append("Fault persistence is `once`: a fault is a one-shot state edit, so a "
                     "retry of the same query meets a clean retriever and a regenerating probe "
                     "restores the clean run — both by construction.")
    elif persistence == "query":
        notes.append("Fault persistence is `query`: a retrieval fault returns its faulty "
                     "result only for the faulted sub-query's words, so any reformulated "
                     "retry escapes it by construction.")
    for fault, per_hop in agentic.faults.items():
        cells = [c for c in per_hop.values() if c.injected]
        if not cells:
            continue
        if any(c.forced for c in cells):
            rec = sum(c.recovered for c in cells)
            inj = sum(c.injected for c in cells)
            notes.append(f"{fault} is forced: {rec} of {inj} answers were still right after a "
                         "stop the agent did not choose — not a recovery of its own.")
            continue
        notes.append(_fault_note(fault, cells))
    return notes


def _fault_note(fault: str, cells: list[FaultCell]) -> str:
    injected = sum(c.injected for c in cells)
    effective = sum(c.effective for c in cells)
    flagged = sum(c.verify_detected for c in cells)
    saved = sum(c.recovered_effective for c in cells)
    controls = [c.control for c in cells if c.control is not None]
    never = sum(c.first_hit.never for c in cells)
    text = (f"{fault}: {effective} of {injected} injections changed hop h's first attempt"
            + (f" ({never} never reached the agent)" if never else "")
            + f"; VERIFY flagged {flagged} of those; {saved} ended right")
    if controls:
        n = sum(c.n for c in controls)
        without = sum(c.recovered for c in controls)
        text += (f", {without} of the same {n} without retries — the retry "
                 + (f"saved {saved - without}" if saved > without else
                    f"lost {without - saved}" if without > saved else "changed nothing"))
    return text + "."


def construction_caveats(summary: EvaluateResults) -> list[Caveat]:
    """Which figures could follow from construction: detectable injections, VERIFY's
    rates, the reader's dependence on its word table."""
    out = []
    positional = set(summary.invisibility.positional)
    for fault, cell in summary.invisibility.faults.items():
        if not cell.detectable:
            continue
        top = cell.top_feature
        where = (" — by where the retriever placed them, not by what they say: an item that "
                 "enters a ranked list because another left takes its place from the scores, "
                 "which follows from how the fault changes the list" if top in positional
                 else "")
        auc = cell.auc
        out.append(caveat(f"{fault}: a classifier tells its injected items from real ones (AUC "
                          f"{auc:.2f}, independent {cell.auc_independent or 0:.2f}; best "
                          f"single feature {top}){where}.", [fault],
                          (auc or 0.5) - 0.5))
    verify = summary.verify
    alarm = verify.false_alarm.rate
    if alarm is not None:
        caught = ", ".join(f"{f} {c.rate:.2f}" for f, c in verify.detection.items()
                           if c.rate is not None)
        detected = (f"and, of the effective injections' faulted hops: {caught}" if caught
                    else "and no injection took effect to measure its detection")
        out.append(caveat(f"VERIFY flags {alarm:.1%} of clean hops (false alarms) {detected}."))
    reader = summary.reader
    plain = reader.without_relation_table
    if plain is not None and reader.accuracy is not None:
        carried = reader.accuracy - (plain.accuracy or 0.0)
        out.append(caveat(f"The reader's clean accuracy is {reader.accuracy:.2f} with its "
                          f"relation table and {plain.accuracy:.2f} without it.",
                          impact=carried))
    return out
