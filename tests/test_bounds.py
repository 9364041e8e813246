"""What a model may write (`cuer_agent.llm.bounds`): every field of a reply bounded, a
token bound no reply within the schema can pass, and a cut reply closed after the last
field it completed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuer_agent.llm import bounds
from cuer_agent.llm._remote import SKILLS
from cuer_agent.llm.skills import EvidenceView, ReadRequest

IDS = ("8f2e6c50-p0-c0", "70267a0e-p19-c0", "1388c925-p18-c0")


def _instance(schema: dict[str, Any], draw: st.DrawFn) -> Any:
    """The longest-looking instance of `schema` hypothesis can draw."""
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema["type"]
    if kind == "string":  # a grammar counts a \uXXXX escape as one character: the BMP
        return draw(st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)),
                             max_size=schema["maxLength"]))
    if kind == "number":
        return draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "integer":
        return draw(st.integers(min_value=-10**15, max_value=10**15))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "array":
        return [_instance(schema["items"], draw) for _ in range(
            draw(st.integers(0, schema["maxItems"])))]
    return {name: _instance(value, draw) for name, value in schema["properties"].items()}


@st.composite
def replies(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    skill = draw(st.sampled_from(SKILLS))
    schema = bounds.bounded_schema(skill, IDS)
    return schema, json.dumps(_instance(schema, draw), indent=draw(st.sampled_from([None, 4])),
                              ensure_ascii=draw(st.booleans()))


@given(replies())
def test_no_reply_within_the_schema_has_more_bytes_than_its_token_bound(
        reply: tuple[dict[str, Any], str]) -> None:
    schema, text = reply
    assert len(text.encode("utf-8")) <= bounds.token_bound(schema)  # a token is >= 1 byte


@pytest.mark.parametrize("skill", SKILLS)
def test_every_free_text_field_and_list_is_bounded_and_every_field_required(skill: str) -> None:
    schema = bounds.bounded_schema(skill, IDS)
    for name, field in schema["properties"].items():
        if field.get("type") == "string" and "enum" not in field:
            assert "maxLength" in field, name
        if field.get("type") == "array":
            assert "maxItems" in field, name
    assert schema["required"] == list(schema["properties"]) == list(bounds.ORDER[skill])


def test_ids_are_an_enum_of_the_ids_in_view_and_the_finding_comes_first() -> None:
    request = ReadRequest(question="q", hop=1, subquery="q", evidence=tuple(
        EvidenceView(id=i, title="t", text="x") for i in IDS))
    schema = bounds.bounded_schema("read", bounds.ids_in_view("read", request))
    assert schema["properties"]["selected_ids"]["items"]["enum"] == list(IDS)
    assert schema["properties"]["selected_ids"]["maxItems"] == 3
    assert next(iter(schema["properties"])) == "finding"


def test_a_request_without_evidence_may_name_no_id() -> None:
    assert bounds.bounded_schema("answer")["properties"]["used_ids"]["maxItems"] == 0


def test_a_cut_reply_is_closed_after_its_last_complete_field() -> None:
    cut = '{"finding": "Ann Lee", "selected_ids": ["e1"], "support": "supp'
    closed = bounds.close_cut(cut)
    assert closed == {"finding": "Ann Lee", "selected_ids": ["e1"]}
    assert bounds.missing("read", closed) == "support, confidence"


@given(st.text(max_size=40))
def test_closing_any_prefix_gives_a_prefix_of_its_fields_or_nothing(tail: str) -> None:
    fields = {"answer": "Ann Lee", "confidence": 0.5, "used_ids": [], "rationale": tail}
    whole = json.dumps(fields)
    for end in range(len(whole)):
        closed = bounds.close_cut(whole[:end])
        assert closed is None or closed == dict(list(fields.items())[:len(closed)])


def test_a_reply_over_its_bounds_or_naming_an_unseen_id_is_refused() -> None:
    assert bounds.violation("read", {"finding": "x" * 101}, IDS).startswith("finding")
    assert bounds.violation("read", {"selected_ids": ["made-up"]}, IDS) == (
        "selected_ids: 'made-up' is not an id in view")
    assert bounds.violation("read", {"finding": "Ann", "selected_ids": [IDS[0]]}, IDS) == ""
