"""The agent answers instead of asking a sub-query again that already found something:
a model that repeats itself does not spend the rest of its hop budget reading the same."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel
from recording import Recorder
from varenia import DIRECTOR, QUESTION, example_over

from cuer_agent.data import Passage
from cuer_agent.execution import AgentConfig, Executor, RunResult
from cuer_agent.llm.backends import BackendReply, SkillClient
from cuer_agent.llm.skills import PlanRequest, PlanResponse, ReadRequest, ReadResponse
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.trace import Action

PASSAGES = (Passage(title="Quorin Rising", index=0,
                    text="Quorin Rising is a 1987 drama film. It was directed by Orlan "
                         "Vessimer."), DIRECTOR)


@dataclass
class Repeating(Recorder):
    """A planner that always asks the question again (as the 1.5B model asked "Who is the
    child of Chiang Hsiao-wen's father?" at hops 2, 3 and 4); `finds` says whether the
    reader finds anything."""

    finds: bool = True

    def respond(self, skill: str, request: BaseModel, rendered: object) -> BackendReply:
        self.requests.append((skill, request))
        if skill == "plan":
            assert isinstance(request, PlanRequest)  # later asked in other case and spacing
            asked = QUESTION if request.hop == 1 else f"  {QUESTION.lower()} "
            reply: BaseModel = PlanResponse(action="search", subquery=asked, reason="ask it")
        elif skill == "read" and not self.finds:
            assert isinstance(request, ReadRequest)
            reply = ReadResponse(finding="", selected_ids=[], support="unsupported",
                                 confidence=0.0, reason="nothing")
        else:
            return self.inner.respond(skill, request, rendered)
        return BackendReply(text=reply.model_dump_json())


def run(backend: Repeating, hop_budget: int = 4) -> RunResult:
    executor = Executor(SkillClient(backend), AgentConfig(hop_budget=hop_budget,
                                                          retries_per_hop=0))
    return executor.run(example_over(PASSAGES), BM25Retriever.from_passages(PASSAGES))


def test_a_sub_query_asked_again_after_a_finding_ends_the_run_with_an_answer() -> None:
    backend = Repeating()
    result = run(backend)
    assert [h.subquery for h in result.trace.hops] == [QUESTION]
    assert result.trace.hops[0].finding  # what the repeat would have read again
    stop = [s for s in result.trace.steps if s.action is Action.PLAN][-1]
    assert stop.hop == 2 and stop.note.startswith("answer: sub-query already asked")
    assert "at hop 1, which found" in stop.note
    assert [skill for skill, _ in backend.requests].count("read") == 1
    assert result.trace.answer  # it answered from what it had


def test_a_sub_query_that_found_nothing_may_be_asked_again() -> None:
    result = run(Repeating(finds=False), hop_budget=3)
    assert len(result.trace.hops) == 3  # nothing found: asking again is not repeating it
    assert not any("already asked" in s.note for s in result.trace.steps)
