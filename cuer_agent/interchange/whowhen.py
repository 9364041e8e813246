"""Who&When failure logs as step traces (`diagnose --traces PATH --format whowhen`).

A file, or a folder read recursively (`*.json`, in path order), of Who&When logs
(`../shared/data/whowhen/`, its provenance there). One log per file, a JSON object:

* `history`: the steps, each `{content, role, name?}` — in algorithm-generated logs the
  agent is `name` ("Excel_Expert") and `role` is "user"/"assistant"; in hand-crafted
  logs there is no `name` and the agent is the role's leading name ("Orchestrator
  (thought)" → orchestrator);
* `question`, `ground_truth`;
* the labels: `mistake_agent`, `mistake_step` (a 0-based index into `history`, stored as
  a string), `mistake_reason`.

Other keys (`is_correct`, `system_prompt`, `level`, `labels`, `mistake_type`,
`question_ID`) are ignored. The source is the file's folder (`Algorithm-Generated`,
`Hand-Crafted`) and the log's key is source/file name (`question_ID` repeats across the
two). The labels are inside the logs; a label that cannot be read or points outside the
log leaves its log unlabelled, with the reason. A file that is not a Who&When log is one
`DataError` naming the file and the step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuer_agent.data._io import json_type, parse_json, read_text
from cuer_agent.errors import DataError
from cuer_agent.step_trace import LogStep, StepLabels, StepTrace, agent_name, content_sha256

FIRST_STEP = 0
"""`mistake_step` indexes `history` from 0."""


def whowhen_files(path: Path) -> list[Path]:
    """The log files at `path`: the file itself, or every `*.json` under the folder."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if p.is_file())
        if not files:
            raise DataError(path, "no Who&When logs (*.json) in this folder")
        return files
    return [path]


def read_whowhen(path: Path) -> tuple[list[StepTrace], dict[str, str]]:
    """Every log at `path` as a step trace; key → why, for the logs left unlabelled."""
    traces, unlabelled = [], {}
    for file in whowhen_files(path):
        trace, why = whowhen_log(file)
        traces.append(trace)
        if why:
            unlabelled[trace.key] = why
    keys = [t.key for t in traces]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise DataError(path, f"two logs with one key (folder/file name): {twice[0]}")
    return traces, unlabelled


def whowhen_log(file: Path) -> tuple[StepTrace, str]:
    """One log file: its step trace (labelled where its label reads), and "" or why it is
    unlabelled."""
    data = parse_json(file, read_text(file))
    if not isinstance(data, dict):
        raise DataError(file, f"not a Who&When log: a JSON {json_type(data)}, not an object")
    history = data.get("history")
    if not isinstance(history, list):
        raise DataError(file, "not a Who&When log: no 'history' list of steps")
    steps = tuple(_step(file, position, item) for position, item in enumerate(history))
    source = file.parent.name
    trace = StepTrace(key=f"{source}/{file.name}", source=source, first_step=FIRST_STEP,
                      task=_text(data.get("question")), steps=steps,
                      ground_truth=_optional_text(data.get("ground_truth")),
                      content_sha256=content_sha256(data))
    labels, why = _labels(data, trace)
    return (trace.model_copy(update={"labels": labels}) if labels else trace), why


def _step(file: Path, position: int, item: Any) -> LogStep:
    if not isinstance(item, dict) or not isinstance(item.get("content"), str) \
            or not isinstance(item.get("role"), str):
        raise DataError(file, f"history[{position}] is not a step {{content, role, name?}}")
    name = item.get("name")
    speaker = name if isinstance(name, str) and name.strip() else item["role"]
    return LogStep(number=FIRST_STEP + position, agent=agent_name(speaker), role=item["role"],
                   content=item["content"])


def _labels(data: dict[str, Any], trace: StepTrace) -> tuple[StepLabels | None, str]:
    raw_step, raw_agent = data.get("mistake_step"), data.get("mistake_agent")
    if raw_step is None or raw_agent is None:
        return None, "no mistake_step or mistake_agent"
    try:
        step = int(str(raw_step).strip())
    except ValueError:
        return None, f"mistake_step {raw_step!r} is not a step number"
    if step not in trace.numbers:
        return None, (f"mistake_step {step} points to no step of the log (steps "
                      f"{trace.numbers.start}-{trace.numbers.stop - 1})")
    if not isinstance(raw_agent, str) or not raw_agent.strip():
        return None, f"mistake_agent {raw_agent!r} names no agent"
    return StepLabels(step=step, agent=agent_name(raw_agent),
                      reason=_text(data.get("mistake_reason"))), ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)
