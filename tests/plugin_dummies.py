"""A dummy backend, data set, fault and diagnoser, each one definition plus one
registration call and nothing else: what a third party writes (`tests/test_plugins.py`
checks that each shows up wherever its kind does). Importing this module registers them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuer_agent.data import Dataset, register_dataset
from cuer_agent.diagnosers import BaseDiagnoser, Diagnosis, DiagnosisView, Probe, diagnoser
from cuer_agent.interventions import FaultInput, FaultOutcome, fault
from cuer_agent.interventions._fault_types import fault_record
from cuer_agent.llm.backends import register_backend
from cuer_agent.llm.extractive import ExtractiveBackend


class DummyBackend(ExtractiveBackend):
    """The extractive reader under another name and with the decoding options a model
    takes: a backend that is not rule-based as far as the registry knows."""

    name = "dummy-backend"

    def __init__(self, model: str | None = None, **decoding: Any) -> None:
        super().__init__(model or "dummy")
        self.decoding_options = decoding


def make_dummy_backend(model: str | None = None, base_url: str | None = None,
                       **decoding: Any) -> DummyBackend:
    return DummyBackend(model, **decoding)


register_backend("dummy-backend", help="a test double", concurrency=3)(make_dummy_backend)


def load_dummy_data(path: str | Path | None, n: int | None = None, **options: Any) -> Dataset:
    """A generated data set: the synthetic world's questions under another name."""
    from cuer_agent.data.synthetic import load_synthetic

    world = load_synthetic(n=n or 2, **options)
    return Dataset(name="dummy-data", examples=world.examples, corpus=world.corpus,
                   source="dummy")


register_dataset("dummy-data", help="a generated test double", aliases=("dummy-alias",),
                 generated=True)(load_dummy_data)


def swap_nothing(inp: FaultInput) -> FaultOutcome:
    """A fault that applies and changes nothing (hop h keeps its evidence)."""
    return FaultOutcome(record=fault_record(inp, "dummy_fault"), evidence=list(inp.evidence))


fault("dummy_fault", stage="retrieval", boundary="retrieve", help="changes nothing",
      default_rank=99)(swap_nothing)


class BlameFirstHop(BaseDiagnoser):
    """Names hop 1, retrieval, whatever the trace."""

    def diagnose(self, view: DiagnosisView, probe: Probe | None = None) -> Diagnosis:
        return Diagnosis(hop=1, stage="retrieval", cause="dummy")


diagnoser("dummy-diagnoser", help="blames hop 1", default_rank=99)(BlameFirstHop)
