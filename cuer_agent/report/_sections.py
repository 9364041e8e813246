"""The report's sections, each a list of blocks built from one part of the summary. A
part that holds nothing (no condition, no diagnoser, no compared example, no provenance)
gives a section that says it was not run."""

from __future__ import annotations

import json

from cuer_agent.config import StudyConfig
from cuer_agent.llm.backends import backend_about
from cuer_agent.report import (
    _control_tables,
    _diagnoser_tables,
    _ledger,
    _plots,
    _propagation_tables,
    _tables,
)
from cuer_agent.report._format import ci, num
from cuer_agent.report._natural import natural
from cuer_agent.report._render import (
    Block,
    Bullets,
    Code,
    Figure,
    Fold,
    Heading,
    Para,
    Row,
    Table,
)
from cuer_agent.studies.cuer.summary_model import SupportCheck, SuppressedRoles
from cuer_agent.studies.evaluate.caveats import SHOWN
from cuer_agent.studies.evaluate.headline import (
    FAMILIES,
    FIRST_HOP,
    balanced,
    best_of,
    family,
)
from cuer_agent.studies.evaluate.headline import headline as headline_of
from cuer_agent.studies.evaluate.summary_model import Caveat, EvaluateSummary, NoProvenance

NOTES_TITLE = "Read this before quoting a number"


def _not_run(what: str) -> Para:
    return Para(f"Not run: this summary has no {what} part, so there is nothing to report "
                "here.")


def _table(table: Table | None, empty: str) -> Block:
    return table if table is not None else Para(empty)


def _figure(name: str, png: bytes | None, caption: str) -> list[Block]:
    return [Figure(name, png, caption)] if png is not None else []


def backend_facts(config: StudyConfig) -> tuple[str, str | None, str | None]:
    """(backend name, model, base URL) from the run config."""
    backend = config.backend
    return backend.name or "unknown", backend.model, backend.base_url


def _data_facts(config: StudyConfig) -> str:
    data, agent = config.data, config.agent
    text = (data.dataset or "unknown") + (f" ({data.path})" if data.path else "")
    text += f", n = {data.n}" if data.n else ""
    return text + f", hop budget {agent.hops}" + f", top k {agent.k}"


def _agent_facts(config: StudyConfig) -> str:
    factory = config.agent.factory
    if factory:
        return (f"`{factory}` (yours; the single-shot CUE-R baseline is cuer-agent's own "
                "system)")
    return "cuer-agent's retrieve-select-verify agent (graphs/agent.py)"


def headline(summary: EvaluateSummary) -> list[Block]:
    """The first screen: what ran, the headline table beside the exact-hop plot, and the
    caveats that move its numbers most."""
    config = summary.config
    name, model, base_url = backend_facts(config)
    backend = name + (f", model {model}" if model else "") + (f", {base_url}" if base_url
                                                              else "")
    failed = max((d.n for d in summary.diagnosers.values()), default=0)
    blocks: list[Block] = [
        Heading(1, "cuer-agent evaluation report"),
        Para(f"Agent under test: {_agent_facts(config)}. Data: {_data_facts(config)}. "
             f"Backend: {backend}. Single-shot CUE-R: "
             f"{summary.single_shot.n} examples; agentic clean runs: "
             f"{summary.agentic.clean.n}; failed traces each diagnoser diagnosed: {failed}."),
    ]
    if backend_about(name).rule_based:
        blocks.append(Para(f"The backend is the rule-based {name} stand-in, not a "
                           "language model: every number below describes a rule-based reader "
                           "and is not comparable with the papers' LLM results.", strong=True))
    else:
        blocks.append(Para(f"The backend is {name}; the paper columns still come from the "
                           "papers' own models, data and retrievers."))
    blocks.append(Para(result_sentence(summary), strong=True))
    table = _tables.headline(headline_of(summary.diagnosers, summary.agentic,
                                         summary.natural.diagnosers))
    diagnosers = summary.diagnosers
    families = {f: [n for n, d in diagnosers.items() if family(d) == f] for f in FAMILIES}
    plot = _plots.exact_hop_families(diagnosers, families)
    shown: list[Table | Figure] = [table] if table is not None else []
    if plot is not None:
        png, left_out = plot
        shown.append(Figure("exact_hop", png,
                            "Exact-hop accuracy by fault depth, one panel per family (colour: "
                            "family; marker and line: member; grey: the trace-rule and chance "
                            "controls), 95% Wilson intervals"
                            + (f"; not drawn (more members than styles): "
                               f"{', '.join(left_out)}" if left_out else "")))
    if shown:
        blocks.append(Row(tuple(shown)))
    return [*blocks, *notes(summary)]


def result_sentence(summary: EvaluateSummary) -> str:
    """The result in one sentence, before the headline table: recovery after a fault
    beside the same injections with retries off, and the best gold-free diagnoser's
    balanced accuracy beside the constant first-hop's and the best control's (over the
    injected and the natural failures): a figure a control matches is no finding."""
    cells = [c for per_depth in summary.agentic.faults.values() for c in per_depth.values()
             if c.effective and not c.forced]
    recovered = sum(c.recovered_effective for c in cells)
    effective = sum(c.effective for c in cells)
    controls = [c.control for c in cells if c.control is not None and c.control.n]
    parts = []
    if effective:
        parts.append(f"after a fault the agent recovered on {recovered} of {effective} "
                     "effective injections (forced stops left out)"
                     + (f", {sum(c.recovered for c in controls)} of "
                        f"{sum(c.n for c in controls)} with its retries off" if controls
                        else ""))
    natural = summary.natural.diagnosers
    def best(wanted: str) -> tuple[str, float | None] | None:
        name = best_of(summary.diagnosers, wanted, natural)  # as the headline picks it
        return None if name is None else (name, balanced(summary.diagnosers[name],
                                                         natural.get(name)))

    if found := best("gold-free"):
        against = best("controls")
        constant = summary.diagnosers.get(FIRST_HOP)
        prior = balanced(constant, natural.get(FIRST_HOP)) if constant else None
        parts.append(f"the best gold-free diagnoser, {found[0]}, has a balanced accuracy of "
                     f"{num(found[1], 2)} over the depths where failures started"
                     + (f" (first-hop, the constant: {num(prior, 2)})" if constant else "")
                     + (f"; the best control, {against[0]}, {num(against[1], 2)}"
                        if against else ""))
    if not parts:
        return "In short: nothing was injected and no diagnoser was scored."
    return "In short: " + "; ".join(parts) + "."


def notes(summary: EvaluateSummary) -> list[Block]:
    """The evaluate command's caveats: the five that move a headline number most, ranked,
    then the rest behind a fold."""
    caveats = summary.caveats
    if not caveats:
        return [Heading(2, NOTES_TITLE), Para("The evaluate command recorded no caveats.")]
    top, rest = caveats[:SHOWN], caveats[SHOWN:]
    blocks: list[Block] = [
        Heading(2, NOTES_TITLE),
        Para("Ranked by their weight on the table above: how far each moves, or sets "
             "beside, one of its numbers (in its units: accuracy or recovery). Each is said "
             "once, with what it concerns."),
        Bullets(tuple(_caveat_text(c) for c in top))]
    if rest:
        blocks.append(Fold(f"{len(rest)} more caveats, of less weight",
                           tuple(_caveat_text(c) for c in rest)))
    return blocks


def _caveat_text(c: Caveat) -> str:
    return c.text + (f" (weight {c.impact:.2f})" if c.impact >= 0.005 else "")


def single_shot(summary: EvaluateSummary) -> list[Block]:
    """Main CUE-R table with the paper's row, the delta plot, findings and skips."""
    blocks: list[Block] = [Heading(2, "Single-shot CUE-R study")]
    part = summary.single_shot
    if not part.conditions:
        return [*blocks, _not_run("single-shot CUE-R")]
    conditions = part.conditions
    per_hop = part.questions == "per_hop"
    asked = ("each hop's gold sub-question (bridge resolved), one single-shot call per hop — "
             "the system is given the gold decomposition: a single-hop oracle, not the "
             "paper's system" if per_hop
             else "each example's whole question, once, over the example's own pool (on the "
                  "synthetic world: one passage per hop's fact plus lexical confusers, as in "
                  "HotpotQA's distractor setting) — the paper's system")
    blocks += [Para(f"{part.n} questions: the single-shot system (BM25 top k → "
                    f"answer) asked {asked}; run once, then forked after retrieval with one "
                    "evidence item perturbed."),
               _tables.cuer_main(conditions),
               *_figure("cuer_deltas", _plots.cuer_deltas(conditions),
                        "CUE-R deltas per operator and axis, 95% bootstrap CIs"),
               Heading(3, "Findings against the paper's pattern")]
    findings = part.findings
    blocks.append(Bullets(tuple(findings)) if findings else Para("No findings were recorded."))
    skipped = [f"{cond}: {reason} ({count})"
               for cond, reasons in sorted(part.skipped.items())
               for reason, count in sorted(reasons.items())]
    if skipped:
        blocks += [Heading(3, "Skipped conditions"), Bullets(tuple(skipped))]
    return blocks


def roles(summary: EvaluateSummary) -> list[Block]:
    """Item-level role counts (table and bars) and the data-set level verdicts."""
    part = summary.single_shot.roles
    dataset = part.dataset
    blocks: list[Block] = [
        Heading(2, "Evidence-role distribution"),
        Para("Operational labels about behaviour under intervention, not claims about "
             "the model's internals."),
        _tables.roles_items(part.items, part.items_holding, part.n_items),
        *_support_check(part.support_check),
        *_figure("roles", _plots.role_distribution(_tables.role_counts(part.items),
                                                   _tables.ROLE_ORDER),
                 "Evidence-role distribution of the CUE-R targets")]
    if isinstance(dataset, SuppressedRoles):
        blocks.append(Para(f"Data-set level: {dataset.suppressed}"))
    elif dataset is not None:
        labels = ", ".join(dataset.labels) or "none"
        blocks.append(Para(f"Data-set level: primary label {dataset.primary}; "
                           f"labels that hold: {labels}."))
        blocks.append(_tables.roles_verdicts(dataset))
    return blocks


def agentic(summary: EvaluateSummary) -> list[Block]:
    """Clean accuracy, recovery by fault × hop, tampering outcomes by hop."""
    blocks: list[Block] = [Heading(2, "Agentic fault propagation")]
    part = summary.agentic
    clean = part.clean
    hops = ", ".join(f"{h} hop(s): {n}" for h, n in clean.hops_used.items())
    blocks.append(Para(f"Clean runs: n = {clean.n}, accuracy "
                       f"{num(clean.accuracy)} {ci(clean.accuracy_ci)}".rstrip()
                       + (f"; hops used — {hops}" if hops else "")
                       + f"; hops retried after VERIFY — {clean.retried_hops} of {clean.hops}"
                       + "."))
    blocks.append(Para(PERSISTENCE_TEXT[part.persistence]))
    prefix = part.prefix_calls
    blocks.append(Para(f"Skill calls spent re-running prefixes: {prefix.total} "
                       f"over {prefix.forks} forks (must be 0: the suffix is "
                       "re-executed from the saved state)."))
    faults = part.faults
    blocks += [Heading(3, "Recovery that means recovery"),
               _table(_propagation_tables.recovery_effective(faults), "No fault was injected.")]
    by_redundancy = _propagation_tables.redundancy(faults)
    if by_redundancy is not None:
        blocks.append(by_redundancy)
    blocks += [Heading(3, "Recovery by fault and hop, every injection"),
               _table(_propagation_tables.recovery(faults), "No fault was injected."),
               *_figure("recovery", _plots.recovery_by_depth(faults),
                        "Recovery vs fault depth per fault, 95% Wilson intervals")]
    blocks += [Heading(3, "Content tampering"),
               _table(_propagation_tables.tampering(part.tampering), "No tampering was injected.")]
    cert = part.tampering_certification
    reasons = "; ".join(f"{r} ({c})" for r, c in cert.not_certified.items())
    blocks.append(Para(f"Certified {cert.certified} of {cert.eligible} eligible hops "
                       f"(share {num(cert.certified_share, 2)})"
                       + (f"; not certified: {reasons}" if reasons else "") + "."))
    operators = _propagation_tables.hop_operators(part.hop_operators)
    if operators is not None:
        blocks += [Heading(3, "Per-hop CUE-R operators"), operators]
    skipped = [f"{fault}: {reason} — {count} injections"
               for fault, reasons in sorted(part.skipped.items())
               for reason, count in sorted(reasons.items())]
    if skipped:
        blocks += [Heading(3, "Skipped injections"),
                   Para("Counted per injection, one per example and hop: an example skipped "
                        "at every hop of a 3-hop budget counts 3 times."),
                   Bullets(tuple(skipped))]
    return blocks


def _support_check(check: SupportCheck) -> list[Block]:
    """What the check that separates corrective from constructive saw in this run."""
    changed, supported = check.changed, check.supported
    if not changed:
        return []
    text = (f"Corrective needs the answer after REMOVE to be contained in another in-view "
            f"item: of the {changed} items whose REMOVE hurt and changed the answer, "
            f"{supported} were.")
    if supported == changed:
        text += (" The check held for every one of them, so in this run it does not separate "
                 "corrective from constructive: a reader whose answer is always a span of its "
                 "view (as the extractive reader's is) passes it by construction. Read "
                 "corrective here as constructive.")
    return [Para(text)]


PERSISTENCE_TEXT = {
    "corpus": ("How faults hold (persistence `corpus`): a retrieval fault at hop h is a state of "
               "the corpus from hop h on — the passages hop h read its fact from are withheld "
               "(empty and irrelevant evidence; empty also answers the faulted sub-query with "
               "nothing), a passage the world's own generator writes with another value of the "
               "fact is indexed beside the real ones (conflicting and stale evidence), or the "
               "passage is edited in the index (content tampering). Every later search — a "
               "retry, a later hop, a probe's regenerated suffix — is answered by the same "
               "retriever over that corpus, so recovery depends on whether the fact is stated "
               "elsewhere (its redundancy) and on the agent finding it. Query drift and early "
               "termination are faults of the agent's own action: the first attempt's sub-query "
               "at hop h drifts, or the hop budget drops to h−1."),
    "query": ("How faults hold (persistence `query`): a retrieval fault at hop h is a condition "
              "of the retriever — whenever hop h's faulted sub-query is asked again (a retry, a "
              "regenerated suffix, a probe) the same faulty result comes back, as a "
              "deterministic tool would give; a reformulated sub-query gets clean retrieval. "
              "Query drift corrupts the first attempt's sub-query at hop h; early termination "
              "lowers the hop budget to h−1. So recovery takes what a real agent needs: VERIFY "
              "noticing the failure, and a retry that asks differently. Probes run under the "
              "same fault, with only the hop they repair made clean."),
    "hop": ("How faults hold (persistence `hop`): every retrieval (and every sub-query) at hop "
            "h meets the fault, whatever is asked — recovery is impossible by design, so "
            "recovery figures measure nothing but that."),
    "once": ("How faults hold (persistence `once`): the fault is a one-shot edit of the saved "
             "state; nothing holds afterwards, so a retry of the same query meets a clean "
             "retriever and a probe that regenerates the suffix restores the clean run by "
             "construction."),
}


def construction(summary: EvaluateSummary) -> list[Block]:
    """What the figures rest on: can injections be told apart, how often VERIFY fires,
    how much the reader's word table carries."""
    blocks: list[Block] = [Heading(2, "What the figures rest on")]
    invisible = _control_tables.invisibility(summary.invisibility)
    blocks.append(Para("A figure that follows from how the world, the faults and the agent "
                       "were written is not a finding. These controls say which ones could: "
                       "whether a classifier tells injected items from real ones, how often "
                       "VERIFY flags a hop with and without a fault, and how much of the "
                       "agent's accuracy its reader's word table carries."))
    return [*blocks, *([] if invisible is None else [invisible]),
            _control_tables.verify_rates(summary.verify), _control_tables.reader(summary.reader)]


def comparison(summary: EvaluateSummary) -> list[Block]:
    """Single-shot CUE-R's target next to the agentic critical hop, per example."""
    blocks: list[Block] = [Heading(2, "Single-shot vs agentic analysis, per example")]
    part = summary.comparison
    if not part.n:
        return [*blocks, _not_run("single-shot vs agentic comparison")]
    blocks.append(Para(
        "Single-shot CUE-R flags an item when removing it breaks that single-shot answer; the "
        "agentic analysis removes hop h's item inside the agent, which may retry, and takes the "
        "hop whose REMOVE hurts the final answer most as the critical hop. "
        f"Of {part.n} examples whose clean agentic run was right, "
        f"{part.with_critical_hop} have one critical hop "
        f"(by hop: {', '.join(f'{h}: {c}' for h, c in part.critical_hops.items()) or 'none'}"
        f"); in {part.ties} several hops hurt as much (ties, left out)"
        f". The single-shot analysis flags the critical hop's item in "
        f"{part.points_at_critical} of them ({num(part.points_at_critical_share, 2)} "
        f"{ci(part.points_at_critical_ci, 2)}); flags blind to the hop would score "
        f"{num(part.independent_share, 2)} (the share of all compared hops' items it "
        f"flags). Of its {part.single_shot_flags} flags, "
        f"{part.flags_recovered} ({num(part.flags_recovered_share, 2)}) are items "
        "whose removal the agent recovered from."))
    rows = []
    for row in part.examples[:15]:
        single = "; ".join(f"{'h' + str(s.hop) if s.hop else 'q'} {s.target} "
                           f"Δ{s.delta:+.0f}" for s in row.single_shot)
        critical = (f"hop {row.critical_hop}: {row.critical_item} "
                    f"Δ{row.critical_delta:+.0f}" if row.critical_hop else
                    f"tie: hops {', '.join(map(str, row.tied_hops))}"
                    if row.tied_hops else "none")
        points = {True: "yes", False: "no", None: "—"}[row.points_at_critical]
        rows.append((row.example_id, single, critical, points))
    blocks.append(Table(caption="First examples: single-shot targets (Δcorrectness of REMOVE) "
                                "next to the agentic critical hop",
                        headers=("example", "single-shot targets", "critical hop (agentic)",
                                 "points at it"), rows=tuple(rows)))
    return blocks


def diagnosers(summary: EvaluateSummary) -> list[Block]:
    """Exact-hop accuracy by depth (ours and the paper's), other metrics and cost."""
    blocks: list[Block] = [Heading(2, "Fault diagnosers")]
    part = summary.diagnosers
    if not part:
        return [*blocks, _not_run("diagnosers"), _diagnoser_tables.paper_diagnosers()]
    return [*blocks,
            *([] if (cells := _diagnoser_tables.diagnoser_fault_depths(part)) is None else [cells]),
            _diagnoser_tables.diagnoser_depths(part),
            _diagnoser_tables.paper_diagnosers(),
            *([] if (by_fault := _diagnoser_tables.diagnoser_faults(part)) is None else [by_fault]),
            _diagnoser_tables.diagnoser_metrics(part),
            *_figure("cost", _plots.cost_per_correct(part),
                     "Backend calls per correct diagnosis, per diagnoser")]


def ledger_and_config(summary: EvaluateSummary) -> list[Block]:
    """The backend ledger and the run config, for reproducing the numbers."""
    config = summary.config.model_dump(mode="json")
    per_skill = _ledger.skills(summary.ledger)
    return [Heading(2, "Ledger and configuration"), _ledger.ledger(summary.ledger),
            *([] if per_skill is None else [per_skill]),
            Code(json.dumps(config, sort_keys=True, indent=2, ensure_ascii=False))]


def provenance(summary: EvaluateSummary) -> list[Block]:
    """Footer: the command, version, commit and data file behind these numbers."""
    part = summary.provenance
    if isinstance(part, NoProvenance):
        return [Heading(2, "Provenance"), _not_run("provenance")]
    facts = [f"command: `{part.command or '?'}`",
             f"cuer-agent {part.version or '?'}"
             + (f", commit {part.commit}" if part.commit else ""),
             f"data file sha256: {part.data_sha256 or 'none (built in memory)'}",
             f"Python {part.python or '?'} on {part.platform or '?'}"]
    return [Heading(2, "Provenance"), Bullets(tuple(facts))]


def all_sections(summary: EvaluateSummary) -> list[Block]:
    """The whole report, in reading order."""
    return [*headline(summary), *single_shot(summary), *roles(summary),
            *agentic(summary), *construction(summary), *comparison(summary),
            *diagnosers(summary), *natural(summary.natural),
            *ledger_and_config(summary), *provenance(summary)]
