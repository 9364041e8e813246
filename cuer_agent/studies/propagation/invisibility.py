"""Invisibility, measured in every run: can a classifier tell injected items from real ones?

An injection that a surface feature gives away (fewer sentences, a template word, a
title nothing else carries) measures its own construction: a reader, VERIFY or a
diagnoser can key on the tell instead of reading. So every run trains classifiers to
tell the items a fault put in view from real ones, on generic surface features, and
reports how well they do (`summary.invisibility`).

**Items.** For each applied injection that puts items in view (a fault's added, edited
or newly surfaced passages — `record.new_ids` and tampering's `documents_touched` — and
the per-hop REPLACE; not DUPLICATE, an exact copy by definition), the first attempt of
the faulted run at or after hop h that shows one: its injected items are positives.
Negatives, **matched**: for each positive, the real item the clean run showed at the
same hop and rank — so the place an item takes (decided by the retriever's score, or by
what a withholding pushed up) is not what the classifier learns; whether an item *looks*
injected is. Also reported, **in view**: every real item of the faulted view as
negatives, position included.

**Features** (generic, nothing fault-specific): sentence and token counts, whether the
text opens with its title, how many other items in view share its title, the id's
numbers (the largest whole number among its parts, as `p3` in `…-p3-c0`) and whether its
id is the largest of its title in view, score, rank, score over the view's best, and
hashed word 1-2-grams of title and text.

**Items that enter by rank** — a withholding surfaces the next real item, per-hop REPLACE
puts its item at the target's rank — are scored **without position** (`by_rank`): an
outsider sees no clean run to compare a place with, so `auc` and `auc_independent` use
the content features only.

**Classifiers.** A logistic regression on all features (the figure: `auc`), and, as an
independent check, gradient-boosted trees on the numeric features plus a low-dimensional
hashing of the words (`auc_independent`). Cross-validated with folds grouped by example
(no example's items on both sides); ROC AUC of the out-of-fold scores, with a 95 %
interval from resampling examples. A fault is **detectable** when `auc` exceeds
`DETECTABLE` (0.65); `top_feature` names the single feature that separates best (its
own AUC, either direction) or "words" when the n-gram model alone does better.

Needs scikit-learn (a dependency). Deterministic: fixed folds and seeds, one thread.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuer_agent.interventions import stable_seed
from cuer_agent.retrieval import sentences, tokenize
from cuer_agent.studies._common.summary_model import Interval
from cuer_agent.studies.propagation.rows import TraceData, TraceRow
from cuer_agent.studies.propagation.summary_model import (
    InViewScores,
    Invisibility,
    InvisibilityCell,
)
from cuer_agent.trace import EvidenceData, HopData

DETECTABLE = 0.65
"""Above this ROC AUC a fault's injections are called detectable."""
FOLDS = 5
RESAMPLES = 500
SEED = 0
NUMERIC = ("sentences", "tokens", "opens_with_title", "title_in_view", "id_number",
           "id_largest_of_title", "score", "rank", "score_ratio")
"""The numeric features, in column order."""
POSITIONAL = ("score", "rank", "score_ratio")
"""Features that say where the retriever placed an item, not what it is."""
WORD_FEATURES = 2 ** 12
TREE_WORD_FEATURES = 2 ** 6


@dataclass(frozen=True)
class Item:
    """One item in view, with what the classifier may use."""

    example_id: str
    text: str
    numeric: tuple[float, ...]
    injected: bool
    by_rank: bool = False
    """An injected item that entered by rank (surfaced by a withholding, or per-hop
    REPLACE's item at its target's rank)."""


def _item(example_id: str, ev: EvidenceData, view: Sequence[EvidenceData],
          injected: bool) -> Item:
    title, text = str(ev.get("title", "")), str(ev.get("text", ""))
    best = max((float(e.get("score", 0.0)) for e in view), default=0.0)
    score = float(ev.get("score", 0.0))
    same_title = [e for e in view if e is not ev and e.get("title") == title]
    numeric = (float(len(sentences(text))), float(len(tokenize(text))),
               float(text.startswith(title) and bool(title)), float(len(same_title)),
               float(max(id_numbers(str(ev["id"])), default=0)),
               float(bool(same_title) and all(_id_order(str(ev["id"])) > _id_order(str(e["id"]))
                                              for e in same_title)),
               score, float(ev.get("rank", 0)), score / best if best > 0 else 0.0)
    return Item(example_id, f"{title} {text}", numeric, injected)


def id_numbers(item_id: str) -> list[int]:
    """The whole numbers an id shows: each part between separators that is digits after
    leading letters (`p3`, `c0`, `12`), not a hash that happens to hold digits."""
    return [int(m.group(1)) for part in _ID_PARTS.split(item_id)
            if (m := _NUMBERED.fullmatch(part))]


def _id_order(item_id: str) -> tuple[list[int], str]:
    return id_numbers(item_id), item_id


_ID_PARTS = re.compile(r"[-_:/.#]")
_NUMBERED = re.compile(r"[A-Za-z]*([0-9]+)")


def _injected_ids(row: TraceRow) -> set[str]:
    record = row["record"]
    ids = set(record.get("new_ids") or ())
    touched = record.get("certificate", {}).get("documents_touched")
    if isinstance(touched, list):
        ids |= {str(i) for i in touched}
    return ids


def _attempts(trace: TraceData, hop: int) -> list[HopData]:
    out: list[HopData] = []
    for record in trace["hops"][hop - 1:]:
        out += [*record.get("attempts", []), record]
    return out


def _counterpart(ev: EvidenceData, view: Sequence[EvidenceData],
                 clean_view: Sequence[EvidenceData], injected: set[str],
                 surfaced: bool, contradicts: set[str]
                 ) -> tuple[EvidenceData, Sequence[EvidenceData]] | None:
    """The real item an injected one stands in for, with its view: a passage edited in
    place → its original (the clean run's item of that id); a real passage that entered
    the view because another left (`surfaced`) → the clean run's item at its rank; a
    passage added to the corpus → a real passage in the same view stating the fact it
    contradicts (`contradicts`, a hidden label of the record), else one of the real
    paragraphs of its title — drawn at random (seeded by the ids: one per injected item,
    so a view with more of them does not weigh more) — else the clean run's item at its
    rank."""
    for other in clean_view:
        if other["id"] == ev["id"]:
            return other, clean_view
    real = [other for other in view if str(other["id"]) not in injected]
    stating = [other for other in real if str(other["id"]) in contradicts]
    same = stating or [other for other in real if other["title"] == ev["title"]]
    if same and not surfaced:
        pick = stable_seed("counterpart", ev["id"], *(o["id"] for o in same)) % len(same)
        return same[pick], view
    return next(((other, clean_view) for other in clean_view
                 if int(other.get("rank", 0)) == int(ev.get("rank", 0))), None)


def items_by_fault(trace_rows: Sequence[TraceRow],
                   faults: Sequence[str]) -> dict[str, dict[str, list[Item]]]:
    """fault (or "replace (per hop)") → {"matched": each injected item and the real one
    it stands in for, "in_view": every item of the faulted views}."""
    clean = {r["record"]["example_id"]: r["trace"] for r in trace_rows
             if r["record"]["condition"] == "clean"}
    wanted = {*faults, "hop_replace"}
    out: dict[str, dict[str, list[Item]]] = defaultdict(lambda: {"matched": [], "in_view": []})
    for row in trace_rows:
        record = row["record"]
        if record["condition"] not in wanted or row["trace"] is None:
            continue
        injected, example = _injected_ids(row), record["example_id"]
        attempt = next((a for a in _attempts(row["trace"], int(record["hop"]))
                        if injected & {str(ev["id"]) for ev in a["retrieved"]}), None)
        if attempt is None or example not in clean:
            continue
        view, hop = attempt["retrieved"], int(attempt["hop"])
        clean_hops = clean[example]["hops"]
        clean_view: list[EvidenceData] = (_attempts(clean[example], hop)[0]["retrieved"]
                                          if hop <= len(clean_hops) else [])
        name = "replace (per hop)" if record["condition"] == "hop_replace" else record["condition"]
        provenance = record.get("provenance") or {}
        stated = (record.get("params") or {}).get("contradicts")
        contradicts = {str(i) for i in stated} if isinstance(stated, list) else set()
        for ev in view:
            is_injected = str(ev["id"]) in injected
            out[name]["in_view"].append(_item(example, ev, view, is_injected))
            if is_injected:
                surfaced = provenance.get(str(ev["id"])) == str(ev["id"])
                by_rank = surfaced or record["condition"] == "hop_replace"
                out[name]["matched"].append(
                    dataclasses.replace(_item(example, ev, view, True), by_rank=by_rank))
                partner = _counterpart(ev, view, clean_view, injected, surfaced, contradicts)
                if partner is not None:
                    out[name]["matched"].append(_item(example, partner[0], partner[1], False))
    return dict(out)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their mean rank, all NaN if a value is NaN:
    `scipy.stats.rankdata(values)` (method "average"), the same float64 values (each a
    whole or half number, exact) without its per-call overhead — the interval of every
    AUC ranks a thousand resamples."""
    if np.isnan(values).any():
        return np.full(values.shape, np.nan)
    order = np.argsort(values, kind="mergesort")
    position = np.empty(order.size, dtype=np.intp)
    position[order] = np.arange(order.size)
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    group = starts.cumsum()[position]  # 1-based tie group of each value
    bounds = np.r_[np.flatnonzero(starts), order.size]  # where each group starts, and n
    ranks: np.ndarray = 0.5 * (bounds[group] + bounds[group - 1] + 1)
    return ranks


def _auc(y: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC = the Mann-Whitney U of the positives' scores over n_pos · n_neg (ties
    count half): `sklearn.metrics.roc_auc_score`'s value, computed from ranks."""
    positives = y == 1
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    ranks = _average_ranks(np.asarray(scores, dtype=np.float64))
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _cluster_ci(y: np.ndarray, scores: np.ndarray, groups: np.ndarray) -> Interval | None:
    """95 % interval of the AUC, resampling examples."""
    labels, inverse = np.unique(groups, return_inverse=True)
    members = [np.flatnonzero(inverse == i) for i in range(len(labels))]
    rng = np.random.default_rng(SEED)
    values = []
    for _ in range(RESAMPLES):
        idx = np.concatenate([members[i] for i in rng.integers(0, len(labels), len(labels))])
        if 0 < y[idx].sum() < len(idx):
            values.append(_auc(y[idx], scores[idx]))
    if not values:
        return None
    lo, hi = np.percentile(values, [2.5, 97.5])
    return round(float(lo), 6), round(float(hi), 6)


def _matrices(items: list[Item], word_features: int,
              columns: Sequence[int]) -> tuple[Any, np.ndarray]:
    from sklearn.feature_extraction.text import HashingVectorizer

    words = HashingVectorizer(n_features=word_features, ngram_range=(1, 2),
                              alternate_sign=False, norm="l2").transform([i.text for i in items])
    numeric = np.asarray([i.numeric for i in items], dtype=np.float64)[:, list(columns)]
    return words, numeric


def _out_of_fold(items: list[Item], model: str, features: str = "all") -> np.ndarray | None:
    """Out-of-fold P(injected) per item, folds grouped by example, for `model` (linear,
    trees or words) on `features` (all, or content: without the positional ones); None
    if the items cannot be split (one example, or one class)."""
    from scipy import sparse
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.preprocessing import StandardScaler

    y = np.asarray([i.injected for i in items], dtype=int)
    groups = np.asarray([i.example_id for i in items])
    n_groups = len(set(groups.tolist()))
    if n_groups < 2 or y.min() == y.max():
        return None
    columns = [j for j, name in enumerate(NUMERIC)
               if features == "all" or name not in POSITIONAL]
    words, numeric = _matrices(items, WORD_FEATURES if model != "trees" else TREE_WORD_FEATURES,
                               columns)
    scores = np.zeros(len(items))
    for train, test in GroupKFold(n_splits=min(FOLDS, n_groups)).split(numeric, y, groups):
        if y[train].min() == y[train].max():
            scores[test] = y[train].mean()
            continue
        if model == "trees":
            dense = np.hstack([numeric, words.toarray()])
            trees = HistGradientBoostingClassifier(max_iter=60, random_state=SEED)
            trees.fit(dense[train], y[train])
            scores[test] = trees.predict_proba(dense[test])[:, 1]
            continue
        scaler = StandardScaler().fit(numeric[train])
        matrix = words if model == "words" else sparse.hstack(
            [sparse.csr_matrix(scaler.transform(numeric)), words]).tocsr()
        linear = LogisticRegression(max_iter=2000, random_state=SEED)
        linear.fit(matrix[train], y[train])
        scores[test] = linear.predict_proba(matrix[test])[:, 1]
    return scores


def _feature_aucs(items: list[Item], features: str = "all") -> dict[str, float]:
    """Each numeric feature alone as a score (of `features`): its AUC, either direction
    (>= 0.5)."""
    y = np.asarray([i.injected for i in items], dtype=int)
    numeric = np.asarray([i.numeric for i in items], dtype=np.float64)
    out = {}
    for j, name in enumerate(NUMERIC):
        if features != "all" and name in POSITIONAL:
            continue
        auc = _auc(y, numeric[:, j])
        out[name] = round(max(auc, 1.0 - auc), 6)
    return out


def _rounded(y: np.ndarray, scores: np.ndarray | None) -> float | None:
    return round(_auc(y, scores), 6) if scores is not None else None


@dataclass(frozen=True)
class Classified:
    """One fault's classifier figures (`InvisibilityCell` but the verdict)."""

    items: int
    injected: int
    auc: float | None
    ci: Interval | None = None
    auc_independent: float | None = None
    auc_words: float | None = None
    feature_auc: dict[str, float] | None = None
    """None when the items cannot be split (the cell writes {})."""


def classify(items: list[Item], features: str = "all") -> Classified:
    """One fault's figures (see the module docstring), on `features` (all, or content:
    without the positional ones)."""
    y = np.asarray([i.injected for i in items], dtype=int)
    groups = np.asarray([i.example_id for i in items])
    scores = _out_of_fold(items, "linear", features)
    if scores is None:
        return Classified(items=len(items), injected=int(y.sum()), auc=None)
    return Classified(items=len(items), injected=int(y.sum()), auc=_rounded(y, scores),
                      ci=_cluster_ci(y, scores, groups),
                      auc_independent=_rounded(y, _out_of_fold(items, "trees", features)),
                      auc_words=_rounded(y, _out_of_fold(items, "words")),
                      feature_auc=_feature_aucs(items, features))


def _verdict(cell: Classified) -> tuple[bool, str | None]:
    """(detectable, the feature that separates best)."""
    features = cell.feature_auc
    if not features:
        return False, None
    top = max(features, key=lambda f: (features[f], f))
    if (cell.auc_words or 0.0) > features[top]:
        top = "words"
    return max(cell.auc or 0.0, cell.auc_independent or 0.0) > DETECTABLE, top


def in_view(items: list[Item]) -> InViewScores:
    """The faulted views whole: every real item in view a negative, position included."""
    y = np.asarray([i.injected for i in items], dtype=int)
    scores = _out_of_fold(items, "linear")
    return InViewScores(items=len(items), auc=_rounded(y, scores),
                        auc_content=(_rounded(y, _out_of_fold(items, "linear", "content"))
                                     if scores is not None else None))


def invisibility(trace_rows: Sequence[TraceRow], faults: Sequence[str]) -> Invisibility:
    """`summary.invisibility`: per fault, how well the classifiers do. One thread for the
    classifiers' native code: a parallel sum may round differently on another machine,
    and the figures must be the same bytes everywhere (and the trees' threaded binning
    polls with sleeps: on these small matrices one thread takes half the wall time)."""
    # The classifiers' native libraries (scikit-learn's OpenMP) must be loaded before the
    # limit is set: threadpoolctl limits only the libraries loaded when it is entered.
    from sklearn import ensemble, linear_model  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _invisibility(trace_rows, faults)


def _invisibility(trace_rows: Sequence[TraceRow], faults: Sequence[str]) -> Invisibility:
    out: dict[str, InvisibilityCell] = {}
    for name, sets in sorted(items_by_fault(trace_rows, faults).items()):
        injected = [i for i in sets["matched"] if i.injected]
        by_rank = bool(injected) and all(i.by_rank for i in injected)
        cell = classify(sets["matched"], "content" if by_rank else "all")
        detectable, top = _verdict(cell)
        out[name] = InvisibilityCell(by_rank=by_rank,
            items=cell.items, injected=cell.injected, auc=cell.auc, ci=cell.ci,
            auc_independent=cell.auc_independent, auc_words=cell.auc_words,
            feature_auc=cell.feature_auc or {}, detectable=detectable, top_feature=top,
            in_view=in_view(sets["in_view"]))
    return Invisibility(threshold=DETECTABLE, positional=list(POSITIONAL), faults=out)
