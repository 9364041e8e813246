"""The `extractive` backend: an offline, deterministic, rule-based reader — not a language model.

It exists so that the whole toolkit runs and is tested anywhere, with no server and no
download. It answers the same skill requests a model would get, from the same
observable inputs (question, sub-queries, evidence text, earlier findings) and never
sees a gold field (the judge's `gold_answer` is only used by diagnosers that declare
it, and this reader's judge ignores it).

How it reads:

* **sentences** are scored against the (sub-)query by the inverse-document-frequency
  weight of the query stems they contain (the passage title counts as context for its
  sentences, at half weight, since "The film was directed by …" names no subject);
* **answer type** comes from the question (yes/no, choice between two named options,
  date, number, person, place, other entity);
* **span extraction** takes, from the best sentences, the span of that type that is
  new (not already in the query or earlier findings) and nearest the matched words; a
  sentence with a negation ("not", "no", "never", "… is false") states no fact and is
  skipped;
* **bridge entities** are the new spans found at intermediate hops;
* **planning** issues the question itself first, then the last finding plus the
  question's unresolved relation words; choice and yes/no questions get one hop per
  option; it answers once every relation of the question is resolved and the answer
  type is satisfied. A sub-query that asks only for a type ("Parma city") is settled
  by the named entity's own article saying it is one (`_type_confirmed`), so a question
  stops when it is answered, not when the hop budget ends. The question's relation
  words form phrases ("alma mater"); a hop whose sentence matched none of them still
  resolved one — the phrase nearest the part of the question already resolved, since
  in a nested English question each relation attaches to the phrase next to it;
* **VERIFY** (the read's support) judges as a reader does, from the sub-query, the
  finding and the selected sentence only (`verify`): `unsupported` when the sentence is
  about another entity than the one the sub-query names (read in its passage, whose
  title is its subject) or does not state the finding; `supported` when it also states
  half the sub-query's relation words or more; `partial` otherwise. It never tests a
  property of how faults are made (a word shared with the question's names, two
  passages with one title): `summary.verify` reports its false alarms on clean hops
  and its detection per fault;
* **retries** (a plan request with `retry`): the first sub-query whose content words
  differ from every failed attempt's — the one it would plan from the hops before; that
  one with its relation words said another way (another word of the same group); its
  entity and relation words alone; the entity's name alone — or it answers with what it
  has. Only observable inputs: never gold;
* **support and confidence** come from the share of query weight the chosen sentence
  matched; **used ids** are the evidence items the answer was drawn from;
* **single-shot answers** (one answer call over one retrieved context) read that context
  hop by hop — the planner and reader above, over the same passages, no retrieval
  between steps — as a language model reasons within its context;
* **consistency checks** are not this reader's: the `consistency` diagnoser runs its own
  rules (`cuer_agent.diagnosers._checks`) when the backend is this reader, so the judge
  neither lives with nor shares a version with the judged.

Stems use a 5-letter prefix plus one table of English relation words
(`_reading.RELATION_GROUPS`: born/birth/birthplace, wrote/written/author …), each group with its
reason — general morphology and dictionary synonyms, never a data set's or the synthetic
generator's phrasing. `ExtractiveBackend(relation_table=False)` reads without it (the
ablation `summary.reader` reports); the backend's `version` (a hash of these rules and
tables) is part of every cache key, so an edited reader never gets old answers.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cuer_agent.llm import _text as tx
from cuer_agent.llm._compare import attribute_words, compare, options
from cuer_agent.llm._questions import residual, words_with_stems
from cuer_agent.llm._reading import (
    GROUP_WORDS,
    RELATION_GROUPS,
    TYPE_NOUNS,
    Hit,
    confidence,
    extract,
    norm,
    quote,
    readings,
    relation_group,
    relation_table,
    score_sentences,
    stems,
    type_kind,
    verify,
    wh_type_nouns,
)
from cuer_agent.llm.backends import BackendReply, register_backend
from cuer_agent.llm.skills import (
    AnswerRequest,
    AnswerResponse,
    EvidenceView,
    HopView,
    JudgeRequest,
    JudgeResponse,
    PlanRequest,
    PlanResponse,
    ReadRequest,
    ReadResponse,
)


def plan(req: PlanRequest) -> PlanResponse:
    if req.retry:
        return _replan(req)
    qt = tx.question_type(req.question)
    history = req.history
    if qt.kind in {"choice", "yesno"} and (opts := options(req.question, qt)):
        if len(history) < len(opts):
            attr = attribute_words(req.question, opts)
            opt = opts[len(history)]
            return PlanResponse(action="search", subquery=f"{opt} {attr}".strip(),
                                reason=f"look up option {len(history) + 1}: {opt}")
        return PlanResponse(action="answer", reason="every option looked up")
    if not history:
        return PlanResponse(action="search", subquery=req.question,
                            reason="start from the question")
    last = history[-1]
    if not last.finding:
        return PlanResponse(action="answer", reason="the last hop found nothing to follow")
    unresolved = residual(req.question, history)
    type_nouns = wh_type_nouns(req.question)
    typed = bool(type_nouns & stems(last.reason)) or _finding_has_type(last.finding, qt.kind)
    if not unresolved and (typed or not type_nouns):
        return PlanResponse(action="answer", reason="every question word is matched")
    words = (words_with_stems(req.question, unresolved) if unresolved
             else " ".join(sorted(type_nouns)))
    return PlanResponse(action="search", subquery=f"{last.finding} {words}".strip(),
                        reason=f"follow {last.finding}")


def _replan(req: PlanRequest) -> PlanResponse:
    """A retry: ask for the same hop differently from every failed attempt.

    In order, the first sub-query whose content words differ from each failed attempt's:
    the sub-query this planner would plan from the hops before (a failed attempt may not
    have asked it); that sub-query with its relation words said another way (a word of
    the same `RELATION_GROUPS` group); its entity and relation words alone (type nouns and
    question words dropped); the entity's name alone (read what its passage says). If
    none is new, it answers with what it has.
    """
    tried = [_bag(a.subquery) for a in req.retry]
    planned = plan(req.model_copy(update={"retry": ()}))
    base = planned.subquery if planned.action == "search" else req.retry[-1].subquery
    options = (
        (planned.subquery if planned.action == "search" else "", "ask as planned"),
        (_reword(base), "say the relation another way"),
        (_entity_and_relation(base), "ask for the entity and relation only"),
        (_names(base), "ask for the entity alone"),
    )
    for subquery, why in options:
        if subquery.strip() and _bag(subquery) not in tried:
            return PlanResponse(action="search", subquery=subquery, reason=f"retry: {why}")
    return PlanResponse(action="answer", reason="no other way to ask")


def _bag(text: str) -> frozenset[str]:
    return frozenset(tx.content_words(text))


def _reword(query: str) -> str:
    """The query with each relation word replaced by another word of its group."""
    present = set(tx.words(query))
    out, changed = [], False
    for word in re.findall(r"\w+|\W+", query):
        group = relation_group(word.lower())
        if group is not None:
            other = next((w for w in GROUP_WORDS[group]
                          if w != word.lower() and w not in present), None)
            if other is not None:
                out.append(other)
                changed = True
                continue
        out.append(word)
    return "".join(out) if changed else ""


def _entity_and_relation(query: str) -> str:
    """The query's content words without type nouns or question words (a capitalised
    word is part of a name and stays)."""
    kept = [w for w in re.findall(r"\w+", query)
            if w.lower() not in tx.STOPWORDS and (w.lower() not in TYPE_NOUNS or w[0].isupper())]
    return " ".join(dict.fromkeys(kept))


def _names(query: str) -> str:
    """The names in the query (its capitalised spans), once each."""
    return " ".join(dict.fromkeys(span.text for span in tx.capitalized_spans(query)))


def _finding_has_type(finding: str, kind: str) -> bool:
    if kind == "date":
        return bool(tx.DATE_RE.search(finding))
    if kind == "number":
        return bool(tx.NUMBER_RE.search(finding))
    return False


def read(req: ReadRequest) -> ReadResponse:
    """Pick the best sentence for the sub-query and the new span it offers (reading 0), or
    the `req.reading`-th alternative to it (`_alternative`).

    Intermediate hops look for a bridge entity; the question's own answer type (date,
    number) wins when its sentence leaves no question word unmatched.
    """
    known = " ".join([req.question if req.hop > 1 else ""] + [h.finding for h in req.history])
    used = frozenset(h.reason.split(": ", 1)[-1] for h in req.history if h.reason)
    scored = score_sentences(req.subquery, req.evidence)  # once: every reading below uses it
    best = _best(req, known, used, scored)
    return best if not req.reading else _alternative(req, best, known, used, scored)


def _best(req: ReadRequest, known: str, used: frozenset[str], scored: list[Hit]
          ) -> ReadResponse:
    """The reader's own reading of the evidence."""
    if (confirmed := _type_confirmed(req.subquery, scored)) is not None:
        name, own = confirmed
        return _reading_of(req, name, own)
    finding, hit = extract(req.subquery, req.evidence, "entity", known, used, named_first=True,
                           scored=scored)
    final_kind = tx.question_type(req.question).kind
    if final_kind in {"date", "number"}:
        typed, typed_hit = extract(req.subquery, req.evidence, final_kind, known, used,
                                   named_first=True, scored=scored)
        if typed_hit is not None and (hit is None or _completes(req, typed_hit)):
            finding, hit = typed, typed_hit
    if hit is None:
        return ReadResponse(selected_ids=[], finding="", support="unsupported",
                            confidence=0.05, reason="no sentence matches the sub-query")
    return _reading_of(req, finding, hit)


def _alternative(req: ReadRequest, best: ReadResponse, known: str, used: frozenset[str],
                 scored: list[Hit]) -> ReadResponse:
    """The `req.reading`-th alternative reading: the spans the reader would take next
    (`readings`: entities, then the question's date or number when it asks one), each
    finding once and never the best reading's. None left: an empty, unsupported reading
    that says so."""
    kinds = ["entity", *{"date", "number"} & {tx.question_type(req.question).kind}]
    seen, left = {norm(best.finding)}, req.reading
    for kind in kinds:
        for finding, hit in readings(req.subquery, req.evidence, kind, known, used,
                                     named_first=True, scored=scored):
            if norm(finding) in seen:
                continue
            seen.add(norm(finding))
            left -= 1
            if not left:
                return _reading_of(req, finding, hit)
    return ReadResponse(selected_ids=[], finding="", support="unsupported", confidence=0.05,
                        reason=f"no reading {req.reading} of this evidence: the reader has "
                               f"{req.reading - left} other")


def _reading_of(req: ReadRequest, finding: str, hit: Hit) -> ReadResponse:
    return ReadResponse(selected_ids=[hit.ev.id], finding=finding,
                        support=verify(req.subquery, finding, hit),
                        confidence=confidence(hit, req.subquery), reason=quote(hit))


def _type_confirmed(subquery: str, scored: list[Hit]) -> tuple[str, Hit] | None:
    """A sub-query that names one entity and asks only its type ("Port Stouvoll city": how
    the planner checks an answer's type) is read as that check. The best sentence about the
    entity that names a type settles it, by the first type it names (what it says the
    entity is): the asked type ("Port Stouvoll is a city …") — the entity is the answer;
    another type ("Tolmere is a city located in the country of Varenia", asked for a
    country) — None: read on, the answer is further on. Only the entity's own
    article counts (its title is the name); one that names no type leaves the entity as it
    was (what it is not said to be, it is not shown not to be); without its article in
    view nothing is settled (None)."""
    words = subquery.rstrip(" ?").split()
    asked = set()
    while words and words[-1].lower() in TYPE_NOUNS:
        asked.add(words.pop().lower())
    name = " ".join(words)
    named = set(tx.content_words(name))
    if not asked or not named or not all(w[:1].isupper() for w in words):
        return None
    own = [hit for hit in scored[:12] if hit.score > 0 and not tx.negated(hit.sentence)
           and tx.words(hit.ev.title) == tx.words(name)]  # its own article's sentences
    kinds = {type_kind(noun) for noun in asked}
    for hit in own:
        # The first type noun is what the sentence says the entity is; later ones belong
        # to what it is related to ("a city located in the country of Varenia").
        said = next((w for w in tx.words(hit.sentence) if w in TYPE_NOUNS), None)
        if said is not None:
            return (name, hit) if type_kind(said) in kinds else None
    return (name, own[0]) if own else None


def _completes(req: ReadRequest, hit: Hit) -> bool:
    """Does this sentence leave no question word unmatched (so this is the last hop)?"""
    hop = HopView(hop=req.hop, subquery=req.subquery, reason=quote(hit))
    return not residual(req.question, (*req.history, hop))


def answer(req: AnswerRequest) -> AnswerResponse:
    qt = tx.question_type(req.question)
    evidence = _dedupe(ev for hop in req.hops for ev in hop.evidence)
    if qt.kind in {"choice", "yesno"}:
        return compare(req.question, qt, evidence)
    last = req.hops[-1] if req.hops else None
    agentic = len(req.hops) > 1 or (last is not None and last.subquery != req.question)
    if agentic and last is not None and last.finding:
        used = [ev.id for hop in req.hops for ev in hop.evidence]
        return AnswerResponse(answer=_year_only(req.question, last.finding),
                              confidence=_hop_confidence(req.hops),
                              used_ids=list(dict.fromkeys(used)),
                              rationale=f"followed {len(req.hops)} hop(s) to {last.finding}")
    if not agentic:  # one call over a context: read it hop by hop, as a model would
        hops = _read_in_context(req.question, evidence)
        if hops:
            used = [ev.id for hop in hops for ev in hop.evidence]
            return AnswerResponse(answer=_year_only(req.question, hops[-1].finding),
                                  confidence=_hop_confidence(hops),
                                  used_ids=list(dict.fromkeys(used)),
                                  rationale=f"read {len(hops)} step(s) to {hops[-1].finding}")
    kind = qt.kind if qt.kind in {"date", "number"} else "entity"
    span, hit = extract(req.question, evidence, kind)
    span = _year_only(req.question, span)
    if hit is None:
        return AnswerResponse(answer="", confidence=0.05, used_ids=[],
                              rationale="no evidence sentence matches the question")
    return AnswerResponse(answer=span, confidence=confidence(hit, req.question),
                          used_ids=[hit.ev.id], rationale=hit.sentence)


CONTEXT_READS = 4
"""Steps a single-shot answer may read through its context (the synthetic world's
longest questions have four hops)."""


def _read_in_context(question: str,
                     evidence: tuple[EvidenceView, ...]) -> tuple[HopView, ...]:
    """The steps of reading one context for a multi-hop question: plan the next
    sub-question from what was found, read it off the same passages (`plan` and `read`,
    the agent's own skills, with no retrieval between them), until the planner answers
    or a step finds nothing. One answer call; the passages never change."""
    history: list[HopView] = []
    for step in range(1, CONTEXT_READS + 1):
        planned = plan(PlanRequest(question=question, hop=step, hop_budget=CONTEXT_READS,
                                   history=tuple(history)))
        if planned.action != "search":
            break
        found = read(ReadRequest(question=question, hop=step, subquery=planned.subquery,
                                 evidence=evidence, history=tuple(history)))
        if not found.finding:
            break
        chosen = tuple(ev for ev in evidence if ev.id in found.selected_ids)
        history.append(HopView(hop=step, subquery=planned.subquery, finding=found.finding,
                               support=found.support, reason=found.reason, evidence=chosen))
    return tuple(history)


def _year_only(question: str, span: str) -> str:
    """ "In what year …?" asks for the year of a full date."""
    year = tx.YEAR_RE.search(span)
    if year and re.search(r"\b(what|which) year\b", question, re.I):
        return year.group(1)
    return span


def _hop_confidence(hops: tuple[HopView, ...]) -> float:
    value = {"supported": 0.9, "partial": 0.6, "unsupported": 0.3, "unknown": 0.5}
    conf = 1.0
    for hop in hops:
        conf *= value.get(hop.support, 0.5)
    return round(max(0.05, min(0.95, conf)), 4)


def _dedupe(items: Any) -> tuple[EvidenceView, ...]:
    seen: dict[str, EvidenceView] = {}
    for ev in items:
        seen.setdefault(ev.id, ev)
    return tuple(seen.values())


def judge(req: JudgeRequest) -> JudgeResponse:
    """Rule-based stand-in for an LLM judge: blames the first hop whose evidence or
    finding is missing or unsupported; else the answer level."""
    for hop in req.hops:
        if not hop.evidence:
            return JudgeResponse(stage="retrieval", hop=hop.hop, rationale="empty evidence")
        if not hop.finding or hop.support == "unsupported":
            return JudgeResponse(stage="retrieval", hop=hop.hop,
                                 rationale="the hop found nothing supported")
    return JudgeResponse(stage="answer", hop=0, rationale="every hop looks supported")


_SKILLS = {"plan": plan, "read": read, "answer": answer, "judge": judge}
READER_MODULES = ("extractive.py", "_reading.py", "_text.py", "_compare.py", "_questions.py")
"""The reader's rules: the files whose bytes its version hashes."""


def rules_version(relation_table: bool = True, root: Path | None = None) -> str:
    """A hash of the reader's rules and tables (the source of `READER_MODULES` in `root`,
    by default this package; the live relation table; whether it is on): part of every
    cache key, so an edited reader is never served an old reader's answers."""
    digest = hashlib.sha256()
    for name in READER_MODULES:
        digest.update(((root or Path(__file__).parent) / name).read_bytes())
    digest.update(json.dumps(RELATION_GROUPS).encode("utf-8"))
    digest.update(b"table" if relation_table else b"no-table")
    return digest.hexdigest()[:16]


class ExtractiveBackend:
    """Rule-based reader behind the backend protocol; makes no network calls.
    `relation_table=False` reads with 5-letter prefixes only (the ablation)."""

    name = "extractive"
    deterministic = True
    """The same request always gets the same reply (`SkillClient.repeatable`)."""

    def __init__(self, model: str = "rules-v1", relation_table: bool = True) -> None:
        self.model = model
        self.relation_table = relation_table
        self.version = rules_version(relation_table)
        """Part of the cache key (`cuer_agent.llm.cache.cache_key`)."""

    def decoding(self) -> dict[str, Any]:
        return {}

    def rereading(self, reading: int) -> dict[str, Any]:
        """The `reading`-th alternative is the `reading`-th next-best span (`_alternative`):
        deterministic, so the number alone names it."""
        return {"reading": reading, "policy": "next-best span"}

    def render(self, skill: str, request: BaseModel) -> Any:
        return request.model_dump(mode="json")

    def respond(self, skill: str, request: BaseModel, rendered: Any) -> BackendReply:
        with relation_table(self.relation_table):
            response = _SKILLS[skill](request)  # type: ignore[operator]
        return BackendReply(text=json.dumps(response.model_dump(mode="json"), sort_keys=True))

    def check(self) -> None:
        return None


@register_backend("extractive")
def make_extractive(model: str | None = None, base_url: str | None = None,
                    **_: Any) -> ExtractiveBackend:
    return ExtractiveBackend(model or "rules-v1")
