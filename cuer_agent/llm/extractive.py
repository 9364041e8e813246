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
  new (not already in the query or earlier findings) and nearest the matched words;
* **bridge entities** are the new spans found at intermediate hops;
* **planning** issues the question itself first, then the last finding plus the
  question words no earlier hop has matched; choice and yes/no questions get one hop per
  option; it answers once no question word is left unmatched and the answer type is
  satisfied, or the hop budget is spent;
* **support and confidence** come from the share of query weight the chosen sentence
  matched; **used ids** are the evidence items the answer was drawn from.

Stems use a 5-letter prefix plus a small table of English relation words (born/birth,
died/death, wrote/author …) — general morphology, not fitted to any data set.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from cuer_agent.llm import _text as tx
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

_RELATION_STEMS = {
    "born": "birth", "birthplace": "birth", "birth": "birth", "birthday": "birth",
    "died": "death", "dies": "death", "dead": "death", "death": "death",
    "wrote": "write", "written": "write", "writer": "write", "author": "write",
    "authored": "write", "write": "write", "writes": "write",
    "married": "spouse", "wife": "spouse", "husband": "spouse", "spouse": "spouse",
    "founder": "found", "founded": "found", "founding": "found", "established": "found",
    "headquarters": "headq", "headquartered": "headq", "based": "headq",
    "studied": "educ", "educated": "educ", "graduated": "educ", "alma": "educ",
    "attended": "educ", "alumnus": "educ", "mater": "educ", "study": "educ",
    "student": "educ", "studies": "educ", "started": "found", "alumna": "educ", "education": "educ",
    "located": "locat", "situated": "locat", "location": "locat", "lies": "locat",
    "released": "relea", "release": "relea", "premiered": "relea",
    "published": "publi", "publisher": "publi", "publishing": "publi",
    "produced": "produ", "producer": "produ", "production": "produ",
    "recorded": "recor", "recording": "recor",
    "formed": "form", "formation": "form", "contains": "locat", "contain": "locat",
    "population": "peopl", "people": "peopl", "inhabitants": "peopl", "residents": "peopl",
    "live": "peopl", "lives": "peopl",
    "father": "father", "mother": "mother", "son": "child", "daughter": "child",
    "child": "child", "children": "child",
}
# Words of a wh-phrase name the answer type, not a relation a hop must resolve.
_TYPE_NOUNS = frozenset("""
country city state town county region continent place island nation person year date
film movie book album band company university name number
""".split())
_YES, _NO = "yes", "no"
# Hatnote-style sentences name a look-alike, not a fact about the subject.
_DISAMBIGUATION = re.compile(r"\b(confused with|mistaken for|unrelated to|not to be confused)\b",
                             re.I)


def stem(word: str) -> str:
    return _RELATION_STEMS.get(word, tx.stem(word))


def stems(text: str) -> set[str]:
    return {stem(w) for w in tx.content_words(text)}


def wh_type_nouns(question: str) -> set[str]:
    """Type nouns in the question's wh-phrase ("In which country …" → {country})."""
    m = re.search(r"\b(?:which|what)\s+(\w+)", question.lower())
    return {m.group(1)} if m and m.group(1) in _TYPE_NOUNS else set()


@dataclass(frozen=True)
class Hit:
    """A scored sentence."""

    score: float
    ev: EvidenceView
    sentence: str
    order: int
    matched: frozenset[str]


def score_sentences(query: str, evidence: tuple[EvidenceView, ...]) -> list[Hit]:
    """Sentences of the evidence, best first, scored by idf-weighted query-stem overlap.

    The passage title is context for each of its sentences ("The film was directed by …"
    names no subject): its query stems count in full when the query names the whole
    title — the passage is about the entity asked for — and at half weight otherwise, so
    a confuser sharing one name part does not outrank the entity itself.
    """
    qstems = stems(query)
    rows: list[tuple[EvidenceView, str, set[str], set[str]]] = []
    for ev in evidence:
        title = stems(ev.title)
        for sent in tx.split_sentences(ev.text):
            rows.append((ev, sent, stems(sent), title))
    df = Counter(w for _, _, s, t in rows for w in s | t)
    n = max(len(rows), 1)
    weight = {w: math.log(1.0 + n / df[w]) if df[w] else math.log(1.0 + n) for w in qstems}
    hits: list[Hit] = []
    for order, (ev, sent, sst, title) in enumerate(rows):
        named = bool(title) and title <= qstems
        in_title = qstems & title
        in_text = (qstems & sst) - in_title
        # fsum: exact, so the score cannot depend on set iteration order (hash seed).
        score = math.fsum(weight[w] for w in in_text)
        score += (1.0 if named else 0.5) * math.fsum(weight[w] for w in in_title)
        hits.append(Hit(score, ev, sent, order, frozenset(in_text | in_title)))
    hits.sort(key=lambda h: (-h.score, h.order))
    return hits


def candidates(sentence: str, kind: str) -> list[tx.Span]:
    if kind == "date":
        return tx.date_spans(sentence)
    if kind == "number":
        return tx.number_spans(sentence)
    # Entities start with a letter and have two characters or more ("R&B" → not "R").
    return [s for s in tx.capitalized_spans(sentence) if s.text[0].isalpha() and len(s.text) > 1]


def _is_new(span: str, known: set[str]) -> bool:
    return not set(tx.words(span)) <= known


def extract(query: str, evidence: tuple[EvidenceView, ...], kind: str,
            known_text: str = "", used: frozenset[str] = frozenset(), *,
            named_first: bool = False) -> tuple[str, Hit | None]:
    """The best new span of `kind` for the query, and the sentence it came from.

    Sentences in `used` (quoted by earlier hops) are skipped, so hops do not loop. With
    `named_first`, passages whose title the query names are read before the others —
    a hop's reader reads the article about the entity it was asked about.
    """
    known = set(tx.words(query)) | set(tx.words(known_text))
    hits = score_sentences(query, evidence)
    if named_first:
        qstems = stems(query)
        hits.sort(key=lambda h: not (stems(h.ev.title) and stems(h.ev.title) <= qstems))
    for hit in hits[:12]:
        if hit.score <= 0:
            continue
        if hit.sentence in used or _DISAMBIGUATION.search(hit.sentence):
            continue
        spans = [s for s in candidates(hit.sentence, kind) if _is_new(s.text, known)]
        if not spans:
            continue
        anchors = _anchors(hit)
        best = min(spans, key=lambda s: (min((abs(s.start - a) for a in anchors), default=0),
                                          s.start))
        return best.text, hit
    return "", None


def _anchors(hit: Hit) -> list[int]:
    """Positions of the matched relation words (lower-case in the sentence: "directed",
    "born"); names are not anchors, since the finding is what the sentence says *about*
    the name. Falls back to every matched word."""
    relation, every = [], []
    for m in re.finditer(r"\w+", hit.sentence):
        if stem(m.group(0).lower()) in hit.matched:
            every.append(m.start())
            if m.group(0)[0].islower():
                relation.append(m.start())
    return relation or every


def _confidence(hit: Hit | None, query: str) -> float:
    if hit is None:
        return 0.05
    share = len(hit.matched) / max(len(stems(query)), 1)
    return round(min(0.95, max(0.05, 0.2 + 0.75 * share)), 4)


# --- skills ---------------------------------------------------------------------------------

def plan(req: PlanRequest) -> PlanResponse:
    qt = tx.question_type(req.question)
    history = req.history
    if qt.kind in {"choice", "yesno"} and (opts := _options(req.question, qt)):
        if len(history) < len(opts):
            attr = _attribute_words(req.question, opts)
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
    residual = _residual(req.question, history)
    type_nouns = wh_type_nouns(req.question)
    typed = bool(type_nouns & stems(last.reason)) or _finding_has_type(last.finding, qt.kind)
    if not residual and (typed or not type_nouns):
        return PlanResponse(action="answer", reason="every question word is matched")
    words = _words_with_stems(req.question, residual) if residual else " ".join(sorted(type_nouns))
    return PlanResponse(action="search", subquery=f"{last.finding} {words}".strip(),
                        reason=f"follow {last.finding}")


def _residual(question: str, history: tuple[HopView, ...]) -> set[str]:
    """Question stems no hop's chosen sentence has matched. Type nouns ("the country
    that…", "which city") and "how many/much" name kinds of answer, not relations."""
    wanted = stems(question) - {stem(w) for w in _TYPE_NOUNS | {"many", "much"}}
    for hop in history:
        wanted -= stems(hop.reason) | stems(hop.finding)
    return wanted


def _words_with_stems(question: str, wanted: set[str]) -> str:
    """The question's own words (in order, once each) whose stems are in `wanted`."""
    kept = [w for w in tx.content_words(question) if stem(w) in wanted]
    return " ".join(dict.fromkeys(kept))


def _finding_has_type(finding: str, kind: str) -> bool:
    if kind == "date":
        return bool(tx.DATE_RE.search(finding))
    if kind == "number":
        return bool(tx.NUMBER_RE.search(finding))
    return False


def _options(question: str, qt: tx.QuestionType) -> tuple[str, ...]:
    if qt.options:
        return qt.options
    m = re.search(r"\bboth\s+(.+?)\s+and\s+(.+?)(?:\s+(?:are|were|is|was|have|had)\b|[?,])",
                  question)
    if m:
        return (m.group(1).strip(), m.group(2).strip())
    spans = [s.text for s in tx.capitalized_spans(question)]
    return tuple(spans[:2]) if len(spans) >= 2 else ()


def _attribute_words(question: str, options: tuple[str, ...]) -> str:
    drop = set(tx.words(" ".join(options)))
    return " ".join(w for w in tx.content_words(question) if w not in drop)


def read(req: ReadRequest) -> ReadResponse:
    """Pick the best sentence for the sub-query and the new span it offers.

    Intermediate hops look for a bridge entity; the question's own answer type (date,
    number) wins when its sentence leaves no question word unmatched.
    """
    known = " ".join([req.question if req.hop > 1 else ""] + [h.finding for h in req.history])
    used = frozenset(h.reason.split(": ", 1)[-1] for h in req.history if h.reason)
    finding, hit = extract(req.subquery, req.evidence, "entity", known, used, named_first=True)
    final_kind = tx.question_type(req.question).kind
    if final_kind in {"date", "number"}:
        typed, typed_hit = extract(req.subquery, req.evidence, final_kind, known, used,
                                   named_first=True)
        if typed_hit is not None and (hit is None or _completes(req, typed_hit)):
            finding, hit = typed, typed_hit
    if hit is None:
        return ReadResponse(selected_ids=[], finding="", support="unsupported",
                            confidence=0.05, reason="no sentence matches the sub-query")
    share = len(hit.matched) / max(len(stems(req.subquery)), 1)
    support = "supported" if share >= 0.5 else "partial"
    return ReadResponse(selected_ids=[hit.ev.id], finding=finding, support=support,
                        confidence=_confidence(hit, req.subquery), reason=_reason(hit))


def _completes(req: ReadRequest, hit: Hit) -> bool:
    """Does this sentence leave no question word unmatched (so this is the last hop)?"""
    hop = HopView(hop=req.hop, subquery=req.subquery, reason=_reason(hit))
    return not _residual(req.question, (*req.history, hop))


def _reason(hit: Hit) -> str:
    """The quoted sentence, prefixed with its passage title (the sentence's context)."""
    return f"{hit.ev.title}: {hit.sentence}"


def answer(req: AnswerRequest) -> AnswerResponse:
    qt = tx.question_type(req.question)
    evidence = _dedupe(ev for hop in req.hops for ev in hop.evidence)
    if qt.kind in {"choice", "yesno"}:
        return _compare(req.question, qt, evidence)
    last = req.hops[-1] if req.hops else None
    agentic = len(req.hops) > 1 or (last is not None and last.subquery != req.question)
    if agentic and last is not None and last.finding:
        used = [ev.id for hop in req.hops for ev in hop.evidence]
        return AnswerResponse(answer=_year_only(req.question, last.finding),
                              confidence=_hop_confidence(req.hops),
                              used_ids=list(dict.fromkeys(used)),
                              rationale=f"followed {len(req.hops)} hop(s) to {last.finding}")
    kind = qt.kind if qt.kind in {"date", "number"} else "entity"
    span, hit = extract(req.question, evidence, kind)
    span = _year_only(req.question, span)
    if hit is None:
        return AnswerResponse(answer="", confidence=0.05, used_ids=[],
                              rationale="no evidence sentence matches the question")
    return AnswerResponse(answer=span, confidence=_confidence(hit, req.question),
                          used_ids=[hit.ev.id], rationale=hit.sentence)


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


def _compare(question: str, qt: tx.QuestionType,
             evidence: tuple[EvidenceView, ...]) -> AnswerResponse:
    """Choice and yes/no questions: look each option up, then compare."""
    opts = _options(question, qt)
    if len(opts) < 2:
        return AnswerResponse(answer=_NO if qt.kind == "yesno" else "", confidence=0.1,
                              used_ids=[], rationale="could not find two options")
    attr = _attribute_words(question, opts)
    kind = ("date" if qt.direction in {"earlier", "later"}
            else "number" if qt.direction else "entity")
    if qt.kind == "yesno" and re.search(r"\b(before|earlier|first|older)\b", question, re.I):
        kind = "date"
    if _AGE.search(question):
        attr = f"{attr} born"  # older/younger compare birth dates
    owns = [_own_evidence(opt, evidence) for opt in opts[:2]]
    values = [extract(f"{opt} {attr}", own, kind, opt)
              for opt, own in zip(opts, owns, strict=False)]
    used = list(dict.fromkeys(h.ev.id for _, h in values if h is not None))
    conf = round(min((_confidence(h, attr or question) for _, h in values)), 4)
    if qt.kind == "yesno":
        verdict = _yesno(question, values, kind, attr, owns)
        return AnswerResponse(answer=verdict, confidence=conf, used_ids=used,
                              rationale="; ".join(h.sentence for _, h in values if h))
    pick = _pick(opts, values, qt.direction, kind)
    return AnswerResponse(answer=pick, confidence=conf, used_ids=used,
                          rationale="; ".join(h.sentence for _, h in values if h))


_AGE = re.compile(r"\b(older|younger|oldest|youngest|elder|age)\b", re.I)


def _own_evidence(option: str, evidence: tuple[EvidenceView, ...]) -> tuple[EvidenceView, ...]:
    """The passages titled most like the option (all evidence if none shares a word)."""
    opt = set(tx.words(option))
    overlap = {ev.id: len(opt & set(tx.words(ev.title))) / max(len(set(tx.words(ev.title))), 1)
               for ev in evidence}
    best = max(overlap.values(), default=0.0)
    if best == 0:
        return evidence
    return tuple(ev for ev in evidence if overlap[ev.id] == best)


def _numeric(value: str) -> float | None:
    year = tx.YEAR_RE.search(value)
    if year:
        return float(year.group(1))
    num = tx.NUMBER_RE.search(value)
    if num:
        return float(num.group(0).replace(",", ""))
    word = value.lower().strip()
    return float(tx.NUMBER_WORDS.index(word)) if word in tx.NUMBER_WORDS else None


def _pick(opts: tuple[str, ...], values: list[tuple[str, Hit | None]], direction: str,
          kind: str) -> str:
    nums = [_numeric(v) for v, _ in values]
    if kind in {"date", "number"} and all(n is not None for n in nums[:2]):
        a, b = nums[0], nums[1]
        lower_first = direction in {"earlier", "less"}
        if a == b:
            return opts[0]
        return opts[0] if (a < b) == lower_first else opts[1]  # type: ignore[operator]
    # No comparable values: the option whose evidence matched better.
    scores = [h.score if h else 0.0 for _, h in values]
    return opts[0] if scores[0] >= scores[1] else opts[1]


def _yesno(question: str, values: list[tuple[str, Hit | None]], kind: str,
           attr: str, owns: list[tuple[EvidenceView, ...]]) -> str:
    if kind == "date":
        nums = [_numeric(v) for v, _ in values]
        if nums[0] is not None and nums[1] is not None:
            later = re.search(r"\b(after|later|younger)\b", question, re.I)
            return _YES if (nums[0] > nums[1] if later else nums[0] < nums[1]) else _NO
    if re.search(r"\bsame\b", question, re.I):
        a, b = (set(tx.content_words(v)) for v, _ in values)
        overlap = len(a & b) / max(min(len(a), len(b)), 1)
        return _YES if a and b and overlap >= 0.5 else _NO
    # "Are both X and Y <attribute>?": yes when each option's best sentence carries
    # most of the attribute words.
    wanted = stems(attr)
    if not wanted:
        return _YES
    for own in owns:
        hits = score_sentences(attr, own)
        if not hits or len(hits[0].matched & wanted) < max(1, math.ceil(len(wanted) / 2)):
            return _NO
    return _YES


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


class ExtractiveBackend:
    """Rule-based reader behind the backend protocol; makes no network calls."""

    name = "extractive"

    def __init__(self, model: str = "rules-v1") -> None:
        self.model = model

    def decoding(self) -> dict[str, Any]:
        return {}

    def render(self, skill: str, request: BaseModel) -> Any:
        return request.model_dump(mode="json")

    def respond(self, skill: str, request: BaseModel, rendered: Any) -> BackendReply:
        response = _SKILLS[skill](request)  # type: ignore[operator]
        return BackendReply(text=json.dumps(response.model_dump(mode="json"), sort_keys=True))

    def check(self) -> None:
        return None


@register_backend("extractive")
def make_extractive(model: str | None = None, base_url: str | None = None,
                    **_: Any) -> ExtractiveBackend:
    return ExtractiveBackend(model or "rules-v1")
