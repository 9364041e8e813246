"""`cuer-agent replay DIR --record ID`: re-execute one stored record from the run directory
alone and check that the same trace (and the same intervention record) comes out.

The run's `config.json` (read through `recorded_config`) names the data, the backend and the
study config; the example is re-run and its interventions re-derived (they are seeded,
pure functions of the clean run), then the record's trace is compared byte for byte with
the stored one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cuer_agent._json import JsonRow
from cuer_agent.errors import CuerError, DataError
from cuer_agent.execution import AgentConfig, Executor
from cuer_agent.interventions import InterventionRecord
from cuer_agent.llm.backends import BACKENDS, SkillClient
from cuer_agent.run_dir import CONFIG_FILE, read_rows, scan_rows
from cuer_agent.studies._common.recorded_config import (
    CuerRunConfig,
    PropagateRunConfig,
    read_run_config,
)
from cuer_agent.studies._common.session import run_meta, study_data


@dataclass(frozen=True)
class ReplayResult:
    record_id: str
    identical: bool
    stored: str
    replayed: str


def _record(row: JsonRow) -> Mapping[str, object]:
    """The intervention record of a trace or record row ({} without one)."""
    record = row.get("record")
    return record if isinstance(record, Mapping) else {}


def _stored_row(run_dir: Path, record_id: str) -> JsonRow:
    """The stored trace row of `record_id`; none → one error line saying why: the record
    was skipped (its reason, from records.jsonl), or the run has no such record."""
    for row in read_rows(run_dir / "traces.jsonl"):
        if _record(row).get("record_id") == record_id:
            return row
    records = run_dir / "records.jsonl"
    for row in scan_rows(records, torn_tail_ok=True) if records.exists() else []:
        record = _record(row)
        if record.get("record_id") == record_id and record.get("skipped"):
            raise CuerError(f"{records}: record {record_id!r} was skipped "
                            f"({record['skipped']}), so it has no trace to replay")
    raise CuerError(f"{run_dir / 'traces.jsonl'}: no trace for record {record_id!r}")


def replayable_config(run_dir: Path) -> CuerRunConfig | PropagateRunConfig:
    """The run's `config.json`, typed; a missing, damaged or unknown one, or one of a
    study replay cannot re-run, is one error line naming the file."""
    config = read_run_config(run_dir)
    if not isinstance(config, CuerRunConfig | PropagateRunConfig):
        raise CuerError(f"{run_dir / CONFIG_FILE}: replay supports cuer and propagate run "
                        f"directories (an evaluate run holds one of each: DIR/single_shot, "
                        f"DIR/agentic), not {config.command!r} runs")
    if config.backend.name not in BACKENDS:  # loads the backends: replay builds one next
        raise DataError(run_dir / CONFIG_FILE,
                        f"backend.name: unknown backend {config.backend.name!r}; choose from "
                        f"{', '.join(BACKENDS.names())}")
    return config


def replay(run_dir: Path, config: CuerRunConfig | PropagateRunConfig, record_id: str,
           skills: SkillClient, agent: str | None = None) -> ReplayResult:
    """Re-execute one record of the run `config` (`replayable_config`) describes; `agent`
    replaces the ``--agent`` reference the run recorded (the same agent, found
    elsewhere)."""
    stored = _stored_row(run_dir, record_id)
    example_id = _record(stored).get("example_id")
    if not isinstance(example_id, str):
        raise DataError(run_dir / "traces.jsonl",
                        f"record {record_id!r} names no example (record.example_id)")
    if isinstance(config, CuerRunConfig):
        rows = _cuer_rows(config, example_id, skills)
    else:
        if agent is not None:
            config = PropagateRunConfig.model_validate({**dict(config), "agent": agent})
        rows = _propagation_rows(config, example_id, skills)
    for row in rows:
        if _record(row).get("record_id") == record_id and row.get("trace"):
            replayed = json.dumps(row["trace"], sort_keys=True)
            original = json.dumps(stored["trace"], sort_keys=True)
            same = replayed == original and _same_record(_record(row), _record(stored))
            return ReplayResult(record_id, same, original, replayed)
    raise CuerError(f"record {record_id!r} did not come out of the replay")


def _same_record(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Equal as intervention records (defaults filled in), or as plain dicts."""
    try:
        return InterventionRecord.model_validate(a) == InterventionRecord.model_validate(b)
    except ValidationError:
        return a == b


def _cuer_rows(config: CuerRunConfig, example_id: str,
               skills: SkillClient) -> Sequence[JsonRow]:
    from cuer_agent.studies._common.dataset_run import retriever_factory
    from cuer_agent.studies._common.pools import single_shot_data
    from cuer_agent.studies.cuer.runner import _example_rows

    ds = study_data(config.data)
    study = config.cuer
    ds = single_shot_data(ds, study.questions, study.pool_size)
    example = _find(ds, example_id)
    executor = Executor(skills, AgentConfig(mode="single_shot", k=study.k),
                        meta=run_meta(config.backend, skills))
    pairs = _example_rows(example, executor, study, study.conditions(),
                          retriever_factory(ds)(example))
    return [dict(trace_row) for trace_row, _ in pairs if trace_row is not None]


def _propagation_rows(config: PropagateRunConfig, example_id: str,
                      skills: SkillClient) -> Sequence[JsonRow]:
    from cuer_agent.interventions.facts import fact_source
    from cuer_agent.studies._common.dataset_run import retriever_factory
    from cuer_agent.studies.propagation.runner import distractor_answers, example_rows

    ds = study_data(config.data)
    study = config.propagation
    example = _find(ds, example_id)
    agent = AgentConfig(hop_budget=config.hop_budget, k=config.k,
                        retries_per_hop=config.retries_per_hop)
    executor = Executor(skills, agent, meta=run_meta(config.backend, skills), agent=config.agent)
    return [dict(row) for row in example_rows(
        example, executor, retriever_factory(ds)(example),
        distractor_answers(ds, example, study.distractor_pool), study, facts=fact_source(ds))]


def _find(dataset: Any, example_id: str) -> Any:
    for example in dataset.examples:
        if example.id == example_id:
            return example
    raise CuerError(f"example {example_id!r} is not in the run's data set")
