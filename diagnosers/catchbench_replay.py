"""Replays of published judges on Who&When: catchbench's saved predictions, scored here.

`catchbench` (PyPI, MIT; a dev/test extra, never a runtime dependency) saves the replies of
11 judge models under the three Who&When protocols (31 files: `gpt-oss-20b` ran
all-at-once only) on the 126 algorithm-generated logs. Each file registers one step
diagnoser, named in catchbench's spelling: `catchbench:<model>:<protocol>`
(`catchbench:gpt-5.5:all_at_once`). Reads: saved predictions — it runs no model.

Matching is by content: a prediction's key maps through the package's
`legacy_run_keys.json` to "sha256-" + the sha256 of the log's canonical JSON
(`StepTrace.content_sha256`: the whole record, keys sorted, no spaces, non-ASCII kept);
all 126 shared algorithm-generated files match. A log with no saved prediction (a
hand-crafted one) is outside the replay's scope: not scored, counted. A saved `top` of
null (an empty or unparsable reply: 6 of gpt-oss-20b's, 1 of mistral-small's) is an
abstention, scored wrong as catchbench scores it. The predictions name no agent: a
replay's agent is the agent of the step it names, as the controls'.

Only the board's files (`data/llm_judge/`) are read, not `data/llm_judge_addendum/`,
which catchbench's own code does not read either.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

from cuer_agent._registry import About
from cuer_agent.step_trace import StepTrace

from ._step_base import STEP_DIAGNOSERS, Guess, StepPrediction

PREFIX = "catchbench"
INSTALL = "pip install 'catchbench>=0.1.3,<0.2' (in the test extra)"


def _data_dir() -> Path | None:
    """catchbench's saved judge predictions, where the package is installed (found
    without importing it: only its data files are read)."""
    spec = importlib.util.find_spec(PREFIX)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "data" / "llm_judge"
    return folder if folder.is_dir() else None


def _files() -> dict[str, Path]:
    """Diagnoser name → its prediction file."""
    folder = _data_dir()
    found = {}
    for path in sorted(folder.glob("whoandwhen__*__*.json")) if folder else []:
        _, protocol, model = path.stem.split("__", 2)
        found[f"{PREFIX}:{model}:{protocol}"] = path
    return found


@cache
def _legacy_keys(folder: Path) -> dict[str, str]:
    data = json.loads((folder / "legacy_run_keys.json").read_text(encoding="utf-8"))
    keys: dict[str, str] = data["keys"]
    return keys


@cache
def _predictions(path: Path) -> dict[str, int | None]:
    """The file's predictions by content key ("sha256-…"): the step it put first."""
    legacy = _legacy_keys(path.parent)
    saved = json.loads(path.read_text(encoding="utf-8"))["predictions"]
    return {legacy.get(key, key): entry.get("top") for key, entry in saved.items()}


class Replay:
    control = False
    reads = "saved predictions"

    def __init__(self, name: str, path: Path, **_options: Any) -> None:
        self.name = name
        self.path = path

    def not_run(self) -> str:
        return ""

    def predict(self, trace: StepTrace) -> StepPrediction:
        saved = _predictions(self.path)
        if trace.content_sha256 not in saved:
            return StepPrediction((), "no saved prediction for this log", applies=False)
        top = saved[trace.content_sha256]
        if top is None:
            return StepPrediction((), "the saved reply named no step")
        return StepPrediction((Guess(step=top, agent=trace.agent_at(top) or ""),),
                              "the step the judge put first")


def replays_not_run() -> dict[str, str]:
    """What a default selection says when no replay could run."""
    return {} if _files() else {f"{PREFIX}:*": f"catchbench is not installed ({INSTALL})"}


def _register() -> None:
    for name, path in _files().items():
        model, protocol = name.split(":")[1:]
        STEP_DIAGNOSERS.add(name, functools.partial(Replay, name, path), About(
            help=f"{model}'s saved {protocol} predictions on Who&When (catchbench)"))


_register()
