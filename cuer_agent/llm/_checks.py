"""The extractive backend's answers to the `check` skill: the consistency checks as rules.

Each check reads one finished trace (`CheckRequest`: every attempt of every hop, what it
retrieved, selected and found, and the final answer) and names the hops where the trace
contradicts itself. Nothing here sees a gold answer, replays a hop, or knows how a fault
is made; the checks use the reader's own primitives (`_reading`, `_text`, the question
analysis in `_questions`), so with this backend they share the agent's way of reading.

* **support** — a kept hop's finding is not in its selected text, or is stated only in
  sentences about another entity than the ones its sub-query names;
* **carry** — a sub-query (any attempt) names an entity whose words are neither in the
  question nor in an earlier finding: the query went somewhere no evidence led;
* **conflict** — two items about the subject the sub-query names (a selected item's
  title; items of that title in this hop's view or an earlier hop's), each read for the
  sub-query, give different values of the finding's kind, from sentences that matched
  the same query words *and* state the same relation (a shared relation word, or the
  same word next to the value: "lies in X" / "located in Y"). A sentence that matched
  nothing but the title states *something* about the subject; without the relation check
  "is often confused with X" would contradict "lies in Y";
* **relation** — a kept hop's sentence stating its finding contains none of its
  sub-query's relation words (weak: a reader may state a relation in words this one
  does not know);
* **complete** — a relation phrase of the question was never resolved by any hop
  (`open_phrases`; other unmatched words are not a part of the question left unread):
  the trace stopped with a part of the question unread → hop n+1;
* **answer_type** — the question asks for a number or date and the answer is none, or
  it asks for a type ("which country") and an item about the answer says it is another
  type (a city) and none says it is the asked one;
* **grounded** — the answer is none of the kept hops' findings (nor contains one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from cuer_agent.llm import _text as tx
from cuer_agent.llm._questions import open_phrases, words_with_stems
from cuer_agent.llm._reading import TYPE_NOUNS, Hit, extract, stems, type_kind, wh_type_nouns
from cuer_agent.llm.skills import CheckRequest, CheckResponse, EvidenceView, HopView, TracedHop

_QUESTION_WORDS = tx.STOPWORDS | {"what", "which", "who", "where", "when", "how", "whose"}


def check(req: CheckRequest) -> CheckResponse:
    flagged, reason = _CHECKS[req.check](req)
    return CheckResponse(consistent=not flagged, hops=sorted(set(flagged)), reason=reason)


def _norm(text: str) -> str:
    return " ".join(tx.words(text))


def _kept(req: CheckRequest) -> list[TracedHop]:
    """The attempt each hop kept: its last one."""
    last: dict[int, TracedHop] = {}
    for attempt in req.hops:
        last[attempt.hop] = attempt
    return [last[h] for h in sorted(last)]


def _names(text: str) -> list[tuple[str, set[str]]]:
    """The names a text mentions (capitalised spans) with their content words; a run of
    question or function words alone ("What", "In which") is no name."""
    found = []
    for span in tx.capitalized_spans(text):
        words = {w for w in tx.words(span.text) if w not in _QUESTION_WORDS}
        if words:
            found.append((span.text, words))
    return found


def _selected(hop: TracedHop) -> list[EvidenceView]:
    chosen = set(hop.selected)
    return [e for e in hop.retrieved if e.id in chosen]


def _stating(hop: TracedHop) -> list[tuple[EvidenceView, str]]:
    """Selected sentences that state the finding (or the item whose title it is)."""
    finding = _norm(hop.finding)
    out = [(e, s) for e in _selected(hop) for s in tx.split_sentences(e.text)
           if finding and finding in _norm(s)]
    return out + [(e, e.title) for e in _selected(hop) if finding == _norm(e.title)]


def support(req: CheckRequest) -> tuple[list[int], str]:
    for hop in _kept(req):
        if not hop.finding:
            continue
        stating = _stating(hop)
        if not stating:
            return [hop.hop], f"hop {hop.hop}: {hop.finding!r} is not in its selected text"
        names = [words for _, words in _names(hop.subquery)]
        if names and not any(n <= set(tx.words(f"{e.title} {s}")) for e, s in stating
                             for n in names):
            return [hop.hop], (f"hop {hop.hop}: {hop.finding!r} is stated about another "
                               f"entity than {hop.subquery!r} names")
    return [], ""


def carry(req: CheckRequest) -> tuple[list[int], str]:
    known = set(tx.words(req.question))
    for hop in req.hops:  # every attempt: a retry may drift as well
        for name, words in _names(hop.subquery):
            if not words <= known:
                return [hop.hop], (f"hop {hop.hop} asks about {name!r}, which neither the "
                                   "question nor an earlier finding gave")
        known |= set(tx.words(hop.finding))
    return [], ""


def _kind(value: str) -> str:
    value = value.strip()
    if tx.DATE_RE.fullmatch(value):
        return "date"
    return "number" if tx.NUMBER_RE.fullmatch(value) else "entity"


def _relation_words(sentence: str, title: str, value: str) -> set[str]:
    """The sentence's relation stems: its content words outside names, the value, type
    nouns and the word a sentence opens with to refer to its subject ("The firm's …")."""
    drop = set(tx.words(title)) | set(tx.words(value))
    for span in tx.capitalized_spans(sentence):
        drop |= set(tx.words(span.text))
    if m := re.match(r"\s*(?:the|its|this)\s+(\w+)", sentence, re.IGNORECASE):
        drop.add(m.group(1).lower())
    return stems(" ".join(w for w in tx.content_words(sentence)
                          if w not in drop and w not in TYPE_NOUNS))


def _frame(sentence: str, value: str) -> tuple[str, str]:
    """The word next to the value: the one before it ("in"), else the one after it."""
    at = sentence.find(value)
    before, after = tx.words(sentence[:at]), tx.words(sentence[at + len(value):])
    return ("before", before[-1]) if before else ("after", after[0] if after else "")


def _readings(hop: TracedHop, items: list[EvidenceView], known: str) -> Iterator[
        tuple[str, Hit, EvidenceView]]:
    """Each item read alone for the hop's sub-query: the value of the finding's kind."""
    kind = _kind(hop.finding)
    for item in items:
        value, hit = extract(hop.subquery, (item,), kind, known, named_first=True)
        if hit is not None and value:
            yield value, hit, item


def _same_relation(a: tuple[str, Hit, EvidenceView], b: tuple[str, Hit, EvidenceView]) -> bool:
    (va, ha, ea), (vb, hb, eb) = a, b
    if ha.matched != hb.matched:
        return False
    shared = (_relation_words(ha.sentence, ea.title, va)
              & _relation_words(hb.sentence, eb.title, vb))
    return bool(shared) or _frame(ha.sentence, va) == _frame(hb.sentence, vb)


def conflict(req: CheckRequest) -> tuple[list[int], str]:
    seen: dict[str, EvidenceView] = {}
    kept = {h.hop: h for h in _kept(req)}
    for attempt in req.hops:
        for item in attempt.retrieved:
            seen.setdefault(item.id, item)
        hop = kept[attempt.hop]
        if attempt is not hop or not hop.finding or not hop.selected:
            continue
        # The subject: the entity the sub-query names, as a selected item's title.
        asked = set(tx.words(hop.subquery))
        subjects = {_norm(e.title) for e in _selected(hop)
                    if tx.content_words(e.title) and set(tx.content_words(e.title)) <= asked}
        known = " ".join([req.question] + [h.finding for h in kept.values() if h.hop < hop.hop])
        readings = list(_readings(hop, [e for e in seen.values()
                                        if _norm(e.title) in subjects], known))
        for i, first in enumerate(readings):
            for second in readings[i + 1:]:
                a, b = _norm(first[0]), _norm(second[0])
                if a in b or b in a or not _same_relation(first, second):
                    continue
                return [hop.hop], (f"hop {hop.hop}: {first[2].id} says {first[1].sentence!r}, "
                                   f"{second[2].id} says {second[1].sentence!r}")
    return [], ""


def relation(req: CheckRequest) -> tuple[list[int], str]:
    flagged = []
    for hop in _kept(req):
        named = set().union(*(words for _, words in _names(hop.subquery)))
        asked = stems(" ".join(w for w in tx.content_words(hop.subquery)
                               if w not in named and w not in TYPE_NOUNS))
        sentences = [s for _, s in _stating(hop)]
        if asked and sentences and not any(asked & stems(s) for s in sentences):
            flagged.append(hop.hop)
    return flagged, (f"hops {flagged}: the sentence read states none of the sub-query's "
                     "relation words" if flagged else "")


def _history(req: CheckRequest) -> tuple[HopView, ...]:
    """The kept hops as the question analysis reads them: what each hop read is its
    stated reason, or (a trace that records none) the selected sentences stating its
    finding."""
    return tuple(HopView(hop=h.hop, subquery=h.subquery, finding=h.finding, support=h.support,
                         reason=h.reason or " ".join(s for _, s in _stating(h)))
                 for h in _kept(req))


def complete(req: CheckRequest) -> tuple[list[int], str]:
    unread = open_phrases(req.question, _history(req))
    if not unread:
        return [], ""
    words = "; ".join(words_with_stems(req.question, set(p[0])) for p in unread)
    return [len(_kept(req)) + 1], f"no hop resolved {words!r} of the question"


def answer_type(req: CheckRequest) -> tuple[list[int], str]:
    kind = tx.question_type(req.question).kind
    if kind == "number" and not tx.NUMBER_RE.search(req.answer):
        return [0], f"the question asks for a number; the answer is {req.answer!r}"
    if kind == "date" and not tx.DATE_RE.search(req.answer):
        return [0], f"the question asks for a date; the answer is {req.answer!r}"
    wanted = {type_kind(n) for n in wh_type_nouns(req.question)}
    answer = _norm(req.answer)
    if not wanted or not answer:
        return [], ""
    said: set[str] = set()
    for item in {e.id: e for h in req.hops for e in h.retrieved}.values():
        if _norm(item.title) != answer:
            continue
        for sentence in tx.split_sentences(item.text):
            if not tx.negated(sentence):
                said |= {type_kind(w) for w in tx.words(sentence) if w in TYPE_NOUNS}
    if said and not said & wanted:
        return [0], (f"the question asks for a {sorted(wanted)[0]}; {req.answer!r} is said "
                     f"to be a {sorted(said)[0]}")
    return [], ""


def grounded(req: CheckRequest) -> tuple[list[int], str]:
    answer = _norm(req.answer)
    findings = [_norm(h.finding) for h in _kept(req) if h.finding]
    if answer and any(answer in f or f in answer for f in findings):
        return [], ""
    return [0], f"the answer {req.answer!r} is none of the hops' findings"


_CHECKS: dict[str, Callable[[CheckRequest], tuple[list[int], str]]] = {
    "support": support, "carry": carry, "conflict": conflict, "relation": relation,
    "complete": complete, "answer_type": answer_type, "grounded": grounded,
}
