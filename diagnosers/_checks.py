"""The consistency checks as rules, which `consistency` runs on the offline reader.

Each check reads one finished trace (`CheckRequest`: every attempt of every hop, what it
retrieved, selected and found, and the final answer) and names the hops where the trace
contradicts itself. Nothing here sees a gold answer, replays a hop, or knows how a fault
is made, and nothing reads text the way the agent under test does: the words are read
with the checker's own primitives (`_check_words`: Snowball stems, its own names and
values), so a paraphrasing agent is judged as fairly as the extractive one.

What a hop *read* is its selected items, or — a trace that records no selection, as most
foreign traces — every item it retrieved, of those whose text the trace records. A check
that lacks what it needs (no text in view, no finding, no relation word to compare)
**abstains**: it says the trace is consistent and why it could not judge (`reason` opens
with "abstains"). None fires by default, and none fires because a field is missing: a
foreign trace may record no note for a hop (a tool-calling model's bare tool call) or a
document's id without its text, and what is not recorded may be exactly what a check
would find missing. So `complete` and `grounded` abstain on a trace with a hop that
records no finding (or, `complete`, no sub-query), `carry` stops at a hop that records
neither its finding nor the text it read, and `bridge` reads only items that record a
title or a text. (A blank answer is read as given: an agent that stops before it finds
anything answers nothing, and that is its failure.)

* **support** — no passage a kept hop read states its finding in any wording (every
  numeral of the finding, and one of its names whole — or, a finding without a name and
  without numerals, two thirds of its content stems — in one passage), or the
  passages that state it are about none of the entities its sub-query names;
* **carry** — a sub-query (any attempt) names an entity whose words are in neither the
  question nor anything an earlier attempt found or read: the query went where no
  evidence led;
* **bridge** — a hop's finding leads nowhere: the next hop asks about it, retrieves,
  and nothing it retrieved is about it (no item's title holds the finding's words; for
  an untitled item, its first sentence) — a bridge entity the corpus does not know is a
  misreading of the hop that found it, or its retrieval stopped short;
* **conflict** — two passages about the entity a sub-query names state different values
  of the finding's kind in sentences sharing one of the sub-query's relation words —
  unless either sentence marks its value as a former one ("formerly", "until", ...) or
  both are dated with different years (an outdated figure with its date is no conflict);
* **relation** (weak) — every sentence the hop read that states its finding lacks all of
  its sub-query's relation words;
* **complete** — a relation word of the question is stated in no text a finding rests on
  (the sentences stating it, the reader's reason): never asked by a sub-query of its
  own → hop n+1 (the agent stopped with a part of the question unread); asked → the
  earliest hop that asked it (it was asked and not answered) — where every hop asked
  the question whole, the first one asked every part;
* **kind** — a kept hop asked for a person or a place (its sub-query opens with "who" /
  "where", or — the last hop, when its finding is the answer — the question does) and
  found a date, a number, or a word the text it read uses to describe a noun ("a Czech
  film director"): the wrong kind of thing for what was asked, at the hop that read it;
* **echo** — a kept hop's finding is the entity its sub-query asks about: the finding's
  first name (its value; a later one may cite a source) holds every word of a name of two
  or more words the sub-query gives (or is part of it), and is the name a passage the
  hop read opens with — the hop read its subject back instead of what it asked. A
  question that offers a choice ("A or B?") abstains: there a hop may rightly name one;
  a finding that gives a number or a date outside parentheses is not judged: it states
  a figure of the entity it names ("Port Mira has about 52,000 people.");
* **answer_type** — the question asks for a number or a date and the answer has no
  numeral;
* **grounded** — the answer is none of the kept hops' findings (in either's words).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable

from cuer_agent.llm.skills import CheckRequest, CheckResponse, EvidenceView, TracedHop

from . import _check_words as cw

Verdict = tuple[list[int], str]
"""(hops where the check fails, why); no hops = consistent, or abstained."""

_NON_ANSWERS = cw.content_stems("unknown none not found n/a no answer cannot determine unclear")
_FORMER = cw.content_stems("former formerly previously originally once until earlier old")
_YES_NO = cw.content_stems("yes no")
_KIND_WORDS = cw.content_stems("year date many much number")


def check(req: CheckRequest) -> CheckResponse:
    flagged, reason = _CHECKS[req.check](req)
    return CheckResponse(consistent=not flagged, hops=sorted(set(flagged)), reason=reason)


def _kept(req: CheckRequest) -> list[TracedHop]:
    """The attempt each hop kept: its last one."""
    last = {attempt.hop: attempt for attempt in req.hops}
    return [last[h] for h in sorted(last)]


def _claims(finding: str) -> bool:
    """Whether a finding states something ("unknown", "not found" state nothing)."""
    stems = cw.content_stems(finding)
    return bool(stems - _NON_ANSWERS)


def _read(hop: TracedHop) -> list[EvidenceView]:
    """What the hop read: its selected items, else every item it retrieved — of those, the
    ones whose text the trace records (a foreign span may log a document's id alone)."""
    chosen = set(hop.selected)
    items = [e for e in hop.retrieved if e.id in chosen] or list(hop.retrieved)
    return [e for e in items if e.text.strip()]


def _no_note(hop: TracedHop) -> bool:
    """Whether the trace records nothing of what the hop found: a blank finding and no
    verdict of the agent's own. (An agent that judged its evidence unusable and found
    nothing — a blank finding, VERIFY "unsupported" — recorded that it found nothing.)"""
    return not hop.finding.strip() and hop.support == "unknown"


def _unrecorded(hops: list[TracedHop]) -> str:
    """Why a check of what the findings rest on cannot judge these hops ("" if it can): a
    hop whose finding or sub-query the trace does not record (a tool-calling model's bare
    tool call records no note) may hold what the check would find missing."""
    for hop in hops:
        missing = [name for name, absent in (("finding", _no_note(hop)),
                                             ("sub-query", not hop.subquery.strip())) if absent]
        if missing:
            return f"hop {hop.hop} records no {' and no '.join(missing)}"
    return ""


def _passage(item: EvidenceView) -> str:
    return f"{item.title}. {item.text}"


def _states(text: str, finding: str) -> bool:
    """Whether a text states the finding in any wording: all its numerals, and its value —
    one of its names whole (a reader may wrap the value in words of its own: "The
    passages point to X."), or, a finding without a name, its numerals (the words around
    a number may be the reader's: "The passages point to $72,641."), or, a finding
    without either, two thirds of its content stems (every one of a finding of one or
    two words)."""
    numerals = cw.numerals(finding)
    if not numerals <= cw.numerals(text):
        return False
    have = cw.content_stems(text)
    named = [cw.content_stems(n) for n in cw.names(finding)]
    if any(named):
        return any(n and n <= have for n in named)
    if numerals:
        return True
    wanted = cw.content_stems(finding)
    needed = len(wanted) if len(wanted) <= 2 else math.ceil(2 * len(wanted) / 3)
    return len(wanted & have) >= needed


def _name_stems(text: str) -> set[str]:
    return set().union(*(cw.content_stems(n) for n in cw.names(text)))


def _relation_stems(text: str) -> set[str]:
    """A question's or sub-query's content stems outside its names and kind words."""
    return cw.content_stems(text) - _name_stems(text) - _KIND_WORDS


def _entities(finding: str) -> set[frozenset[str]]:
    """The entities a finding names, as stem sets (a date or a number is none). A check
    that reads a finding as the one entity a hop found cannot read a sentence that names
    several ("X is a 1994 film directed by Y."): which is the value, position does not
    tell."""
    return {frozenset(cw.content_stems(n)) for n in cw.names(finding) if not cw.numerals(n)}


def _abstain(why: str) -> Verdict:
    return [], f"abstains: {why}"


def support(req: CheckRequest) -> Verdict:
    judged = 0
    for hop in _kept(req):
        read = _read(hop)
        if not _claims(hop.finding) or not read:
            continue
        judged += 1
        stating = [e for e in read if _states(_passage(e), hop.finding)]
        if not stating:
            return [hop.hop], f"hop {hop.hop}: no passage it read states {hop.finding!r}"
        named = [cw.content_stems(n) for n in cw.names(hop.subquery)]
        if named and not any(n <= cw.content_stems(_passage(e)) for e in stating for n in named):
            return [hop.hop], (f"hop {hop.hop}: {hop.finding!r} is stated only about other "
                               f"entities than {hop.subquery!r} names")
    return ([], "") if judged else _abstain("no hop has both a finding and text it read")


def carry(req: CheckRequest) -> Verdict:
    known = cw.content_stems(req.question)
    for attempt in req.hops:  # every attempt, in order: a retry may drift as well
        for name in cw.names(attempt.subquery):
            if not cw.content_stems(name) <= known:
                return [attempt.hop], (f"hop {attempt.hop} asks about {name!r}, which neither "
                                       "the question nor an earlier hop gave")
        if attempt.retrieved and _no_note(attempt) and not _read(attempt):
            return _abstain(f"hop {attempt.hop} records neither its finding nor the text it "
                            "read: what a later hop may name is unknown")
        seen = " ".join([attempt.finding, attempt.reason, *map(_passage, _read(attempt))])
        known |= cw.content_stems(seen)
    return [], ""


def _about(item: EvidenceView, stems: set[str]) -> bool:
    """Whether an item is about what the stems name: its title holds them (an untitled
    item: its first sentence)."""
    head = item.title or next(iter(cw.sentences(item.text)), "")
    return stems <= cw.content_stems(head)


def bridge(req: CheckRequest) -> Verdict:
    judged = 0
    for hop, following in itertools.pairwise(req.hops):
        stems = cw.content_stems(hop.finding)
        # Items the trace records something of (a foreign span may log an id alone).
        shown = [item for item in following.retrieved if (item.title + item.text).strip()]
        if (following.hop != hop.hop + 1 or not _claims(hop.finding)
                or len(_entities(hop.finding)) > 1
                or not stems <= cw.content_stems(following.subquery) or not shown):
            continue
        judged += 1
        if not any(_about(item, stems) for item in shown):
            return [hop.hop], (f"hop {hop.hop}'s finding {hop.finding!r} leads nowhere: hop "
                               f"{following.hop} asks about it and retrieves nothing about it")
    return ([], "") if judged else _abstain("no hop asks about a one-entity finding before it")


def _values(sentence: str, kind: str, subject: set[str]) -> set[str]:
    """The values of a kind a sentence states: numerals (not its years) for a number,
    years for a date, names outside the subject's words for an entity."""
    if kind == "number":
        return cw.numerals(sentence) - cw.years(sentence)
    if kind == "date":
        return cw.years(sentence)
    return {n for n in cw.names(sentence) if not cw.content_stems(n) & subject}


def _statements(items: Iterable[EvidenceView], relation: set[str], kind: str,
                subject: set[str]) -> list[tuple[EvidenceView, str, str]]:
    """(item, sentence, value) for each sentence stating exactly one value of the kind
    with one of the relation's words, and no mark of a former value."""
    found = []
    for item in items:
        for sentence in cw.sentences(item.text):
            stems = cw.content_stems(sentence)
            values = _values(sentence, kind, subject)
            if stems & relation and not stems & _FORMER and len(values) == 1:
                found.append((item, sentence, values.pop()))
    return found


def _disagree(a: tuple[EvidenceView, str, str], b: tuple[EvidenceView, str, str],
              relation: set[str]) -> bool:
    (item_a, said_a, value_a), (item_b, said_b, value_b) = a, b
    if item_a.id == item_b.id or cw.covers(value_a, value_b) or cw.covers(value_b, value_a):
        return False
    if not cw.content_stems(said_a) & cw.content_stems(said_b) & relation:
        return False
    dated_a, dated_b = cw.years(said_a) - {value_a}, cw.years(said_b) - {value_b}
    return not (dated_a and dated_b and dated_a != dated_b)


def conflict(req: CheckRequest) -> Verdict:
    seen: dict[str, EvidenceView] = {}
    kept = {h.hop: h for h in _kept(req)}
    for attempt in req.hops:
        seen.update((item.id, item) for item in attempt.retrieved if item.id not in seen)
        hop = kept[attempt.hop]
        if attempt is not hop or not _claims(hop.finding):
            continue
        subject, relation = _name_stems(hop.subquery), _relation_stems(hop.subquery)
        if not subject or not relation:
            continue
        # Items whose (non-empty) title names nothing but the subject.
        about = [e for e in seen.values() if set() < cw.content_stems(e.title) <= subject]
        said = _statements(about, relation, cw.value_kind(hop.finding), subject)
        for i, first in enumerate(said):
            for second in said[i + 1:]:
                if _disagree(first, second, relation):
                    return [hop.hop], (f"hop {hop.hop}: {first[0].id} says {first[1]!r}, "
                                       f"{second[0].id} says {second[1]!r}")
    return [], ""


def _stating(hop: TracedHop) -> list[str]:
    """The sentences the hop read that state its finding (none for a finding that
    claims nothing)."""
    if not _claims(hop.finding):
        return []
    return [s for e in _read(hop) for s in cw.sentences(e.text) if _states(s, hop.finding)]


def relation(req: CheckRequest) -> Verdict:
    flagged = []
    for hop in _kept(req):
        asked = _relation_stems(hop.subquery)
        stating = _stating(hop)
        if asked and stating and not any(asked & cw.content_stems(s) for s in stating):
            flagged.append(hop.hop)
    return flagged, (f"hops {flagged}: no sentence read that states the finding has a "
                     "relation word of the sub-query" if flagged else "")


def _alike(a: str, b: str) -> bool:
    """Stems of one word family: equal, or sharing an opening of 4+ letters that is two
    thirds of the shorter ("direct" / "director", "writer" / "written")."""
    if a == b:
        return True
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
    return shared >= 4 and 3 * shared >= 2 * min(len(a), len(b))


def complete(req: CheckRequest) -> Verdict:
    kept = _kept(req)
    if not any(h.subquery.strip() for h in kept):
        return _abstain("the trace records no sub-query")
    if missing := _unrecorded(kept):
        return _abstain(f"{missing}: what the findings rest on is unknown")
    words = cw.content_stems(" ".join([req.question, *(h.finding for h in kept)]))
    if not all(any(_alike(w, q) for q in words)
               for h in kept for w in _relation_stems(h.subquery)):
        return _abstain("the sub-queries are not in the question's words: what a sub-query "
                        "asked cannot be told from its words")
    parts = _relation_stems(req.question) - cw.type_words(req.question)
    # What a finding rests on: the sentences stating it, and the reader's stated reason.
    stated = cw.content_stems(" ".join(
        " ".join([*_stating(h), h.reason]) if _claims(h.finding) else "" for h in kept))
    open_ = sorted(w for w in parts if not any(_alike(w, s) for s in stated))
    if not open_:
        return [], ""
    # A sub-query that repeats every part of the question asks for no part of its own;
    # where every hop did, the first one asked every part.
    question = cw.content_stems(req.question)
    asking = [h for h in kept if not question <= cw.content_stems(h.subquery)] or kept[:1]
    asked = {w: h.hop for h in reversed(asking) for w in open_
             if any(_alike(w, a) for a in cw.content_stems(h.subquery))}
    never = [w for w in open_ if w not in asked]
    if never:
        return [len(kept) + 1], f"no hop asked about {', '.join(never)!r} of the question"
    hop = min(asked.values())
    return [hop], (f"hop {hop} asked about {', '.join(w for w in open_ if asked[w] == hop)!r}"
                   " and no text it rests on states it")


def _wrong_kind(hop: TracedHop) -> str:
    """What the finding is, when it is not the person or place asked ("" otherwise)."""
    if cw.value_kind(hop.finding) != "entity":
        return f"a {cw.value_kind(hop.finding)}"
    if any(cw.used_as_modifier(hop.finding, e.text) for e in _read(hop)):
        return "a word that describes (not names) something"
    return ""


def kind(req: CheckRequest) -> Verdict:
    kept = _kept(req)
    judged = 0
    for hop in kept:
        # The question judges the last hop only when its finding became the answer ("Who
        # is younger, A or B?" asks a person; its last hop may look up a nationality).
        answered = hop is kept[-1] and cw.covers(req.answer, hop.finding)
        asked = cw.asks_whom_or_where(hop.subquery) or (
            cw.asks_whom_or_where(req.question) if answered else "")
        if not asked or not _claims(hop.finding):
            continue
        judged += 1
        if wrong := _wrong_kind(hop):
            return [hop.hop], (f"hop {hop.hop} was to find a {asked}; {hop.finding!r} is "
                               f"{wrong}")
    return ([], "") if judged else _abstain("no hop asks for a person or a place")


def _opening_name(item: EvidenceView) -> set[str]:
    """The stems of the name an item's text opens with (what the passage is about)."""
    first = next(iter(cw.sentences(item.text)), "")
    found = cw.names(first)
    return cw.content_stems(found[0]) if found and first.startswith(found[0]) else set()


def _states_a_figure(finding: str) -> bool:
    """Whether a finding gives a number or a date outside parentheses ("Port Mira has about
    52,000 people."): it states a figure about the entity it names, which is no echo of
    it. (In parentheses a number is the entity's own dates: "Bo Vel (1901 - 1950)".)"""
    return bool(cw.numerals(re.sub(r"\([^)]*\)", " ", finding)))


def echo(req: CheckRequest) -> Verdict:
    if cw.offers_choice(req.question):
        return _abstain("the question offers a choice: a hop may name one of them")
    judged = 0
    for hop in _kept(req):
        subjects = [s for s in map(cw.content_stems, cw.names(hop.subquery)) if len(s) >= 2]
        entities = _entities(hop.finding)
        if (not subjects or not _claims(hop.finding) or len(entities) > 1
                or _states_a_figure(hop.finding)):
            continue
        judged += 1
        openings = [o for o in map(_opening_name, _read(hop)) if o]
        value = set(next(iter(entities), frozenset()))
        if value and (any(s <= value or value <= s for s in subjects)
                      and any(value <= o or o <= value for o in openings)):
            return [hop.hop], (f"hop {hop.hop} found {hop.finding!r}: the name the passage "
                               f"it read opens with, the entity {hop.subquery!r} asks about")
    return ([], "") if judged else _abstain("no hop names an entity of two or more words and "
                                            "finds one entity")


def answer_type(req: CheckRequest) -> Verdict:
    kind = cw.asks_for(req.question)
    if kind == "entity":
        return _abstain("the question asks for no number or date")
    if not cw.numerals(req.answer):
        return [0], f"the question asks for a {kind}; the answer is {req.answer!r}"
    return [], ""


def grounded(req: CheckRequest) -> Verdict:
    findings = [h.finding for h in _kept(req) if _claims(h.finding)]
    if not findings or not req.answer.strip():
        return _abstain("no finding or no answer to compare")
    if blank := [h.hop for h in _kept(req) if _no_note(h)]:
        return _abstain(f"hop {blank[0]} records no finding: the answer may be what it found")
    if cw.content_stems(req.answer) <= _YES_NO or cw.covers(req.answer, req.question):
        return _abstain("the answer is a yes or no, or a choice the question offers")
    if any(cw.covers(req.answer, f) or cw.covers(f, req.answer) for f in findings):
        return [], ""
    return [0], f"the answer {req.answer!r} is none of the hops' findings"


_CHECKS: dict[str, Callable[[CheckRequest], Verdict]] = {
    "support": support, "carry": carry, "bridge": bridge, "conflict": conflict,
    "kind": kind, "echo": echo, "relation": relation, "complete": complete,
    "answer_type": answer_type, "grounded": grounded,
}
