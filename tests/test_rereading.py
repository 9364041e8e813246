"""Another reading of the same evidence (`ReadRequest.reading`, the `reread` repair): what
each reader offers, how a model is asked for it, how it is keyed and counted, and what
happens where no other reading can be had."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from fake_servers import FakeServer
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bounded_generation import backend_at, decoding

from cuer_agent.agent_context import AgentContext
from cuer_agent.agent_kit import validate_agent
from cuer_agent.data import Passage, load_dataset
from cuer_agent.interventions.repairs import get_repair
from cuer_agent.llm._reading import norm
from cuer_agent.llm._remote import REREAD_TEMPERATURE
from cuer_agent.llm.backends import BackendError, BackendReply, SkillClient
from cuer_agent.llm.extractive import ExtractiveBackend, read
from cuer_agent.llm.skills import EvidenceView, ReadRequest
from cuer_agent.retrieval import BM25Retriever

PORT_MIRA = (EvidenceView(id="a", title="Port Mira", text=(
    "Port Mira is a city in Varenia. It was founded by Anna Holt in 1820. "
    "The mayor is Bob Lund.")),)
ASKED = ReadRequest(question="Who founded Port Mira?", hop=1,
                    subquery="Who founded Port Mira?", evidence=PORT_MIRA)


def _first_hops(n: int) -> list[ReadRequest]:
    """The first hop's read request of `n` synthetic questions (top-5 BM25 evidence)."""
    dataset = load_dataset("synthetic", n=n, hops=3, seed=7)
    retriever = BM25Retriever.from_passages(dataset.corpus or [])
    return [ReadRequest(question=ex.question, hop=1, subquery=ex.question, evidence=tuple(
        EvidenceView(id=e.id, title=e.title, text=e.text)
        for e in retriever.retrieve(ex.question, 5))) for ex in dataset.examples]


def at(request: ReadRequest, reading: int) -> ReadRequest:
    return request.model_copy(update={"reading": reading})


FIRST_HOPS = _first_hops(12)
FIRST_HOPS_CORPUS = [Passage(title="Port Mira", text=PORT_MIRA[0].text, index=0)]


def test_reading_zero_is_the_readers_own_and_the_next_is_another_span() -> None:
    own, other = read(ASKED), read(at(ASKED, 1))
    assert own.finding == "Anna Holt" and own.support == "supported"
    assert other.finding == "Varenia" and other.reason.startswith("Port Mira: ")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FIRST_HOPS), st.integers(min_value=1, max_value=4))
def test_an_alternative_reading_never_repeats_an_earlier_one(request: ReadRequest,
                                                             k: int) -> None:
    findings = [norm(read(at(request, i)).finding) for i in range(k + 1)]
    offered = [f for f in findings[1:] if f]
    assert findings[0] not in offered and len(set(offered)) == len(offered)


def test_past_the_last_alternative_the_reading_is_empty_and_says_so() -> None:
    past = read(at(ASKED, 3))
    assert (past.finding, past.support, past.selected_ids) == ("", "unsupported", [])
    assert past.reason == "no reading 3 of this evidence: the reader has 2 other"


def test_the_reading_is_not_in_the_prompt_but_is_in_the_cache_key() -> None:
    client = SkillClient(ExtractiveBackend())
    own_prompt, own_key = client._prompt("read", ASKED)
    other_prompt, other_key = client._prompt("read", at(ASKED, 1))
    assert own_prompt == other_prompt and "reading" not in ASKED.model_dump_json()
    assert own_key != other_key


def test_a_remote_model_is_asked_for_another_sample_with_its_own_seed(
        server: FakeServer) -> None:
    backend = backend_at(server)
    client = SkillClient(backend)
    for reading in (0, 1, 2):
        client("read", at(ASKED, reading))
    sent = [decoding(r.body or {}) for r in server.chat_requests]
    assert [(s["temperature"], s["seed"]) for s in sent] == [
        (0.0, backend.seed), (REREAD_TEMPERATURE, backend.seed + 1),
        (REREAD_TEMPERATURE, backend.seed + 2)]
    assert len({client._prompt("read", at(ASKED, i))[1] for i in (0, 1, 2)}) == 3


@pytest.fixture(params=["openai", "ollama"])
def server(request: pytest.FixtureRequest) -> FakeServer:
    fake: FakeServer = request.getfixturevalue(f"{request.param}_server")
    return fake


class _OneReading:
    """A backend that defines no `rereading`: it has one reading only."""

    name, model = "one-reading", "m"

    def decoding(self) -> dict[str, Any]:
        return {}

    def render(self, skill: str, request: Any) -> Any:
        return request.model_dump(mode="json")

    def respond(self, skill: str, request: Any, rendered: Any) -> BackendReply:
        return BackendReply(text='{"finding": "x"}')


def test_a_backend_without_rereading_refuses_another_reading_and_the_repair_says_why() -> None:
    client = SkillClient(_OneReading())
    assert not client.rereads and SkillClient(ExtractiveBackend()).rereads
    with pytest.raises(BackendError, match="offers no alternative readings"):
        client("read", at(ASKED, 1))
    why = get_repair("reread").not_applicable(allowed=("reread",), retries=False,
                                              support=None, rereads=False)
    assert why is not None and "no alternative readings" in why


def test_requests_for_another_reading_are_counted() -> None:
    client = SkillClient(ExtractiveBackend())
    with client.collect() as asked:
        client("read", ASKED)
        client("read", at(ASKED, 1))
    assert len(asked) == 2 and asked.rereads == 1


def test_reread_asks_for_the_next_reading_at_its_hop_only() -> None:
    condition = get_repair("reread").condition(2)
    assert condition is not None
    assert [condition.reading(h) for h in (1, 2, 3)] == [0, 1, 0]
    retriever = BM25Retriever.from_passages(FIRST_HOPS_CORPUS)
    assert AgentContext(SkillClient(ExtractiveBackend()), retriever, condition).reading(2) == 1
    assert AgentContext(SkillClient(ExtractiveBackend()), retriever).reading(2) == 0


class _Deaf(AgentContext):
    """A run context whose read node never hears which reading to give."""

    def reading(self, hop: int) -> int:
        return 0


def test_an_agent_that_allows_reread_but_never_asks_for_another_reading_is_named() -> None:
    from cuer_agent.graphs import agent

    graph, spec = agent.build()
    deaf = replace(spec, context=lambda skills, retriever, condition: _Deaf(
        skills=skills, retriever=retriever, condition=condition))
    report = validate_agent(lambda: (graph, deaf), n=1, resume=False)
    assert any("the `reread` repair it allows asked the reader for no other reading" in p
               for p in report.problems)
    allowed = replace(deaf, repairs=("deeper", "replan"))
    assert validate_agent(lambda: (graph, allowed), n=1, resume=False).ok
