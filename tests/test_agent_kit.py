"""The agent conformance kit (`cuer_agent.diagnoser_kit.validate_agent`) and a failing user node."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke

from cuer_agent.diagnoser_kit import validate_agent
from cuer_agent.graphs import agent as our_agent

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import react_agent  # noqa: E402
import two_node_agent  # noqa: E402


@pytest.mark.parametrize("factory", [our_agent.build, react_agent.build, two_node_agent.build],
                         ids=["built-in", "react", "two-node"])
def test_the_kit_passes_every_agent_we_ship(factory: Any) -> None:
    report = validate_agent(factory)
    assert report.ok, report.problems
    assert report.checked == ("spec", "trace", "identity forks", "hooks", "kill and resume")


def test_the_own_agent_docs_show_the_example_file_verbatim_and_it_fits_in_60_lines() -> None:
    source = (ROOT / "examples" / "two_node_agent.py").read_text()
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "own-agent.md").read_text(),
                        re.S)
    assert source in blocks
    assert len(source.splitlines()) <= 60


def broken(**methods: Any) -> Any:
    """The two-node agent with some spec methods replaced."""
    graph, spec = two_node_agent.build()
    cls = type("Broken", (type(spec),), methods)
    return graph, cls(**{f: getattr(spec, f) for f in ("name", "roles", "boundaries", "keys",
                                                       "issues_query")})


def evidence_ignored() -> Any:
    return broken(with_evidence=lambda self, s, ev: s)


def subquery_ignored() -> Any:
    return broken(with_subquery=lambda self, s, q: s)


def hops_ignored() -> Any:
    return broken(with_hops=lambda self, s, overrides, answer=True: (
        {**s, "hop_budget": len(s["hops"]), "query": ""} if answer else s))


@pytest.mark.parametrize(("factory", "named"), [
    (evidence_ignored, "with_evidence([]) left the hop's evidence in view"),
    (subquery_ignored, "with_subquery('kit probe sub-query') searched"),
    (hops_ignored, "with_hops({1: []}) left hop 1 as observed"),
])
def test_a_hook_that_changes_nothing_is_named(factory: Any, named: str) -> None:
    report = validate_agent(factory, n=2, resume=False)
    assert not report.ok
    assert any(named in p for p in report.problems), report.problems
    assert all(p.startswith("syn-") for p in report.problems)  # each names its example


def test_a_retry_hook_that_does_not_reopen_the_hop_is_named() -> None:
    from cuer_agent.graphs import agent

    graph, spec = agent.build()
    ignored = type("NoRetry", (type(spec),), {"with_retry": lambda self, s, hop: s})()
    report = validate_agent(lambda: (graph, ignored), n=1, resume=False)
    assert any("with_retry re-opened the hop and the agent did not retry it" in p
               for p in report.problems), report.problems


def test_a_budget_the_agent_ignores_is_named() -> None:
    graph, spec = two_node_agent.build()
    lax = replace(spec, budget_key="k")  # lowering "k" does not stop it
    report = validate_agent(lambda: (graph, lax), n=1, resume=False)
    assert any("with the hop budget ('k') lowered" in p for p in report.problems)


def test_a_spec_that_does_not_match_its_graph_stops_at_the_spec_check() -> None:
    graph, spec = two_node_agent.build()
    report = validate_agent(lambda: (graph, replace(spec, keys=("nope",))), resume=False)
    assert report.checked == ("spec",)
    assert "state key 'nope'" in report.problems[0]


FAILING_AGENT = '''
import sys
sys.path.insert(0, {examples!r})
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from cuer_agent.agent_context import AgentContext
from two_node_agent import S, build as working, decide


def lookup(s, runtime):
    raise ValueError("the search index is closed")


def build():
    graph = (StateGraph(S, context_schema=AgentContext).add_node("decide", decide)
             .add_node("lookup", lookup).add_edge(START, "decide").add_edge("lookup", "decide")
             .add_conditional_edges("decide", lambda s: "lookup" if s["query"] else END))
    return graph.compile(checkpointer=InMemorySaver()), working()[1]
'''


def test_an_exception_in_a_user_node_is_one_line_naming_the_node(tmp_path: Path) -> None:
    path = tmp_path / "failing.py"
    path.write_text(FAILING_AGENT.format(examples=str(ROOT / "examples")))
    args = ["run", "--agent", f"{path}:build", "--hops", "2", "--n", "1", "--no-cache",
            "--no-progress", "--out", str(tmp_path / "run")]
    result = invoke(args)
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: agent 'two-node': node 'lookup' raised "
                                     "ValueError: the search index is closed")
    debug = invoke(["--debug", *args[:-1], str(tmp_path / "again")])
    assert debug.exit_code == 2
    assert "Traceback" in debug.stderr and "raise ValueError" in debug.stderr
