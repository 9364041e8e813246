"""`AgentSpec` and `--agent`: a user's LangGraph agent runs, forks and is probed through
the same executor as ours (`examples/react_agent.py` as the user's agent)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Studies, invoke
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel
from recording import Recorder

from cuer_agent.agents import load_agent
from cuer_agent.config import DEFAULT_FAULTS, PropagationConfig
from cuer_agent.data import Dataset, load_dataset
from cuer_agent.errors import ConfigError
from cuer_agent.execution import AgentConfig, Executor, RunResult, identity
from cuer_agent.interventions import get_fault
from cuer_agent.interventions.facts import fact_source
from cuer_agent.llm.backends import SkillClient
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.studies.propagation.injection import inject, prefix_skill_calls
from cuer_agent.studies.propagation.runner import _Injector, distractor_answers

ROOT = Path(__file__).resolve().parents[1]
REACT = f"{ROOT / 'examples' / 'react_agent.py'}:build"
sys.path.insert(0, str(ROOT / "examples"))
import react_agent  # noqa: E402


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_dataset("synthetic", n=10, hops=3, seed=3)


@pytest.fixture(scope="module")
def retriever(dataset: Dataset) -> BM25Retriever:
    return BM25Retriever.from_passages(dataset.corpus)


def react(recorder: Recorder | None = None) -> Executor:
    return Executor(SkillClient(recorder or Recorder()), AgentConfig(), agent=REACT)


def _messages(run: RunResult) -> str:
    return json.dumps([m.model_dump() for m in run.final_state["messages"]], sort_keys=True,
                      default=str)


# ---------------------------------------------------------------------------- forks

def test_identity_forks_of_the_react_agent_reproduce_its_runs_byte_for_byte(
        dataset: Dataset, retriever: BM25Retriever) -> None:
    executor, forks = react(), 0
    for example in dataset.examples:
        base = executor.run(example, retriever)
        for hop in range(1, len(base.trace.hops) + 1):
            for boundary in ("plan", "retrieve", "read"):
                fork = executor.fork(base, hop, boundary, identity)  # type: ignore[arg-type]
                assert fork.trace.to_json() == base.trace.to_json(), (example.id, hop, boundary)
                assert _messages(fork) == _messages(base)
                key = executor.boundary_key(base, hop, boundary)  # type: ignore[arg-type]
                assert fork.nodes_run == base.nodes_run[base.nodes_run.index(key) + 1:]
                forks += 1
    assert forks >= 10 * 3 * 2


def _hops_asked(recorder: Recorder) -> list[tuple[str, int]]:
    """(skill, hop) of every request: the hop a plan plans, a read reads (answer: 0)."""
    return [(skill, getattr(request, "hop", 0)) for skill, request in recorder.requests]


@pytest.mark.parametrize("name", DEFAULT_FAULTS)
def test_a_fault_at_hop_2_of_the_react_agent_reexecutes_only_the_suffix(
        name: str, dataset: Dataset, retriever: BM25Retriever) -> None:
    """No request about hop 1 is made again — except by a forced early stop, whose stop
    *is* the decision the ReAct model makes while reading hop 1 (one fused call)."""
    recorder = Recorder()
    executor, config, forked = react(recorder), PropagationConfig(seed=0), 0
    spec = get_fault(name)
    for example in dataset.examples:
        base = executor.run(example, retriever)
        if len(base.trace.hops) < 2:
            continue
        injector = _Injector(example, base, retriever,
                             distractor_answers(dataset, example, config.distractor_pool), config,
                             fact_source(dataset))
        inp = injector.fault_input(2, executor.config.k)
        outcome = spec.apply(inp)
        if not outcome.applied:
            continue
        recorder.requests.clear()
        fork = inject(executor, base, spec, inp, outcome, "query")
        assert prefix_skill_calls(fork, 2) == 0
        asked = _hops_asked(recorder)
        redone = [(s, h) for s, h in asked if (s == "read" and h < 2) or (s == "plan" and h < 3)]
        assert redone == ([("read", 1)] if name == "early_termination" else []), asked
        assert fork.trace.hops[0] == base.trace.hops[0]  # hop 1 as observed
        forked += 1
    assert forked >= 3


def test_probes_run_on_the_react_agent(dataset: Dataset, retriever: BM25Retriever) -> None:
    executor = react()
    example = dataset.examples[0]
    base = executor.run(example, retriever)
    assert len(base.trace.hops) == 3
    assert executor.rerun_hop(base, 2) == base.trace.hops[1]
    assert executor.reanswer(base, {}).trace.answer == base.trace.answer
    emptied = executor.reanswer(base, {1: []})
    assert emptied.trace.hops[0].retrieved == () and emptied.nodes == ["answer"]
    more = executor.continue_retrieving(base)
    assert more.trace.hops[:3] == base.trace.hops[:3]


# ---------------------------------------------------------------------------- our agent

def test_our_agent_runs_through_its_own_factory_like_any_other(
        dataset: Dataset, retriever: BM25Retriever) -> None:
    """No special path: ``--agent cuer_agent.graphs.agent:build`` is the default agent."""
    default = Executor(SkillClient(Recorder()), AgentConfig())
    named = Executor(SkillClient(Recorder()), AgentConfig(),
                     agent="cuer_agent.graphs.agent:build")
    for example in dataset.examples[:3]:
        a, b = default.run(example, retriever).trace, named.run(example, retriever).trace
        assert b.meta.pop("agent") == "cuer-agent"  # type: ignore[attr-defined]
        assert a.model_dump_json() == b.model_copy(update={"meta": {
            k: v for k, v in b.meta.items() if k != "agent"}}).model_dump_json()


def test_spent_counts_the_requests_of_the_invocation(dataset: Dataset,
                                                     retriever: BM25Retriever) -> None:
    recorder = Recorder()
    run = react(recorder).run(dataset.examples[0], retriever)
    assert run.spent["llm_calls"] == len(recorder.requests) == run.trace.cost.llm_calls


# ---------------------------------------------------------------------------- validation

class _S(BaseModel):
    pass


def _tiny_graph(checkpointer: bool = True) -> Any:
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        question: str
        hop_budget: int

    builder = StateGraph(State)
    builder.add_node("search", lambda s: {})
    builder.add_edge(START, "search")
    builder.add_edge("search", END)
    return builder.compile(checkpointer=InMemorySaver() if checkpointer else None)


BAD_SPECS = {
    "unknown node": (dict(roles={"plan": ("plan",)}), "node 'plan', which the graph does not have"),
    "unknown role": (dict(roles={"search": ("fetch",)}), "unknown role 'fetch'"),
    "unknown key": (dict(keys=("messages",)), "state key 'messages' is not in the graph"),
    "no budget key": (dict(budget_key="budget"), "state key 'budget'"),
    "bad boundary node": (dict(boundaries={**react_agent.ReactSpec().boundaries,
                                           "plan": ("retrieve", "llm")}),
                          "boundary 'plan' is written as node 'llm'"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_a_spec_that_does_not_match_its_graph_is_one_clear_error(case: str) -> None:
    from cuer_agent.agents import check_spec

    fields, message = BAD_SPECS[case]
    base = dict(roles={"search": ("retrieve", "answer")},
                boundaries={b: ("retrieve", "search") for b in ("plan", "retrieve", "read",
                                                                 "answer")},
                keys=("question",), issues_query="retrieve")
    spec = react_agent.ReactSpec(**{**base, **fields})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=message):
        check_spec(_tiny_graph(), spec)


def test_a_graph_without_a_checkpointer_is_refused() -> None:
    from cuer_agent.agents import check_spec

    spec = react_agent.ReactSpec(roles={"search": ("retrieve", "answer")},
                                 boundaries={b: ("retrieve", "search") for b in
                                             ("plan", "retrieve", "read", "answer")},
                                 keys=(), issues_query="retrieve")
    with pytest.raises(ConfigError, match="no checkpointer"):
        check_spec(_tiny_graph(checkpointer=False), spec)


@pytest.mark.parametrize(("ref", "message"), [
    ("react_agent", "expected module:factory"),
    ("no_such_module_xyz:build", "cannot import module 'no_such_module_xyz'"),
    ("examples/nothing_here.py:build", "no file examples/nothing_here.py"),
    (f"{ROOT / 'examples' / 'react_agent.py'}:nope", "has no factory 'nope'"),
    ("cuer_agent.graphs.agent:build_agent_graph", "must return \\(graph, spec\\)"),
])
def test_a_bad_agent_reference_is_one_clear_error(ref: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_agent(ref)


def test_the_cli_refuses_a_bad_agent_with_one_line_and_exit_2(tmp_path: Path) -> None:
    result = invoke(["propagate", "--out", str(tmp_path / "run"), "--n", "1",
                     "--agent", "cuer_agent.graphs.agent:nope"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "has no factory 'nope'" in lines[0]
    assert not (tmp_path / "run").exists()  # refused before any work


# ---------------------------------------------------------------------------- end to end

REACT_EVALUATE = ("evaluate", "--agent", REACT, "--hops", "3", "--n", "3")
"""3 examples: every study still runs on the agent (5 did nothing more)."""


@pytest.mark.background(REACT_EVALUATE)  # made in the background lane
def test_evaluate_runs_every_study_on_the_react_agent(studies: Studies) -> None:
    out = studies.get(*REACT_EVALUATE)  # `cuer-agent evaluate ... --no-cache --no-progress`
    for name in ("summary.json", "report.md", "report.html", "single_shot/traces.jsonl",
                 "single_shot/records.jsonl", "agentic/traces.jsonl",
                 "agentic/records.jsonl", "agentic/diagnoses.jsonl"):
        assert (out / name).stat().st_size > 0, name
    traces = [json.loads(line) for line in (out / "agentic/traces.jsonl").open()]
    assert {t["trace"]["meta"].get("agent") for t in traces} == {"react"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["agent"]["factory"] == REACT
    assert summary["ledger"]["errors"] == 0
    assert all(r["error"] == "" for r in map(json.loads, (out / "agentic/diagnoses.jsonl")
                                             .open()))
    assert "Agent under test: `" in (out / "report.md").read_text()


def test_replay_reexecutes_a_react_record(tmp_path: Path) -> None:
    out = tmp_path / "prop"
    result = invoke(["propagate", "--agent", REACT, "--n", "2", "--out", str(out),
                     "--faults", "empty_retrieval", "--no-hop-operators",
                     "--no-cache", "--no-progress"])
    assert result.exit_code == 0, result.output
    row = json.loads((out / "traces.jsonl").open().readlines()[-1])
    replayed = invoke(["replay", str(out), "--record", row["record"]["record_id"],
                       "--no-cache"])
    assert replayed.exit_code == 0, replayed.output
    assert "identical" in replayed.output


def test_replay_takes_the_agent_from_the_flag_when_its_recorded_path_moved(
        tmp_path: Path) -> None:
    out = tmp_path / "prop"
    moved = tmp_path / "elsewhere.py"
    moved.write_text((ROOT / "examples" / "react_agent.py").read_text())
    result = invoke(["propagate", "--agent", f"{moved}:build", "--n", "1",
                     "--out", str(out), "--faults", "empty_retrieval",
                     "--no-hop-operators", "--no-cache", "--no-progress"])
    assert result.exit_code == 0, result.output
    moved.unlink()
    record = json.loads((out / "traces.jsonl").open().readlines()[-1])["record"]["record_id"]
    lost = invoke(["replay", str(out), "--record", record, "--no-cache"])
    assert lost.exit_code == 2 and "no file" in lost.output
    found = invoke(["replay", str(out), "--record", record, "--no-cache", "--agent", REACT])
    assert found.exit_code == 0 and "identical" in found.output, found.output


def test_a_spec_that_leaves_a_method_out_is_refused() -> None:
    """A spec without `answer` would score every run 0 without a word: refused instead."""
    from dataclasses import dataclass

    from cuer_agent.agents import AgentSpec, check_spec

    @dataclass(frozen=True)
    class Partial(AgentSpec):
        def input(self, *a: Any, **k: Any) -> dict[str, Any]:
            return {}

    spec = Partial(name="partial", roles={"search": ("retrieve", "answer")},
                   boundaries={b: ("retrieve", "search") for b in ("plan", "retrieve", "read",
                                                                    "answer")})
    with pytest.raises(ConfigError, match="does not implement step_key, hops, answer"):
        check_spec(_tiny_graph(), spec)
