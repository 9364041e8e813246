"""An independent implementation of the natural-failure labelling rule
(`gold-chain-walk`, version 2), used to cross-check the project's own.

Written from the rule's text alone: it reads the original MuSiQue / 2WikiMultihopQA
files with `json`, and imports from `cuer_agent` only the synthetic world's gold.

It offers the first error of a trace (`label_trace`, `label_run`; the same under
versions 1 and 2) and, as version 2 adds, a verdict on every hop (`hop_verdicts`,
`verdict_run`): the walk goes on past the first error with the same pointer, so a hop
after an error is right only when its finding resolves the step still open (or a later
one). A failure with two or more wrong hops is a cascade.

    python tests/independent_first_error.py musique|2wiki|synthetic TRACES DATA_OR_SEED
        [--n N] [--hops H] [--summary] [--verdicts]

prints one JSON line per trace: {"example_id": ..., "label": [hop, stage, kind] | reason},
or with --verdicts {"example_id": ..., "verdicts": [[hop, right, step, stage], ...] | reason}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import string
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

Label = tuple[int, str, str] | str
Verdict = tuple[int, bool, int | None, str | None]
Verdicts = list[Verdict] | str

NO_STEP_ANSWERS = "no per-step gold answers"
NO_CHAIN = "no gold chain for the example"
EMPTY_STEP_ANSWER = "a step with an empty answer"
NO_SUPPORT = "the error's step has no known supporting passage"


@dataclass(frozen=True)
class GoldStep:
    """One step of a gold chain: accepted answers (the step's answer first), the ids of
    its supporting passages (an id ending in "-c" is a prefix matching every chunk of a
    paragraph; anything else must match exactly), and the supporting passage's title."""

    answers: tuple[str, ...]
    support_ids: frozenset[str]
    support_title: str | None


# --- normalisation (the official SQuAD / HotpotQA normalize_answer) ------------------

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def norm(text: str) -> str:
    """Lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def contains(haystack: str, needle: str) -> bool:
    """`norm(needle)` is non-empty and its tokens occur as a contiguous run in the tokens
    of `norm(haystack)` (equality is the whole-run case)."""
    want = norm(needle).split()
    have = norm(haystack).split()
    if not want:
        return False
    width = len(want)
    return any(have[i:i + width] == want for i in range(len(have) - width + 1))


def matches(finding: str, answers: Iterable[str]) -> bool:
    """A finding matches a step when it matches one of the step's accepted answers."""
    return any(contains(finding, answer) for answer in answers)


# --- evidence ids -------------------------------------------------------------------


def paragraph_prefix(title: str, paragraph: int) -> str:
    """The id prefix shared by every chunk of a paragraph: `<sha1(title, paragraph)>-c`."""
    digest = hashlib.sha1(f"{title}\x1f{paragraph}".encode()).hexdigest()[:12]
    return f"{digest}-c"


def id_supports(item_id: str, support_ids: frozenset[str]) -> bool:
    if item_id in support_ids:
        return True
    return any(s.endswith("-c") and item_id.startswith(s) for s in support_ids)


# --- the walk -------------------------------------------------------------------------


def _items(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    retrieved = record.get("retrieved") or []
    return [item for item in retrieved if isinstance(item, Mapping)]


def hop_view(hop: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every evidence item any attempt of the hop retrieved."""
    view = list(_items(hop))
    for attempt in hop.get("attempts") or []:
        if isinstance(attempt, Mapping):
            view.extend(_items(attempt))
    return view


def in_view(step: GoldStep, view: Sequence[Mapping[str, Any]]) -> bool:
    """A supporting passage of the step is in view: an item has a supporting id, or has
    the support title and a text containing one of the step's accepted answers."""
    for item in view:
        if id_supports(str(item.get("id", "")), step.support_ids):
            return True
        if (step.support_title is not None and item.get("title") == step.support_title
                and any(contains(str(item.get("text", "")), a) for a in step.answers)):
            return True
    return False


def _ordered_hops(trace: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    hops = [h for h in trace.get("hops") or [] if isinstance(h, Mapping)]
    return sorted(hops, key=lambda h: int(h.get("hop", 0)))


def not_a_failure(trace: Mapping[str, Any]) -> str | None:
    """Runs that ended in a request error or a parse failure are counted apart."""
    status = str(trace.get("status", "ok"))
    if status != "ok":
        return f"not a failure: status {status}"
    if trace.get("error"):
        return "not a failure: request error"
    return None


def label_trace(trace: dict[str, Any], chain: list[GoldStep]) -> Label:
    """(hop, stage, kind) of the first error of a trace against its gold chain, or the
    reason it is left unlabelled. Labels any trace given; whether it is a failure (wrong
    final answer) is the caller's business."""
    reason = _unwalkable(trace, chain)
    if reason is not None:
        return reason
    hops = _ordered_hops(trace)
    m = len(chain)
    p = 1
    for i, hop in enumerate(hops, start=1):
        if p > m:
            break
        finding = str(hop.get("finding") or "")
        hit = next((j for j in range(p, m + 1) if matches(finding, chain[j - 1].answers)),
                   None)
        if hit is not None:
            p = hit + 1
            continue
        step = chain[p - 1]
        if not step.support_ids and step.support_title is None:
            return NO_SUPPORT
        if in_view(step, hop_view(hop)):
            return (i, "read", "read")
        return (i, "retrieval", "retrieval")
    if p <= m:
        return (len(hops) + 1, "answer", "stopped-early")
    return (0, "answer", "answer")


def _unwalkable(trace: Mapping[str, Any], chain: Sequence[GoldStep]) -> str | None:
    """The reason a trace cannot be walked against its chain, if any."""
    apart = not_a_failure(trace)
    if apart is not None:
        return apart
    if not chain:
        return NO_STEP_ANSWERS
    if any(not step.answers or not norm(step.answers[0]) for step in chain):
        return EMPTY_STEP_ANSWER
    return None


def hop_verdicts(trace: dict[str, Any], chain: list[GoldStep]) -> Verdicts:
    """Version 2: a verdict for every hop, in order of hop number, as
    (hop, right, step, stage). `hop` is the hop's 1-based position in that order (the
    rule's hop i, as in `label_trace`); `step` is the 1-based gold step the hop resolved
    (right) or left open (wrong), None for a hop after every step was resolved; `stage` is
    "retrieval" or "read" for a wrong hop (None when the open step has no known supporting
    passage) and None for a right hop. Or the reason the trace cannot be walked (as
    `label_trace`, except that a step without support is no reason here)."""
    reason = _unwalkable(trace, chain)
    if reason is not None:
        return reason
    m = len(chain)
    p = 1
    verdicts: list[Verdict] = []
    for i, hop in enumerate(_ordered_hops(trace), start=1):
        if p > m:
            verdicts.append((i, True, None, None))
            continue
        finding = str(hop.get("finding") or "")
        hit = next((j for j in range(p, m + 1) if matches(finding, chain[j - 1].answers)),
                   None)
        if hit is not None:
            verdicts.append((i, True, hit, None))
            p = hit + 1
            continue
        step = chain[p - 1]
        stage: str | None
        if not step.support_ids and step.support_title is None:
            stage = None
        elif in_view(step, hop_view(hop)):
            stage = "read"
        else:
            stage = "retrieval"
        verdicts.append((i, False, p, stage))
    return verdicts


# --- gold chains ----------------------------------------------------------------------


def _with_aliases(answer: str, final: str, aliases: Sequence[str]) -> tuple[str, ...]:
    """A step whose answer normalises to the final answer also accepts its aliases."""
    if aliases and norm(answer) and norm(answer) == norm(final):
        extra = tuple(a for a in aliases if a != answer)
        return (answer, *extra)
    return (answer,)


def musique_chains(path: Path) -> dict[str, list[GoldStep]]:
    """Example id -> chain, from the original MuSiQue JSONL."""
    chains: dict[str, list[GoldStep]] = {}
    for record in _musique_records(path):
        by_idx: dict[int, str] = {}
        for position, paragraph in enumerate(record.get("paragraphs") or []):
            idx = paragraph.get("idx", position)
            by_idx[int(idx)] = str(paragraph["title"])
        final = str(record.get("answer") or "")
        aliases = [str(a) for a in record.get("answer_aliases") or []]
        chain: list[GoldStep] = []
        for sub in record.get("question_decomposition") or []:
            answer = str(sub.get("answer") or "")
            support = sub.get("paragraph_support_idx")
            title = by_idx.get(int(support)) if support is not None else None
            ids = (frozenset({paragraph_prefix(title, int(support))})
                   if title is not None and support is not None else frozenset())
            chain.append(GoldStep(_with_aliases(answer, final, aliases), ids, title))
        chains[str(record["id"])] = chain
    return chains


def _musique_records(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


_STOPWORDS = frozenset({"of", "and", "in", "on", "at", "to", "for", "by", "with", "from"})


def _tokens(text: str) -> list[str]:
    return [t for t in norm(text).split() if t not in _STOPWORDS]


def best_title(subject: str, titles: Sequence[str]) -> str | None:
    """The title that best matches a triple's subject: most shared word tokens (normalised,
    minus a few stop words), then the larger share of the title's tokens, then the closer
    character sequence; remaining ties go to the earliest title."""
    want = set(_tokens(subject))
    best: str | None = None
    best_key: tuple[int, float, float] | None = None
    for title in titles:
        have = _tokens(title)
        shared = len(want & set(have))
        key = (shared, shared / len(have) if have else 0.0,
               SequenceMatcher(None, norm(subject), norm(title)).ratio())
        if best_key is None or key > best_key:
            best, best_key = title, key
    return best


def twowiki_chains(path: Path) -> dict[str, list[GoldStep]]:
    """Example id -> chain, from the original 2WikiMultihopQA JSON array. A step's answer is
    its evidence triple's object; its passage is the context paragraph of the supporting-facts
    title that best matches the triple's subject (every context paragraph of that title)."""
    with path.open(encoding="utf-8") as handle:
        records: list[dict[str, Any]] = json.load(handle)
    chains: dict[str, list[GoldStep]] = {}
    for record in records:
        context_titles = [str(entry[0]) for entry in record.get("context") or []]
        titles: list[str] = []
        for fact in record.get("supporting_facts") or []:
            if str(fact[0]) not in titles:
                titles.append(str(fact[0]))
        chain: list[GoldStep] = []
        for evidence in record.get("evidences") or []:
            subject, answer = str(evidence[0]), str(evidence[2])
            title = best_title(subject, titles)
            ids = (frozenset(paragraph_prefix(title, i)
                             for i, t in enumerate(context_titles) if t == title)
                   if title is not None else frozenset())
            chain.append(GoldStep((answer,), ids, title))
        chains[str(record["_id"])] = chain
    return chains


def synthetic_chains(n: int, hops: int, seed: int) -> dict[str, list[GoldStep]]:
    """Example id -> chain, from the synthetic world (the only cuer_agent import)."""
    from cuer_agent.data.synthetic import load_synthetic
    from cuer_agent.interventions.facts import fact_source

    dataset = load_synthetic(n, hops=hops, seed=seed)
    facts = fact_source(dataset)
    chains: dict[str, list[GoldStep]] = {}
    for example in dataset.examples:
        chain: list[GoldStep] = []
        for j, gold in enumerate(example.hops, start=1):
            fact = facts.fact(example, j)
            ids = frozenset(fact.passage_ids) if fact is not None else frozenset()
            answer = gold.answer or ""
            chain.append(GoldStep(_with_aliases(answer, example.answer, example.aliases),
                                  ids, gold.support_title))
        chains[example.id] = chain
    return chains


# --- final gold answers (for the wrong-answer test) -----------------------------------


def musique_gold(path: Path) -> dict[str, tuple[str, ...]]:
    return {str(r["id"]): (str(r.get("answer") or ""),
                           *(str(a) for a in r.get("answer_aliases") or []))
            for r in _musique_records(path)}


def twowiki_gold(path: Path) -> dict[str, tuple[str, ...]]:
    with path.open(encoding="utf-8") as handle:
        records: list[dict[str, Any]] = json.load(handle)
    return {str(r["_id"]): (str(r.get("answer") or ""),) for r in records}


def synthetic_gold(n: int, hops: int, seed: int) -> dict[str, tuple[str, ...]]:
    from cuer_agent.data.synthetic import load_synthetic

    dataset = load_synthetic(n, hops=hops, seed=seed)
    return {ex.id: (ex.answer, *ex.aliases) for ex in dataset.examples}


def is_wrong(answer: str, gold: Sequence[str]) -> bool:
    """norm(answer) equals neither norm(gold) nor the norm of any alias."""
    return norm(answer) not in {norm(g) for g in gold}


# --- runs -----------------------------------------------------------------------------


def read_traces(traces_jsonl: Path) -> list[dict[str, Any]]:
    """The trace objects of a traces.jsonl (the "trace" value of each row)."""
    traces: list[dict[str, Any]] = []
    with traces_jsonl.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            trace = row.get("trace", row)
            if isinstance(trace, dict):
                traces.append(trace)
    return traces


def label_run(traces_jsonl: Path,
              chains: dict[str, list[GoldStep]]) -> dict[str, tuple[int, str, str] | str]:
    """example_id -> label, for every trace in the file."""
    labels: dict[str, Label] = {}
    for trace in read_traces(traces_jsonl):
        example_id = str(trace.get("example_id", ""))
        chain = chains.get(example_id)
        labels[example_id] = NO_CHAIN if chain is None else label_trace(trace, chain)
    return labels


def verdict_run(traces_jsonl: Path,
                chains: Mapping[str, list[GoldStep]]) -> dict[str, Verdicts]:
    """example_id -> hop verdicts (or the reason there are none), for every trace in the
    file."""
    verdicts: dict[str, Verdicts] = {}
    for trace in read_traces(traces_jsonl):
        example_id = str(trace.get("example_id", ""))
        chain = chains.get(example_id)
        verdicts[example_id] = NO_CHAIN if chain is None else hop_verdicts(trace, chain)
    return verdicts


def label_key(label: Label) -> str:
    return label if isinstance(label, str) else f"{label[1]}/{label[2]}@hop{label[0]}"


def distribution(traces_jsonl: Path, labels: Mapping[str, Label],
                 gold: Mapping[str, Sequence[str]]) -> tuple[int, Counter[str], Counter[str]]:
    """Over the traces whose final answer is wrong (and that are failures at all): their
    count, the kinds (or unlabelled reasons), and the kind@hop labels."""
    kinds: Counter[str] = Counter()
    detailed: Counter[str] = Counter()
    wrong = 0
    for trace in read_traces(traces_jsonl):
        example_id = str(trace.get("example_id", ""))
        if not_a_failure(trace) is not None:
            continue
        if not is_wrong(str(trace.get("answer") or ""), gold.get(example_id, ())):
            continue
        wrong += 1
        label = labels[example_id]
        kinds[label if isinstance(label, str) else label[2]] += 1
        detailed[label_key(label)] += 1
    return wrong, kinds, detailed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("dataset", choices=("musique", "2wiki", "synthetic"))
    parser.add_argument("traces", type=Path)
    parser.add_argument("data_or_seed", help="the original data file, or the synthetic seed")
    parser.add_argument("--n", type=int, default=None,
                        help="synthetic: questions (default: the number of traces)")
    parser.add_argument("--hops", type=int, default=3, help="synthetic: gold hops (3)")
    parser.add_argument("--summary", action="store_true",
                        help="also print the label distribution of wrong answers to stderr")
    parser.add_argument("--verdicts", action="store_true",
                        help="print every hop's verdict (rule version 2) instead of the label")
    args = parser.parse_args(argv)
    if args.dataset == "musique":
        source = Path(args.data_or_seed)
        chains, gold = musique_chains(source), musique_gold(source)
    elif args.dataset == "2wiki":
        source = Path(args.data_or_seed)
        chains, gold = twowiki_chains(source), twowiki_gold(source)
    else:
        n = args.n if args.n is not None else len(read_traces(args.traces))
        seed = int(args.data_or_seed)
        chains, gold = synthetic_chains(n, args.hops, seed), synthetic_gold(n, args.hops, seed)
    labels = label_run(args.traces, chains)
    if args.verdicts:
        for example_id, verdicts in verdict_run(args.traces, chains).items():
            listed: list[Any] | str = (verdicts if isinstance(verdicts, str)
                                       else [list(v) for v in verdicts])
            print(json.dumps({"example_id": example_id, "verdicts": listed},
                             ensure_ascii=False))
    else:
        for example_id, label in labels.items():
            shown: list[Any] | str = label if isinstance(label, str) else list(label)
            print(json.dumps({"example_id": example_id, "label": shown}, ensure_ascii=False))
    if args.summary:
        wrong, kinds, detailed = distribution(args.traces, labels, gold)
        print(f"{args.dataset}: {len(labels)} traces, {wrong} wrong answers", file=sys.stderr)
        print(f"  kinds: {dict(kinds.most_common())}", file=sys.stderr)
        print(f"  labels: {dict(sorted(detailed.items()))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
