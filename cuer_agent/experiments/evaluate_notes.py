"""The caveats `evaluate` prints and the report lists under "Read this before quoting a
number": each derived from the run's own results, never boilerplate."""

from __future__ import annotations

from typing import Any

from cuer_agent.experiments.cuer_report import FLOOR


def honest_notes(summary: dict[str, Any], backend: str,
                 constant: dict[str, int] | None = None) -> list[str]:
    """Caveats a reader needs before quoting a number, derived from the results."""
    notes = []
    for name, hop in sorted((constant or {}).items()):
        if hop == 0:
            notes.append(f"{name} names the answer level (hop 0) for (almost) every trace: "
                         "it localises no hop at all.")
            continue
        notes.append(f"{name} names hop {hop} for (almost) every trace, so its accuracy at "
                     f"depth {hop} (up to 1.0) is a constant guess, not localisation.")
    if backend == "extractive":
        notes.append("The backend is the extractive reader: a deterministic rule-based "
                     "stand-in, not a language model. Its failures are systematic, so a "
                     "probe that re-executes the same agent sees exactly the same behaviour "
                     "— counterfactual diagnosers can look far better than they would "
                     "against a sampling LLM.")
    for name, d in summary.get("diagnosers", {}).items():
        acc = (d.get("exact_hop_acc") or {}).get("mean")
        perfect = [h for h, cell in (d.get("by_depth") or {}).items() if cell.get("acc") == 1.0]
        if d.get("probing") and name not in (constant or {}) and perfect:
            where = ("overall" if acc is not None and acc >= 0.999
                     else f"at depth {', '.join(perfect)}")
            notes.append(f"{name} scores 1.00 {where}: on a deterministic agent, repairing the "
                         "injected hop restores the clean run, while repairing any other hop "
                         "leaves the fault in force — the probe is exact by design here, "
                         "which says nothing of how it would fare against a sampling model.")
        if d.get("stand_in"):
            notes.append(f"{name} is a {d['stand_in']}.")
        if d.get("uses_gold"):
            notes.append(f"{name} reads the gold answer (declared); it is not a deployable "
                         "gold-free diagnoser.")
        if d.get("uses_gold_oracle"):
            notes.append(f"{name} decides that a repair fixes the run by comparing with the "
                         "gold answer (its probe's oracle, declared); its gold-free "
                         "counterpart decides from the agent's own verification.")
        blame = d.get("clean_blame_rate")
        if blame is not None and blame >= 0.5:
            notes.append(f"{name} names a hop on {blame:.0%} of clean, correct, unfaulted runs, "
                         "where there is nothing to find: much of its accuracy is a base rate.")
        behind = [h for h, cell in (d.get("by_depth") or {}).items()
                  if cell.get("acc") is not None and not cell.get("beats_independence")]
        if behind:
            notes.append(f"{name} does not beat its independence baseline (its own blame "
                         f"histogram, blind to the truth) at depth {', '.join(behind)}.")
    original = (summary.get("single_shot", {}).get("conditions", {}).get("original", {})
                .get("correctness", {}).get("mean"))
    if original is not None and original < FLOOR:
        notes.append(f"The single-shot baseline answers {original:.0%} correctly: one BM25 "
                     "retrieval with the whole question rarely reaches the later hops' "
                     "passages (the synthetic world is built that way), so its CUE-R deltas on "
                     "correctness are zero by floor effect; grounding and D still move.")
    errors = summary.get("ledger", {}).get("errors")
    if errors:
        notes.append(f"{errors} trace(s) stopped early because a request to the model server "
                     "still failed after every retry (their `error` field in traces.jsonl says "
                     "why). An injected run among them, or one that ended in a parse failure, "
                     "is neither recovered nor failed: it is counted apart (`errors` per fault "
                     "and hop) and never diagnosed. Rerunning the same command redoes the "
                     "examples they belong to (the server may be back).")
    ours = not (summary.get("config", {}).get("agent") or {}).get("factory")
    notes += recovery_notes(summary.get("agentic", {}), backend, ours=ours)
    faults = summary.get("agentic", {}).get("faults", {})
    for fault, per_hop in faults.items():
        small = [h for h, cell in per_hop.items() if cell.get("descriptive_only")]
        if small:
            notes.append(f"{fault}: fewer than 10 injections at hop(s) {', '.join(small)} "
                         "— those recovery cells are descriptive only.")
    return notes


RECOVERY_EXPLAINED: dict[tuple[str, int], str] = {
    ("early_termination", 0): "a forced stop leaves nothing to retry: `answer` answers from the "
                              "hops taken, and for a chain question no earlier hop's finding is "
                              "the answer",
    ("query_drift", 1): "VERIFY's relevance check finds the drifted hop's evidence is about an "
                        "entity the question never names, and the planner's retry re-derives the "
                        "sub-query from its own history; the drift corrupted the first attempt "
                        "only",
    ("false_premise", 1): "the extractive reader takes no fact from a negated sentence, so the "
                          "passage cannot mislead it; VERIFY only marks the hop contested and "
                          "the retry (or the contested finding itself) carries on",
    ("empty_retrieval", 1): "VERIFY always notices an empty hop, and any reformulated sub-query "
                            "escapes a fault keyed to the faulted one",
    ("irrelevant_evidence", 1): "VERIFY's relevance check notices evidence about other entities, "
                                "and any reformulated sub-query escapes the fault",
    ("stale_evidence", 1): "VERIFY finds two passages about one entity disagreeing, and the "
                           "retry's clean retrieval has only the current one",
    ("content_tampering", 0): "the corrupted span is consistent across the hop's evidence, so "
                              "VERIFY has nothing to notice and the agent follows it",
}
"""Which part of the extractive agent makes a fault's recovery 0 or 1 at every depth."""


EXTREME = 0.05
"""A recovery within this of 0 or 1 at every depth is explained, not just reported."""


def recovery_notes(agentic: dict[str, Any], backend: str, *, ours: bool = True) -> list[str]:
    """Explain every fault whose recovery is (within `EXTREME` of) 0 or 1 at every depth
    (the explanations are of cuer-agent's own agent: `ours`), and count ineffective
    injections where they exceed a fifth of a fault's injections."""
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
    for fault, per_hop in (agentic.get("faults") or {}).items():
        if any(cell.get("forced") for cell in per_hop.values()):
            notes.append(f"{fault} is forced: its 'recovery' is the share of answers that "
                         "survive a stop the agent did not choose, not a recovery of its own.")
        rates = [cell["recovery"] for cell in per_hop.values()
                 if cell.get("injected") and cell.get("recovery") is not None]
        for end in (0, 1):
            if rates and all(abs(rate - end) <= EXTREME for rate in rates):
                low, high = min(rates), max(rates)
                span = f"{low:.0%}" if low == high else f"{low:.0%}–{high:.0%}"
                why = (RECOVERY_EXPLAINED.get((fault, end))
                       if ours and backend == "extractive" and persistence == "query"
                       else None)
                notes.append(f"{fault} recovers {span} at every depth"
                             + (f": {why}." if why else
                                " (a property of this agent under this persistence, not a "
                                "measured tendency)."))
        injected = sum(cell.get("injected", 0) for cell in per_hop.values())
        ineffective = sum(cell.get("ineffective", 0) for cell in per_hop.values())
        if injected and ineffective > 0.2 * injected:
            notes.append(f"{fault}: {ineffective} of {injected} injections were ineffective "
                         "(hop h selected, found and verified what it did in the clean run: "
                         "the injected item ranked where the reader never read it, or it "
                         "concerned a fact the hop did not use); recovery over the effective "
                         "ones is reported beside the overall figure.")
    return notes
