"""The observable trace: schema, stable ids, lossless JSONL, and no hidden labels."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuer_agent.data._example import Example
from cuer_agent.errors import DataError
from cuer_agent.graphs.nodes import step as step_dict
from cuer_agent.trace import (
    SCHEMA_VERSION,
    Action,
    Cost,
    Evidence,
    HopRecord,
    Step,
    StepState,
    Trace,
    evidence_id,
    read_traces,
    write_traces,
)

text = st.text(max_size=40)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
ids = st.lists(st.text(min_size=1, max_size=12), max_size=4).map(tuple)
support = st.sampled_from(["supported", "partial", "unsupported", "unknown"])
evidence = st.builds(
    Evidence, id=st.text(min_size=1, max_size=12), title=text, text=text,
    rank=st.integers(0, 50), score=st.floats(allow_nan=False, allow_infinity=False),
)
state = st.builds(StepState, query=text, in_view=ids, selected=ids, support=support,
                  candidate=text, confidence=st.none() | unit)
step = st.builds(Step, action=st.sampled_from(list(Action)), hop=st.integers(0, 6),
                 state=state, note=text)
hop = st.builds(HopRecord, hop=st.integers(1, 6), subquery=text,
                retrieved=st.lists(evidence, max_size=3).map(tuple), selected=ids,
                finding=text, support=support, confidence=st.none() | unit, reason=text)
json_scalar = st.none() | st.booleans() | st.integers(-10**6, 10**6) | text
traces = st.builds(
    Trace, example_id=st.text(min_size=1, max_size=20), question=text,
    mode=st.sampled_from(["agentic", "single_shot"]),
    steps=st.lists(step, max_size=6).map(tuple), hops=st.lists(hop, max_size=4).map(tuple),
    answer=text, confidence=st.none() | unit, used_ids=ids, rationale=text,
    cost=st.builds(Cost, llm_calls=st.integers(0, 100),
                   prompt_tokens=st.integers(0, 10**6), completion_tokens=st.integers(0, 10**6)),
    status=st.sampled_from(["ok", "parse_failure", "error"]), error=text,
    meta=st.dictionaries(st.text(max_size=8), json_scalar, max_size=3),
)


@given(traces)
@settings(max_examples=150, deadline=None)
def test_trace_json_round_trip_is_lossless(trace: Trace) -> None:
    line = trace.to_json()
    assert "\n" not in line
    again = Trace.from_json(line)
    assert again == trace
    assert again.to_json() == line


@given(st.lists(traces, max_size=5))
@settings(max_examples=40, deadline=None)
def test_jsonl_file_round_trip_is_lossless(tmp_path_factory, batch: list[Trace]) -> None:
    path = tmp_path_factory.mktemp("t") / "traces.jsonl"
    assert write_traces(path, batch) == len(batch)
    assert read_traces(path) == batch


@given(step.flatmap(lambda s: st.tuples(st.just(s), st.integers(1, 4),
                                         st.sampled_from([None, 1, 0]))))
@settings(max_examples=200)
def test_the_graphs_step_dicts_are_what_the_step_model_dumps(case) -> None:
    model, attempt, whole_confidence = case
    fields = model.state.model_dump()  # tuples, as the nodes pass them
    if whole_confidence is not None:  # an int confidence is dumped as the float it is
        fields["confidence"] = whole_confidence
    expected = Step(action=model.action, hop=model.hop, attempt=attempt,
                    state=StepState(**fields), note=model.note).model_dump(mode="json")
    got = step_dict(model.action, model.hop, model.note, attempt, **fields)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # same keys in the same order, same types


def test_a_step_with_an_unknown_state_field_is_refused() -> None:
    with pytest.raises(TypeError, match="candiate"):
        step_dict(Action.INFER, 1, candiate="Paris")


def test_trace_records_schema_version() -> None:
    trace = Trace(example_id="x", question="q")
    assert json.loads(trace.to_json())["schema_version"] == SCHEMA_VERSION


def test_evidence_id_depends_on_title_paragraph_and_chunk_only() -> None:
    a = evidence_id("Liezel Huber", 3, 0)
    assert a == evidence_id("Liezel Huber", 3, 0)
    assert len({a, evidence_id("Liezel Huber", 4, 0), evidence_id("Liezel Huber", 3, 1),
                evidence_id("Lisa Raymond", 3, 0)}) == 4
    assert a.endswith("-c0") and "p3" not in a  # the place of a paragraph is not shown


def test_evidence_id_is_fixed_across_versions() -> None:
    # Pinned: changing the id scheme orphans every stored run directory (schema 3 did, so
    # that an id tells neither a paragraph's place nor its article's length).
    assert evidence_id("Liezel Huber", 0, 0) == "2f9c52938a85-c0"


def test_nan_confidence_is_rejected() -> None:
    with pytest.raises(ValueError):
        Trace(example_id="x", question="q", confidence=float("nan"))


def test_bad_trace_line_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(Trace(example_id="a", question="q").to_json() + "\n{\"example_id\": 3}\n")
    with pytest.raises(DataError, match=r"traces\.jsonl, line 2: not a valid trace"):
        read_traces(path)


def test_trace_has_no_hidden_label_fields() -> None:
    """Gold answers, supports and intervention records live outside the trace."""
    observable = set(Trace.model_fields) | set(HopRecord.model_fields) | set(
        StepState.model_fields) | set(Step.model_fields) | set(Evidence.model_fields)
    labels = {"aliases", "supporting_titles", "gold", "gold_answer", "gold_answers",
              "intervention", "certificate", "labels", "qtype", "support_title"}
    assert {"aliases", "supporting_titles", "hops"} <= set(Example.model_fields)
    assert labels & observable == set()
