"""Summary of the fault-propagation study, from `records.jsonl` (and traces for the
stage transitions) alone: the same rows give the same bytes.

* `faults` — per fault and hop: injected, recovered (correct after re-execution),
  failed, recovery(h) = recovered / injected with its Wilson interval (`ci`),
  `descriptive_only` when fewer than 10 were injected; `retried`; `effective` /
  `ineffective` (did hop h's first attempt find or select something else?) and recovery
  over the effective injections only (`recovery_effective`, its interval), next to the
  `control` (the same effective injections with the agent's retries off); how many of
  them VERIFY flagged (`verify_detected`); where the fault first reached the agent
  (`first_hit`: at hop h, later, never); recovery by the redundancy of the faulted fact
  (`by_redundancy`); `errors` — forks that ended in a request error or a parse failure,
  counted apart from every other figure (neither recovered nor failed); `forced` on
  early termination, whose "recovery" is the share of answers that survive a stop the
  agent did not choose; `persistence` says how long faults held;
* `verify` — VERIFY's rates: the share of hops of the clean runs whose first attempt it
  flagged (false alarms: nothing was wrong), and per fault the share of effective
  injections whose faulted first attempt it flagged (detection);
* `tampering` — per hop: resisted / absorbed / derailed and query contamination;
  `tampering_certification` — the share of eligible hops where a span could be
  certified (and why not);
* `hop_operators` — per-hop REMOVE / REPLACE / DUPLICATE: Δcorrectness and D (the
  multi-hop D and the plain CUE-R D);
* `stage_transitions` — how a failed injection shows downstream: a networkx graph whose
  nodes are (hops after the fault, support status, finding same/changed vs the clean
  run) and whose edge weights count traces;
* `prefix_calls` — skill calls spent on the prefix by any fork (must be 0).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import SupportsFloat

import networkx as nx
import numpy as np

from cuer_agent.config import PropagationConfig
from cuer_agent.interventions import get_fault
from cuer_agent.metrics.stats import MIN_CELL, bootstrap_ci, wilson_interval
from cuer_agent.studies._common.summary_model import Interval, MeanCI, Skipped
from cuer_agent.studies.propagation.rows import ForkMetrics, RecordRow, TraceRow
from cuer_agent.studies.propagation.summary_model import (
    CleanRuns,
    ControlCell,
    FaultCell,
    FirstHit,
    HopOperatorCell,
    PrefixCalls,
    PropagationResults,
    RedundancyCell,
    Share,
    StageTransitions,
    TamperingCell,
    TamperingCertification,
    Transition,
    VerifyRates,
)
from cuer_agent.trace import HopData


def _r(x: SupportsFloat) -> float:
    return round(float(x), 6)


def _ci(values: list[float], config: PropagationConfig) -> Interval | None:
    if not values:
        return None
    lo, hi = bootstrap_ci(values, n_resamples=config.bootstrap_resamples,
                          seed=config.bootstrap_seed)
    return _r(lo), _r(hi)


def _by(rows: Sequence[RecordRow],
        condition_filter: Callable[[str], bool]) -> dict[str, dict[int, list[RecordRow]]]:
    out: dict[str, dict[int, list[RecordRow]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        rec = row["record"]
        if condition_filter(rec["condition"]):
            out[rec["condition"]][int(rec.get("hop", 0))].append(row)
    return out


def ran_ok(row: RecordRow) -> bool:
    """An applied intervention whose fork ended normally (no request error, no parse
    failure): only those count as recovered or failed."""
    return row["metrics"] is not None and row.get("status", "ok") == "ok"


def _metrics(rows: Sequence[RecordRow]) -> list[ForkMetrics]:
    """The metrics of the rows that have them (applied interventions)."""
    return [m for r in rows if (m := r["metrics"]) is not None]


def _wilson(successes: int, n: int) -> Interval | None:
    return wilson_interval(successes, n) if n else None


def _share(hits: int, n: int) -> Share:
    return Share(n=n, hits=hits, rate=_r(hits / n) if n else None, ci=_wilson(hits, n))


def _control(effective: list[ForkMetrics]) -> ControlCell | None:
    """Recovery of the same effective injections with the agent's retries off."""
    controls = [(m["control_correct"], m.get("control_same_run", 0.0))
                for m in effective if "control_correct" in m]
    if not controls:
        return None
    recovered = int(sum(correct for correct, _ in controls))
    return ControlCell(n=len(controls), recovered=recovered,
                       recovery=_r(recovered / len(controls)),
                       ci=_wilson(recovered, len(controls)),
                       same_run=int(sum(same for _, same in controls)))


def _first_hit(metrics: list[ForkMetrics], hop: int) -> FirstHit:
    hits = [int(m.get("first_hit", hop)) for m in metrics]
    return FirstHit(at_h=sum(h == hop for h in hits), later=sum(h > hop for h in hits),
                    never=sum(h < 0 for h in hits))


def _by_redundancy(items: list[RecordRow]) -> dict[str, RedundancyCell]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in items:
        redundancy = r["record"].get("params", {}).get("redundancy")
        metrics = r["metrics"]
        if redundancy is not None and metrics is not None and metrics.get("effective", 1.0):
            out[str(redundancy)].append(metrics["correct"])
    return {k: RedundancyCell(n=len(v), recovered=int(sum(v)),
                              ci=_wilson(int(sum(v)), len(v)))
            for k, v in sorted(out.items())}


def _fault_cell(fault: str, hop: int, items: list[RecordRow]) -> FaultCell:
    ok = [r for r in items if ran_ok(r)]
    metrics = _metrics(ok)
    errors = sum(1 for r in items if r["metrics"] is not None and not ran_ok(r))
    recovered = int(sum(m["correct"] for m in metrics))
    effective = [m for m in metrics if m.get("effective", 1.0)]
    saved = int(sum(m["correct"] for m in effective))
    # early termination forces the agent's stop: its cell says so
    forced = {"forced": True} if get_fault(fault).boundary == "read" else {}
    return FaultCell(
        injected=len(metrics), recovered=recovered, failed=len(metrics) - recovered,
        recovery=_r(recovered / len(metrics)) if metrics else None,
        ci=_wilson(recovered, len(metrics)),
        descriptive_only=len(metrics) < MIN_CELL,
        retried=int(sum(m.get("retried", 0.0) for m in metrics)),
        effective=len(effective), ineffective=len(metrics) - len(effective),
        recovered_effective=saved,
        recovery_effective=_r(saved / len(effective)) if effective else None,
        recovery_effective_ci=_wilson(saved, len(effective)),
        control=_control(effective),
        verify_detected=int(sum(m.get("verify_fired", 0.0) for m in effective)),
        first_hit=_first_hit(metrics, hop),
        by_redundancy=_by_redundancy(ok),
        errors=errors, **forced)


def fault_table(rows: Sequence[RecordRow],
                faults: tuple[str, ...]) -> dict[str, dict[str, FaultCell]]:
    grouped = _by(rows, lambda c: c in faults)
    return {fault: {str(hop): _fault_cell(fault, hop, items)
                    for hop, items in sorted(grouped.get(fault, {}).items())}
            for fault in faults}


def verify_rates(rows: Sequence[RecordRow], faults: tuple[str, ...]) -> VerifyRates:
    """VERIFY's false alarms on the clean runs' hops, and its detection per fault on the
    effective injections' faulted first attempts (early termination has no hop h)."""
    clean = [fired for r in rows if r["record"]["condition"] == "clean"
             and r.get("status", "ok") == "ok" for fired in r.get("verify", [])]
    detection = {}
    for fault in faults:
        if get_fault(fault).boundary == "read":
            continue
        effective = [m for m in _metrics([r for r in rows if r["record"]["condition"] == fault
                                          and ran_ok(r)])
                     if m.get("effective", 1.0)]
        detection[fault] = _share(int(sum(m.get("verify_fired", 0.0) for m in effective)),
                                  len(effective))
    return VerifyRates(false_alarm=_share(int(sum(clean)), len(clean)), detection=detection)


def skipped(rows: Sequence[RecordRow]) -> Skipped:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        rec = row["record"]
        reason = rec.get("skipped")
        if row["metrics"] is None and rec["condition"] not in {"done"} and reason:
            out[rec["condition"]][reason] += 1
    return {c: dict(sorted(v.items())) for c, v in sorted(out.items())}


def tampering_table(rows: Sequence[RecordRow]
                    ) -> tuple[dict[str, TamperingCell], TamperingCertification]:
    """(per hop outcomes, certification counts)."""
    grouped = _by(rows, lambda c: c == "content_tampering").get("content_tampering", {})
    per_hop: dict[str, TamperingCell] = {}
    eligible = certified = 0
    reasons: Counter[str] = Counter()
    for hop, items in sorted(grouped.items()):
        applied = [r for r in items if ran_ok(r)]
        outcomes = Counter(r.get("tampering") for r in applied)
        per_hop[str(hop)] = TamperingCell(
            injected=len(applied),
            resisted=outcomes["resisted"], absorbed=outcomes["absorbed"],
            derailed=outcomes["derailed"],
            contaminated=sum(bool(r.get("contaminated")) for r in applied),
            strategies=dict(sorted(Counter(str(r["record"].get("certificate", {})["strategy"])
                                           for r in applied).items())))
        for r in items:
            why = r["record"].get("skipped", "")
            if why.startswith("clean "):  # not eligible at this hop
                continue
            eligible += 1
            if r["metrics"] is not None:
                certified += 1
            else:
                reasons[why] += 1
    certification = TamperingCertification(
        eligible=eligible, certified=certified,
        certified_share=_r(certified / eligible) if eligible else None,
        not_certified=dict(sorted(reasons.items())))
    return per_hop, certification


def _mean_ci(values: list[float], config: PropagationConfig) -> MeanCI:
    return MeanCI(mean=_r(np.mean(values)) if values else None, ci=_ci(values, config))


def operator_table(rows: Sequence[RecordRow],
                   config: PropagationConfig) -> dict[str, dict[str, HopOperatorCell]]:
    clean = {r["record"]["example_id"]: m for r in rows
             if r["record"]["condition"] == "clean" and (m := r["metrics"]) is not None}
    grouped = _by(rows, lambda c: c.startswith("hop_"))
    out: dict[str, dict[str, HopOperatorCell]] = {}
    for condition, by_hop in sorted(grouped.items()):
        out[condition.removeprefix("hop_")] = {}
        for hop, items in sorted(by_hop.items()):
            # (clean run, counterfactual) of each applied operator
            pairs = [(clean[r["record"]["example_id"]], m) for r in items
                     if ran_ok(r) and (m := r["metrics"]) is not None]
            # Δ = U(clean) − U(counterfactual); confidence error's utility is −CE.
            d_plain = [m["divergence_cuer"] for _, m in pairs]
            out[condition.removeprefix("hop_")][str(hop)] = HopOperatorCell(
                n=len(pairs),
                delta_correctness=_mean_ci([c["correct"] - m["correct"] for c, m in pairs],
                                           config),
                delta_grounding=_mean_ci([c["grounding"] - m["grounding"] for c, m in pairs],
                                         config),
                delta_confidence_error=_mean_ci(
                    [-1 * (c["confidence_error"] - m["confidence_error"]) for c, m in pairs],
                    config),
                divergence=_mean_ci([m["divergence"] for _, m in pairs], config),
                divergence_cuer=_r(np.mean(d_plain)) if d_plain else None)
    return out


def _hop_state(hop: HopData, clean_hop: HopData | None) -> str:
    same = clean_hop is not None and hop.get("finding") == clean_hop.get("finding")
    return f"{hop.get('support')}/{'same' if same else 'changed'}"


def stage_transitions(trace_rows: Sequence[TraceRow], record_rows: Sequence[RecordRow],
                      faults: tuple[str, ...]) -> dict[str, StageTransitions]:
    """For each fault, a graph of observable hop states after the injected hop, over the
    injected runs that still failed, exported as weighted edges."""
    failed = {r["record"]["record_id"] for r in record_rows
              if ran_ok(r) and r["record"]["condition"] in faults
              and (m := r["metrics"]) is not None and not m["correct"]}
    clean = {r["record"]["example_id"]: r["trace"] for r in trace_rows
             if r["record"]["condition"] == "clean"}
    graphs: dict[str, nx.DiGraph[str]] = {f: nx.DiGraph() for f in faults}
    for row in trace_rows:
        rec = row["record"]
        if rec["record_id"] not in failed:
            continue
        graph, h = graphs[rec["condition"]], int(rec.get("hop", 0))
        clean_hops = clean[rec["example_id"]]["hops"]
        previous = "injected"
        for hop in row["trace"]["hops"][h - 1:]:
            k = hop["hop"]
            clean_hop = clean_hops[k - 1] if k <= len(clean_hops) else None
            node = f"+{k - h}:{_hop_state(hop, clean_hop)}"
            _bump(graph, previous, node)
            previous = node
        _bump(graph, previous, "answer:wrong")
    out = {}
    for f, g in graphs.items():
        edges: list[tuple[str, str, int]] = sorted(g.edges(data="weight"))
        out[f] = StageTransitions(
            traces=sum(w for _, v, w in edges if v == "answer:wrong"),
            edges=[Transition.model_validate({"from": u, "to": v, "count": w})
                   for u, v, w in edges])
    return out


def _bump(graph: nx.DiGraph[str], u: str, v: str) -> None:
    weight = graph.get_edge_data(u, v, {"weight": 0})["weight"]
    graph.add_edge(u, v, weight=weight + 1)


def summarize_propagation(record_rows: Sequence[RecordRow], trace_rows: Sequence[TraceRow],
                          config: PropagationConfig) -> PropagationResults:
    clean_metrics = _metrics([r for r in record_rows if r["record"]["condition"] == "clean"])
    correct = [m["correct"] for m in clean_metrics]
    clean_hops = [h for r in trace_rows if r["record"]["condition"] == "clean"
                  for h in r["trace"]["hops"]]
    hops_used = Counter(int(m["hops"]) for m in clean_metrics)
    tampering, certification = tampering_table(record_rows)
    prefix = [m["prefix_calls"] for m in _metrics(record_rows) if "prefix_calls" in m]
    return PropagationResults(
        persistence=config.fault_persistence,
        clean=CleanRuns(n=len(clean_metrics),
                        accuracy=_r(np.mean(correct)) if correct else None,
                        accuracy_ci=_ci(correct, config),
                        hops_used={str(k): v for k, v in sorted(hops_used.items())},
                        hops=len(clean_hops),
                        retried_hops=sum(1 for h in clean_hops if h.get("attempts"))),
        faults=fault_table(record_rows, config.faults),
        tampering=tampering,
        tampering_certification=certification,
        hop_operators=operator_table(record_rows, config) if config.hop_operators else {},
        skipped=skipped(record_rows),
        prefix_calls=PrefixCalls(forks=len(prefix), total=int(sum(prefix)),
                                 max=int(max(prefix, default=0))),
        stage_transitions=stage_transitions(trace_rows, record_rows, config.faults))
