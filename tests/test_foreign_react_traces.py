"""The held-out ReAct foreign traces (`examples/foreign_react_traces.py`): LangGraph's
prebuilt ReAct agent on a few records of the shared MuSiQue sample, its labels and the
spans openinference-instrumentation-langchain writes for it."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cuer_agent.data import shared_sample_path
from cuer_agent.interchange import import_spans, read_spans

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

pytestmark = pytest.mark.shared_data

N_RECORDS = 8


def _react() -> ModuleType:
    pytest.importorskip("openinference.instrumentation.langchain",
                        reason="openinference-instrumentation-langchain is in the test extra")
    import foreign_react_traces as react

    return react


def _records() -> list[dict[str, Any]]:
    path = shared_sample_path("musique")
    if path is None:
        pytest.skip("../shared/data not present: musique sample missing")
    return list(_react().read_records(path, "musique")[:N_RECORDS])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter[str]]:
    """The script's output directory on the first records, and its counts."""
    records = _records()
    out = tmp_path_factory.mktemp("react")
    return out, _react().write(records, out)


def _labels(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]


def test_every_faulted_run_that_failed_is_labelled_at_a_hop_of_its_trace(
        written: tuple[Path, Counter[str]]) -> None:
    out, counts = written
    labels = _labels(out)
    failed = [lab for lab in labels if lab["outcome"] == "failed"]
    assert len(failed) == counts["failed"] > 0
    assert len(labels) == counts["failed"] + counts["correct"]
    traces, _ = import_spans(read_spans(out / "spans.jsonl"))
    hops = {t.trace_id: len(t.trace.hops) for t in traces}
    for lab in failed:
        n = hops[lab["trace_id"]]
        assert 1 <= lab["hop"] <= n + 1, lab
        assert (lab["hop"] == n + 1) == (lab["fault"] == "early_stop"), lab
        assert lab["stage"] in {"retrieval", "read", "tool", "answer"}


def test_the_spans_import_to_one_hop_per_search(written: tuple[Path, Counter[str]]) -> None:
    out, counts = written
    spans = read_spans(out / "spans.jsonl")
    traces, unmapped = import_spans(spans)
    assert len(traces) == N_RECORDS and not [u for u in unmapped if not u.span_id]
    searches = Counter(s.trace_id for s in spans if s.kind == "TOOL" and s.name == "search")
    assert sum(searches.values()) == counts["hops"]
    for t in traces:
        assert len(t.trace.hops) == searches[t.trace_id] > 0
        assert all(h.subquery and len(h.retrieved) == 3 for h in t.trace.hops)


def test_the_same_records_give_the_same_labels_bytes(
        written: tuple[Path, Counter[str]], tmp_path: Path) -> None:
    out, _ = written
    _react().write(_records(), tmp_path)
    assert (tmp_path / "labels.jsonl").read_bytes() == (out / "labels.jsonl").read_bytes()
