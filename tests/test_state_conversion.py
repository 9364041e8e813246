"""Models and LangGraph state meet in one place (`cuer_agent.graphs.state`): a model
turned into state is the JSON a live run holds, field for field and in the same order,
and a state hop read back is the trace's model."""

from __future__ import annotations

import json

from test_execution import base_run, make_executor

from cuer_agent.agent_context import to_state
from cuer_agent.graphs.state import hop_from_state, hop_to_state
from cuer_agent.trace import Evidence


def test_evidence_as_state_is_its_json_with_every_field_in_model_order() -> None:
    evidence = Evidence(id="a-p0-c0", title="A", text="x", rank=2, score=1)
    (data,) = to_state([evidence])
    assert json.dumps(data) == ('{"id": "a-p0-c0", "title": "A", "text": "x", "rank": 2, '
                                '"score": 1.0}')


def test_a_hop_of_a_live_run_survives_the_round_trip_byte_for_byte() -> None:
    executor, _ = make_executor()
    base = base_run(executor)
    for raw in base.final_state["hops"]:
        assert json.dumps(hop_to_state(hop_from_state(raw))) == json.dumps(raw)


def test_a_state_hop_read_back_is_the_traces_hop() -> None:
    executor, _ = make_executor()
    base = base_run(executor)
    assert tuple(map(hop_from_state, base.final_state["hops"])) == base.trace.hops
