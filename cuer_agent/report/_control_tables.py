"""Tables of the controls the figures rest on: whether classifiers tell injected items
from real ones (invisibility), how often VERIFY flags a hop with and without a fault,
and the reader's clean accuracy with and without its word table."""

from __future__ import annotations

from cuer_agent.report._format import DASH, ci, num
from cuer_agent.report._render import Table
from cuer_agent.studies.evaluate.summary_model import ReaderCheck
from cuer_agent.studies.propagation.summary_model import Invisibility, VerifyRates


def verify_rates(verify: VerifyRates) -> Table:
    """VERIFY's false alarms on clean hops and its detection per fault."""
    alarm = verify.false_alarm
    rows = [("clean hops (false alarm)", str(alarm.n),
             f"{num(alarm.rate, 3)} {ci(alarm.ci, 3)}".rstrip())]
    for fault, cell in verify.detection.items():
        rows.append((f"{fault} (detection)", str(cell.n),
                     f"{num(cell.rate, 3)} {ci(cell.ci, 3)}".rstrip()))
    return Table(caption="VERIFY: how often it flags a hop's first attempt (unsupported, or "
                         "nothing selected)",
                 headers=("hops", "n", "flagged [95% Wilson CI]"), rows=tuple(rows),
                 footnote="Detection: over the effective injections' faulted first attempts. "
                          "False alarm: over every hop of the clean runs.")


def invisibility(part: Invisibility) -> Table | None:
    """Per fault: can classifiers tell its injected items from real ones?"""
    if not part.faults:
        return None
    rows = []
    for name, c in part.faults.items():
        view = c.in_view
        top = c.top_feature or DASH
        top_auc = c.feature_auc.get(top)
        rows.append((name, str(c.injected), f"{num(c.auc, 2)} {ci(c.ci, 2)}".rstrip(),
                     num(c.auc_independent, 2), num(c.auc_words, 2),
                     f"{top} ({num(top_auc, 2)})" if top_auc is not None else top,
                     "DETECTABLE" if c.detectable else "no",
                     f"{num(view.auc, 2)} / {num(view.auc_content, 2)}"))
    positional = ", ".join(part.positional)
    return Table(caption="Invisibility: ROC AUC of classifiers telling injected items from "
                         "the real items they stand in for (0.5 = invisible)",
                 headers=("fault", "injected", "AUC [95% CI]", "trees", "words only",
                          "best single feature", f"> {num(part.threshold, 2)}",
                          "in view: all / without position"),
                 rows=tuple(rows),
                 footnote=("Stands in for: an edited passage's original; a passage added to "
                           "the corpus → the real paragraphs of its title in the same view; a "
                           "real passage that entered the view because another left → the "
                           "clean run's item at its rank. In view: every real item of the "
                           f"faulted view, position ({positional}) included, then without it. "
                           "Out-of-fold scores, folds grouped by example."))


def reader(part: ReaderCheck) -> Table:
    """The reader's clean accuracy with and without its relation table."""
    rows = [("as run", str(part.n), f"{num(part.accuracy, 3)} {ci(part.ci, 3)}".rstrip())]
    plain = part.without_relation_table
    if plain is not None:
        rows.append(("relation table off", str(part.n),
                     f"{num(plain.accuracy, 3)} {ci(plain.ci, 3)}".rstrip()))
    return Table(caption=f"The reader ({part.backend}, {part.model}, version "
                         f"{part.version or DASH}): clean accuracy of the agent",
                 headers=("reader", "clean runs", "accuracy [95% Wilson CI]"),
                 rows=tuple(rows),
                 footnote=(f"Its word table: {part.relation_groups} relation groups, "
                           f"{part.relation_words} words "
                           "(cuer_agent.llm._reading.RELATION_GROUPS)."
                           if part.relation_groups else "A language model: no word "
                                                               "table to switch off."))

