"""AgentRx failure logs as step traces (`diagnose --traces PATH --format agentrx --labels FILE`).

AgentRx re-annotates failure logs of τ-bench retail and Magentic-One: every failure step,
a category, and which failure is the root cause. Its trajectories and its labels are
separate files:

* **Magentic-One**: a folder of JSON files, one log each, a list of `{content, role}` (the
  agent is the role's leading name, as in Who&When's hand-crafted logs); the file's stem
  is the log's id. Source `magentic-one`.
* **τ-bench retail**: one JSON file, a list of records `{task_id, reward, info, traj}`;
  `traj` is the conversation in τ-bench's message format (`role`, `content`, and on an
  assistant's message `tool_calls` of `{function: {name, arguments}}`); `task_id` is the
  log's id. Source `tau-retail`.
* **Labels** (`--labels`): a JSON list of `{trajectory_id, failures: [{failure_id,
  step_number, failed_agent, failure_category, step_reason, category_reason}],
  root_cause: {failure_id, reason_for_root_cause}, failure_summary}`. `step_number` is
  1-based (the first message is step 1); the labelled step and agent are the root
  cause's failure's (`failure_id` an int or a numeric string).

A label that names no log, whose root cause names no failure, or whose step lies outside
its log is counted unlabelled with the reason (a log without a label likewise); a file
that is neither shape is one `DataError` naming the file and the record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cuer_agent.data._io import json_type, parse_json, read_text
from cuer_agent.errors import DataError
from cuer_agent.step_trace import (
    FailureStep,
    LogStep,
    StepLabels,
    StepTrace,
    ToolCall,
    agent_name,
)

FIRST_STEP = 1
"""AgentRx numbers the first message 1."""
MAGENTIC, TAU = "magentic-one", "tau-retail"


def read_agentrx(path: Path, labels: Path) -> tuple[list[StepTrace], dict[str, str]]:
    """The logs at `path` labelled from `labels`; key → why for every log left unlabelled
    (and for every label that matched no log, under `labels:<trajectory_id>`)."""
    logs = _read_logs(path, skip=labels)
    by_id = {trace.key.split("/", 1)[1]: trace for trace in logs}
    unlabelled: dict[str, str] = {}
    labelled: dict[str, StepTrace] = {}
    for position, record in enumerate(_records(labels)):
        tid = str(record.get("trajectory_id", ""))
        trace = by_id.get(tid)
        if trace is None:
            unlabelled[f"labels:{tid or position}"] = "a label whose trajectory_id names no log"
            continue
        found, why = _labels(record, trace)
        if found is None:
            unlabelled[trace.key] = why
        else:
            labelled[trace.key] = trace.model_copy(update={"labels": found})
    for trace in logs:
        if trace.key not in labelled and trace.key not in unlabelled:
            unlabelled[trace.key] = "no label names this log"
    return [labelled.get(t.key, t) for t in logs], unlabelled


def _read_logs(path: Path, skip: Path) -> list[StepTrace]:
    """The logs at `path` (a folder: every `*.json` under it but the labels file)."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json")
                       if p.is_file() and p.resolve() != skip.resolve())
        if not files:
            raise DataError(path, "no AgentRx trajectories (*.json) in this folder")
        return [trace for file in files for trace in _read_file(file)]
    return _read_file(path)


def _read_file(file: Path) -> list[StepTrace]:
    data = parse_json(file, read_text(file))
    if isinstance(data, list) and data and all(isinstance(r, dict) and "traj" in r
                                                 for r in data):
        return [_tau(file, position, record) for position, record in enumerate(data)]
    if isinstance(data, list) and all(isinstance(m, dict) for m in data):
        steps = tuple(_message(file, position, m) for position, m in enumerate(data))
        return [StepTrace(key=f"{MAGENTIC}/{file.stem}", source=MAGENTIC,
                          first_step=FIRST_STEP, task=steps[0].content if steps else "",
                          steps=steps)]
    raise DataError(file, "not an AgentRx trajectory file: expected a list of messages "
                    "{content, role} (Magentic-One) or of records {task_id, traj, ...} "
                    f"(τ-bench), got a JSON {json_type(data)}")


def _tau(file: Path, position: int, record: dict[str, Any]) -> StepTrace:
    traj = record.get("traj")
    if "task_id" not in record or not isinstance(traj, list):
        raise DataError(file, "not a τ-bench record: needs task_id and a traj list",
                        record=position)
    steps = tuple(_message(file, i, m, record=position) for i, m in enumerate(traj))
    task = next((s.content for s in steps if s.role == "user"), "")
    return StepTrace(key=f"{TAU}/{record['task_id']}", source=TAU, first_step=FIRST_STEP,
                     task=task, steps=steps)


def _message(file: Path, position: int, message: Any, record: int | None = None) -> LogStep:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise DataError(file, f"message {position} is not a message {{role, content}}",
                        record=record)
    content = message.get("content")
    return LogStep(number=FIRST_STEP + position, agent=agent_name(message["role"]),
                   role=message["role"], content=content if isinstance(content, str) else "",
                   tool_calls=tuple(_tool_calls(message.get("tool_calls"))))


def _tool_calls(calls: Any) -> list[ToolCall]:
    found = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        arguments = function.get("arguments", "")
        found.append(ToolCall(name=str(function.get("name", "")),
                              arguments=arguments if isinstance(arguments, str)
                              else json.dumps(arguments, sort_keys=True)))
    return found


def _records(labels: Path) -> list[dict[str, Any]]:
    data = parse_json(labels, read_text(labels))
    if not isinstance(data, list):
        raise DataError(labels, f"AgentRx labels must be a JSON list, got {json_type(data)}")
    for position, record in enumerate(data):
        if not isinstance(record, dict) or "trajectory_id" not in record:
            raise DataError(labels, "not an AgentRx label: needs trajectory_id",
                            record=position)
    return data


def _labels(record: dict[str, Any], trace: StepTrace) -> tuple[StepLabels | None, str]:
    failures = []
    for failure in record.get("failures") or []:
        try:
            failures.append((int(str(failure["failure_id"])), FailureStep(
                step=int(failure["step_number"]), agent=agent_name(str(failure["failed_agent"])),
                category=failure.get("failure_category"), reason=failure.get("step_reason", ""))))
        except (KeyError, TypeError, ValueError):
            return None, "a failure without a numeric failure_id, step_number or failed_agent"
    root = record.get("root_cause") or {}
    try:
        root_id = int(str(root.get("failure_id")))
    except ValueError:
        return None, f"root_cause failure_id {root.get('failure_id')!r} is not a number"
    chosen = [f for fid, f in failures if fid == root_id]
    if not chosen:
        return None, f"root_cause failure_id {root_id} names no failure of the label"
    cause = chosen[0].model_copy(update={"root_cause": True})
    if cause.step not in trace.numbers:
        return None, (f"the root cause's step_number {cause.step} points to no step of the "
                      f"log (steps {trace.numbers.start}-{trace.numbers.stop - 1})")
    return StepLabels(step=cause.step, agent=cause.agent,
                      reason=str(root.get("reason_for_root_cause", "")),
                      category=cause.category,
                      failures=tuple(cause if fid == root_id else f for fid, f in failures)
                      ), ""
