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
        if d.get("uses_environment_oracle"):
            notes.append(f"{name} re-runs hops against a clean tool (an environment oracle, "
                         "declared): it can call where the fault is not, which no deployed "
                         "user can; its accuracy is an upper bound, not a method.")
        if not d.get("uses_gold") and not d.get("uses_gold_oracle") and name != "trace-rule":
            behind_rule = [h for h, cell in (d.get("by_depth") or {}).items()
                           if cell.get("beats_trace_rule") is False]
            if behind_rule:
                notes.append(f"{name} does not beat the trace-rule control (what the agent's "
                             f"own trace says) at depth {', '.join(behind_rule)}.")
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
        notes.append(f"The single-shot baseline answers {original:.0%} correctly, so its "
                     "CUE-R deltas on correctness sit near a floor; grounding and D still "
                     "move.")
    notes += construction_notes(summary)
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


def recovery_notes(agentic: dict[str, Any], backend: str, *, ours: bool = True) -> list[str]:
    """Per fault, what the run itself shows: how many injections changed hop h, how many
    VERIFY flagged, recovery with the agent's retries and without them (the control), and
    where the fault never reached the agent. Nothing is fixed text about the agent: every
    figure comes from the run (`ours` is kept for callers; the notes hold for any agent)."""
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
    return text + " (pooled over hops)."


def construction_notes(summary: dict[str, Any]) -> list[str]:
    """Which figures could follow from construction: detectable injections, VERIFY's
    rates, the reader's dependence on its word table."""
    notes = []
    invisible = summary.get("invisibility") or {}
    positional = set(invisible.get("positional") or ())
    for fault, cell in (invisible.get("faults") or {}).items():
        if not cell.get("detectable"):
            continue
        top = cell.get("top_feature")
        where = (" — by where the retriever placed them, not by what they say: an item that "
                 "enters a ranked list because another left (or that the retriever ranks "
                 "itself) takes its place from the scores, which follows from how the fault "
                 "changes the list" if top in positional else "")
        notes.append(f"{fault}: a classifier tells its injected items from real ones (AUC "
                     f"{cell.get('auc')}, independent {cell.get('auc_independent')}; best single "
                     f"feature {top}){where}.")
    verify = summary.get("verify") or {}
    alarm = (verify.get("false_alarm") or {}).get("rate")
    if alarm is not None:
        caught = ", ".join(f"{f} {c['rate']:.2f}" for f, c in (verify.get("detection") or {})
                           .items() if c.get("rate") is not None)
        notes.append(f"VERIFY flags {alarm:.1%} of clean hops (false alarms) and, of the "
                     f"effective injections' faulted hops: {caught}.")
    reader = summary.get("reader") or {}
    plain = reader.get("without_relation_table")
    if isinstance(plain, dict) and reader.get("accuracy") is not None:
        notes.append(f"The reader's clean accuracy is {reader['accuracy']:.2f} with its "
                     f"relation table and {plain['accuracy']:.2f} without it.")
    return notes
