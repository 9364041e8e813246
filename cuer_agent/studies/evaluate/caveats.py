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

from typing import Any

from cuer_agent.llm.backends import backend_about
from cuer_agent.studies.cuer.report import FLOOR
from cuer_agent.studies.evaluate.headline import best_of, family

SHOWN = 5
"""Caveats the report and the console show before the fold."""


def caveat(text: str, concerns: list[str] | tuple[str, ...] = (),
           impact: float = 0.0) -> dict[str, Any]:
    return {"text": text, "concerns": sorted(set(concerns)),
            "impact": round(max(0.0, float(impact)), 6)}


def ranked(caveats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """By impact, largest first; equal impacts keep the order they were made in."""
    return sorted(caveats, key=lambda c: -c["impact"])


def honest_caveats(summary: dict[str, Any], backend: str,
                   constant: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Every caveat a reader needs before quoting a number, ranked (see the module)."""
    diagnosers = {n: d for n, d in (summary.get("diagnosers") or {}).items()
                  if isinstance(d, dict)}
    best = best_of(diagnosers, "gold-free")
    oracle = best_of(diagnosers, "oracle probes")
    headline = {n for n in (best, oracle, "trace-rule") if n}
    out = [*_diagnoser_caveats(diagnosers, backend, constant or {}, best, oracle, headline,
                               summary),
           *construction_caveats(summary),
           *_run_caveats(summary, backend)]
    return ranked(out)


def _acc(d: dict[str, Any]) -> float | None:
    value = (d.get("exact_hop_acc") or {}).get("mean")
    return None if value is None else float(value)


def _depths(d: dict[str, Any], key: str) -> list[str]:
    return [h for h, cell in (d.get("by_depth") or {}).items()
            if cell.get("acc") is not None and cell.get(key) is False]


def _listing(members: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} (depth {', '.join(depths)})" if depths else name
                     for name, depths in sorted(members.items()))


def _diagnoser_caveats(diagnosers: dict[str, Any], backend: str, constant: dict[str, int],
                       best: str | None, oracle: str | None, headline: set[str],
                       summary: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    probes = sorted(n for n, d in diagnosers.items() if family(d) == "oracle probes")
    if probes:
        lead = ((_acc(diagnosers[oracle]) or 0.0) - (_acc(diagnosers[best]) or 0.0)
                if oracle and best else 0.0)
        exact = sorted(n for n in probes if any(c.get("acc") == 1.0 for c in
                                                (diagnosers[n].get("by_depth") or {}).values()))
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
        out.append(caveat(text, probes, lead))
    forced = {f for f, per in ((summary.get("agentic") or {}).get("faults") or {}).items()
              if any((c or {}).get("forced") for c in per.values())}
    if best and forced:
        out.append(_forced_caveat(best, diagnosers[best], forced))
    for name in sorted(headline - {"trace-rule"}):
        d = diagnosers.get(name)
        if d is None:
            continue
        rule = (diagnosers.get("trace-rule") or {}).get("by_depth") or {}
        gaps = {h: float(rule[h]["acc"]) - float(c["ci"][0])
                for h, c in (d.get("by_depth") or {}).items()
                if c.get("ci") and (rule.get(h) or {}).get("acc") is not None}
        behind = [h for h in _depths(d, "beats_trace_rule")]
        if behind and gaps:
            out.append(caveat(f"{name} does not beat the trace-rule control (what the agent's "
                              f"own trace says) at depth {', '.join(behind)}.", [name],
                              max(gaps[h] for h in behind)))
    behind_rule = {n: _depths(d, "beats_trace_rule") for n, d in diagnosers.items()
                   if family(d) == "gold-free" and n not in headline}
    behind_rule = {n: h for n, h in behind_rule.items() if h}
    if behind_rule:
        out.append(caveat("Gold-free diagnosers that do not beat the trace-rule control (what "
                          "the agent's own trace says) at some depth: "
                          f"{_listing(behind_rule)}.", list(behind_rule)))
    behind_ind = {n: _depths(d, "beats_independence") for n, d in diagnosers.items()}
    behind_ind = {n: h for n, h in behind_ind.items() if h}
    if behind_ind:
        shortfalls = [float(c["independence"]) - float(c["ci"][0])
                for n in behind_ind if n in headline
                for c in (diagnosers[n].get("by_depth") or {}).values()
                if c.get("ci") and c.get("independence") is not None
                and c.get("beats_independence") is False]
        out.append(caveat("Not above their independence baseline (their own blame histogram, "
                          "blind to the truth: the lower end of the Wilson interval is not "
                          f"above it): {_listing(behind_ind)}.", list(behind_ind),
                          max(shortfalls, default=0.0)))
    blamers = {n: float(d["clean_blame_rate"]) for n, d in diagnosers.items()
               if d.get("clean_blame_rate") is not None and d["clean_blame_rate"] >= 0.5
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
    stand_ins = {n: d["stand_in"] for n, d in diagnosers.items() if d.get("stand_in")}
    if stand_ins:
        out.append(caveat("Rule-based stand-ins, not the method they are named after: "
                          + "; ".join(f"{n} — {why}" for n, why in sorted(stand_ins.items()))
                          + ".", list(stand_ins)))
    gold = sorted(n for n, d in diagnosers.items() if d.get("uses_gold"))
    if gold:
        out.append(caveat(f"Read the gold answer (declared), so not deployable: "
                          f"{', '.join(gold)}.", gold))
    return out


def _forced_caveat(name: str, d: dict[str, Any], forced: set[str]) -> dict[str, Any]:
    """How much of the best gold-free diagnoser's pooled accuracy the forced faults carry."""
    cells = [(f, c) for f, per in (d.get("by_fault_depth") or {}).items()
             for c in per.values() if c.get("acc") is not None and c.get("n")]
    total = sum(c["n"] for _, c in cells)
    right = sum(c["acc"] * c["n"] for _, c in cells)
    rest = [(f, c) for f, c in cells if f not in forced]
    rest_n = sum(c["n"] for _, c in rest)
    without = sum(c["acc"] * c["n"] for _, c in rest) / rest_n if rest_n else None
    pooled = right / total if total else None
    if pooled is None or without is None:
        return caveat(f"{', '.join(sorted(forced))}: a stop the agent did not choose.",
                      sorted(forced))
    return caveat(f"{name}'s pooled accuracy {pooled:.2f} includes {', '.join(sorted(forced))} "
                  "(a stop the agent did not choose, visible in the trace's length); without "
                  f"it, {without:.2f}.", [name, *sorted(forced)], pooled - without)


def _run_caveats(summary: dict[str, Any], backend: str) -> list[dict[str, Any]]:
    """The backend, the single-shot floor, request errors, recovery and small cells."""
    out = []
    if backend_about(backend).rule_based:
        out.append(caveat(f"The backend is the {backend} reader: a deterministic rule-based "
                          "stand-in, not a language model; its failures are systematic."))
    original = (summary.get("single_shot", {}).get("conditions", {}).get("original", {})
                .get("correctness", {}).get("mean"))
    if original is not None and original < FLOOR:
        out.append(caveat(f"The single-shot baseline answers {original:.0%} correctly, so its "
                          "CUE-R deltas on correctness sit near a floor; grounding and D still "
                          "move."))
    errors = summary.get("ledger", {}).get("errors")
    if errors:
        clean_n = (summary.get("agentic", {}).get("clean") or {}).get("n") or 0
        out.append(caveat(
            f"{errors} trace(s) stopped early because a request to the model server still "
            "failed after every retry (their `error` field in traces.jsonl says why). An "
            "injected run among them, or one that ended in a parse failure, is neither "
            "recovered nor failed: it is counted apart and never diagnosed. Rerunning the same "
            "command redoes the examples they belong to.",
            impact=errors / clean_n if clean_n else 0.0))
    agentic = summary.get("agentic", {})
    recovery = recovery_notes(agentic)
    if recovery:
        out.append(caveat("Recovery, pooled over hops (the table shows it per hop beside the "
                          "retries-off control): " + " ".join(recovery),
                          list(agentic.get("faults") or {})))
    small = {f: [h for h, c in per.items() if c.get("descriptive_only")]
             for f, per in (agentic.get("faults") or {}).items()}
    small = {f: h for f, h in small.items() if h}
    if small:
        widths = [(c["ci"][1] - c["ci"][0]) / 2 for f, per in agentic["faults"].items()
                  for h, c in per.items() if h in small.get(f, []) and c.get("ci")]
        out.append(caveat("Fewer than 10 injections — those recovery cells are descriptive "
                          "only: " + "; ".join(f"{f} at hop {', '.join(h)}"
                                               for f, h in sorted(small.items())) + ".",
                          list(small), max(widths, default=0.0)))
    return out


def recovery_notes(agentic: dict[str, Any]) -> list[str]:
    """Per fault, what the run itself shows: how many injections changed hop h, how many
    VERIFY flagged, recovery with the agent's retries and without them (the control), and
    where the fault never reached the agent; and what the fault persistence implies."""
    notes = []
    persistence = agentic.get("persistence")
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
    for fault, per_hop in (agentic.get("faults") or {}).items():
        cells = [c for c in per_hop.values() if c.get("injected")]
        if not cells:
            continue
        if any(c.get("forced") for c in cells):
            rec = sum(c.get("recovered", 0) for c in cells)
            inj = sum(c["injected"] for c in cells)
            notes.append(f"{fault} is forced: {rec} of {inj} answers were still right after a "
                         "stop the agent did not choose — not a recovery of its own.")
            continue
        notes.append(_fault_note(fault, cells))
    return notes


def _fault_note(fault: str, cells: list[dict[str, Any]]) -> str:
    injected = sum(c["injected"] for c in cells)
    effective = sum(c.get("effective", 0) for c in cells)
    flagged = sum(c.get("verify_detected", 0) for c in cells)
    saved = sum(c.get("recovered_effective", 0) for c in cells)
    controls = [c["control"] for c in cells if isinstance(c.get("control"), dict)]
    never = sum((c.get("first_hit") or {}).get("never", 0) for c in cells)
    text = (f"{fault}: {effective} of {injected} injections changed hop h's first attempt"
            + (f" ({never} never reached the agent)" if never else "")
            + f"; VERIFY flagged {flagged} of those; {saved} ended right")
    if controls:
        n = sum(c["n"] for c in controls)
        without = sum(c["recovered"] for c in controls)
        text += (f", {without} of the same {n} without retries — the retry "
                 + (f"saved {saved - without}" if saved > without else
                    f"lost {without - saved}" if without > saved else "changed nothing"))
    return text + "."


def construction_caveats(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Which figures could follow from construction: detectable injections, VERIFY's
    rates, the reader's dependence on its word table."""
    out = []
    invisible = summary.get("invisibility") or {}
    positional = set(invisible.get("positional") or ())
    for fault, cell in (invisible.get("faults") or {}).items():
        if not cell.get("detectable"):
            continue
        top = cell.get("top_feature")
        where = (" — by where the retriever placed them, not by what they say: an item that "
                 "enters a ranked list because another left takes its place from the scores, "
                 "which follows from how the fault changes the list" if top in positional
                 else "")
        auc = cell.get("auc")
        out.append(caveat(f"{fault}: a classifier tells its injected items from real ones (AUC "
                          f"{auc:.2f}, independent {cell.get('auc_independent') or 0:.2f}; best "
                          f"single feature {top}){where}.", [fault],
                          (auc or 0.5) - 0.5))
    verify = summary.get("verify") or {}
    alarm = (verify.get("false_alarm") or {}).get("rate")
    if alarm is not None:
        caught = ", ".join(f"{f} {c['rate']:.2f}" for f, c in (verify.get("detection") or {})
                           .items() if c.get("rate") is not None)
        out.append(caveat(f"VERIFY flags {alarm:.1%} of clean hops (false alarms) and, of the "
                          f"effective injections' faulted hops: {caught}."))
    reader = summary.get("reader") or {}
    plain = reader.get("without_relation_table")
    if isinstance(plain, dict) and reader.get("accuracy") is not None:
        carried = reader["accuracy"] - (plain.get("accuracy") or 0.0)
        out.append(caveat(f"The reader's clean accuracy is {reader['accuracy']:.2f} with its "
                          f"relation table and {plain['accuracy']:.2f} without it.",
                          impact=carried))
    return out
