"""Conformance kit for a LangGraph agent under test: `validate_agent(factory)`.

Before a study trusts a forked run of your agent, the kit runs it on a few synthetic
questions (offline: the extractive skills, a BM25 index) and checks what the study relies
on, each as a named check whose failures are one line naming the hop and the hook:

* **spec** — `check_spec`: every node, role, boundary and state key the spec names exists;
* **trace** — each run ends with a trace that validates, has hops and no error;
* **identity forks** — a fork that edits nothing, at every hop and boundary (plan,
  retrieve, read), gives the run's trace byte for byte and makes no skill call for the
  hops before it (the prefix is not recomputed);
* **hooks** — every writer the faults use takes effect: `with_evidence` (the hop sees the
  given evidence), `with_subquery` (the hop searches the given sub-query), the hop budget
  (`budget_key`: lowered, the agent stops), `with_hops` (a frozen re-answer sees the
  replaced hop), when declared, `retries_key` (set to 0, nothing is retried) and, when the
  spec implements it and allows the `replan` repair, `with_retry` (the re-opened hop is
  retried) and, when it allows `reread`, the read (the re-read hop asks the reader for
  another reading: `ReadRequest.reading` from `context.reading`). A hook
  whose edit leaves the run as it was is named: the study would otherwise measure
  nothing and report it as a finding;
* **kill and resume** — `cuer-agent run --agent REF` dies after its first rows and is
  run again; the resumed directory must equal an uninterrupted one, byte for byte (needs
  a factory importable by reference: a module-level function).

`validate_agent` returns an `AgentReport` (`ok`, `problems`, `checked`); it never raises
for a broken agent — an exception in a node is a problem naming the node.
"""

from __future__ import annotations

import filecmp
import inspect
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuer_agent._json import JsonRow
from cuer_agent.agents import BOUNDARIES, AgentSpec, Factory, load_agent
from cuer_agent.data import Example, load_dataset
from cuer_agent.errors import CuerError
from cuer_agent.execution import (
    AgentConfig,
    Executor,
    RunResult,
    force_answer,
    identity,
    replace_evidence,
    replace_subquery,
    without_retries,
)
from cuer_agent.interventions.repairs import get_repair
from cuer_agent.llm.backends import SkillClient, make_backend
from cuer_agent.retrieval import BM25Retriever
from cuer_agent.studies.propagation.injection import prefix_skill_calls
from cuer_agent.trace import Trace

PROBE_QUERY = "kit probe sub-query"
"""The sub-query the `with_subquery` check asks a hop to search."""


@dataclass(frozen=True)
class AgentReport:
    checked: tuple[str, ...]
    """The checks that ran (a check that could not run is named in `problems`)."""
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_agent(factory: Factory | str, *, n: int = 3, hops: int = 2, seed: int = 0,
                   resume: bool = True) -> AgentReport:
    """Check an agent (its factory, or ``module:factory`` / ``file.py:factory``) on `n`
    synthetic `hops`-hop questions; `resume=False` skips the kill-and-resume check."""
    try:
        load_agent(factory)
    except CuerError as exc:
        return AgentReport(("spec",), (f"spec: {exc}",))
    data = load_dataset("synthetic", n=n, hops=hops, seed=seed)
    retriever = BM25Retriever.from_passages(data.corpus or ())  # synthetic: always a corpus
    executor = Executor(SkillClient(make_backend("extractive")),
                        AgentConfig(hop_budget=hops), agent=factory)
    problems: list[str] = []
    checked = ["spec", "trace", "identity forks", "hooks"]
    for example in data.examples:
        try:
            problems += _check_example(executor, example, retriever)
        except CuerError as exc:  # a node raised: the run cannot go on
            problems.append(f"{example.id}: {exc}")
    if resume:
        ref = reference(factory)
        if ref is None:
            problems.append("kill and resume: not checked — the factory is not importable "
                            "by reference (define it at module level)")
        else:
            checked.append("kill and resume")
            problems += _check_resume(ref, n=n, hops=hops, seed=seed)
    return AgentReport(tuple(checked), tuple(problems))


def reference(factory: Factory | str) -> str | None:
    """The ``--agent`` reference of a module-level function: ``module:factory`` when its
    module imports by name, else ``file.py:factory`` (a string is returned as is)."""
    if isinstance(factory, str):
        return factory
    name, module = getattr(factory, "__name__", ""), getattr(factory, "__module__", "")
    if not inspect.isfunction(factory) or factory.__qualname__ != name:
        return None
    if module != "__main__" and not module.startswith("cuer_user_agent_"):
        return f"{module}:{name}"
    source = inspect.getsourcefile(factory)
    return None if source is None else f"{source}:{name}"


def _check_example(executor: Executor, example: Example,
                   retriever: BM25Retriever) -> list[str]:
    base = executor.run(example, retriever)
    trace = base.trace
    where = example.id
    if Trace.model_validate_json(trace.to_json()) != trace:
        return [f"{where}: the trace does not survive its own JSON (spec.trace)"]
    if trace.error or not trace.hops:
        why = trace.error or "no hops — spec.hops(state) found none in the final state"
        return [f"{where}: the run's trace is unusable: {why}"]
    problems = []
    for hop in range(1, len(trace.hops) + 1):
        problems += _identity_forks(executor, base, hop)
        problems += _hooks(executor, base, hop)
    if executor.spec.retries_key is not None:
        control = executor.fork(base, 0, "read", without_retries)
        if any(h.attempts for h in control.trace.hops):
            problems.append(f"{where}: retries_key {executor.spec.retries_key!r} set to 0, "
                            "the agent still retried a hop")
    return problems


def _identity_forks(executor: Executor, base: RunResult, hop: int) -> list[str]:
    problems = []
    for boundary in BOUNDARIES:
        if boundary == "answer" or boundary not in executor.spec.boundaries:
            continue  # `answer` is where frozen re-answers write, not a fork point
        fork = executor.fork(base, hop, boundary, identity)
        at = f"{base.example_id}: identity fork at hop {hop}, boundary {boundary!r}"
        if fork.trace.to_json() != base.trace.to_json():
            problems.append(f"{at}: the trace differs from the run's "
                            f"({_first_difference(base.trace, fork.trace)})")
        first = hop + 1 if boundary == "read" else hop
        if (spent := prefix_skill_calls(fork, first)):
            problems.append(f"{at}: {spent} skill calls re-ran hops before {first} (the "
                            "step keys do not say which hop a node execution belongs to)")
    return problems


def _hooks(executor: Executor, base: RunResult, hop: int) -> list[str]:
    spec, at = executor.spec, f"{base.example_id}: hop {hop}"
    problems = []
    seen = _first_attempt(executor.fork(base, hop, "retrieve", replace_evidence([])), hop)
    if seen is None or seen.retrieved:
        problems.append(f"{at}: with_evidence([]) left the hop's evidence in view — it must "
                        "return a state in which the current hop sees the given evidence")
    searched = _first_attempt(executor.fork(base, hop, "plan", replace_subquery(PROBE_QUERY)),
                              hop)
    if searched is None or searched.subquery != PROBE_QUERY:
        got = "nothing" if searched is None else repr(searched.subquery)
        problems.append(f"{at}: with_subquery({PROBE_QUERY!r}) searched {got} — the hop must "
                        f"search the sub-query it is given (issues_query {spec.issues_query!r})")
    stopped = executor.fork(base, hop - 1, "read", force_answer(hop - 1))
    if len(stopped.trace.hops) != hop - 1:
        problems.append(f"{at}: with the hop budget ({spec.budget_key!r}) lowered to {hop - 1}, "
                        f"the agent took {len(stopped.trace.hops)} hops — it must honour it")
    frozen = executor.reanswer(base, {hop: []})
    kept = frozen.trace.hops[hop - 1] if len(frozen.trace.hops) >= hop else None
    if kept is None or kept.retrieved:
        problems.append(f"{at}: with_hops({{{hop}: []}}) left hop {hop} as observed — a frozen "
                        "re-answer must see the replaced hop")
    if "replan" in spec.repairs and type(spec).with_retry is not AgentSpec.with_retry:
        record = executor.repaired_hop(base, hop, None, retry=True)
        if record is None or not record.attempts:
            problems.append(f"{at}: with_retry re-opened the hop and the agent did not retry "
                            "it — the `replan` repair it allows must make it ask again")
    if "reread" in spec.repairs:
        problems += _rereads(executor, base, hop)
    return problems


def _rereads(executor: Executor, base: RunResult, hop: int) -> list[str]:
    """The `reread` repair at `hop` must reach the reader: the re-read hop's read request
    asks for another reading (`context.reading(hop)` passed as `ReadRequest.reading`)."""
    with executor.skills.collect() as asked:
        executor.repaired_hop(base, hop, get_repair("reread").condition(hop))
    if asked.rereads:
        return []
    return [f"{base.example_id}: hop {hop}: the `reread` repair it allows asked the reader for "
            "no other reading — pass reading=runtime.context.reading(hop) in its ReadRequest, "
            "or drop 'reread' from the spec's repairs"]


def _first_attempt(run: RunResult, hop: int) -> Any:
    return run.trace.hops[hop - 1].first_attempt() if len(run.trace.hops) >= hop else None


def _first_difference(a: Trace, b: Trace) -> str:
    left, right = a.model_dump(mode="json"), b.model_dump(mode="json")
    for key in left:
        if left[key] != right.get(key):
            return f"field {key!r}"
    return "field order"


class _Killed(BaseException):
    """The process dies here: no `except Exception` catches it."""


def _check_resume(ref: str, *, n: int, hops: int, seed: int) -> list[str]:
    from typer.testing import CliRunner

    from cuer_agent.cli import app
    from cuer_agent.run_dir import RunDir

    def command(out: Path) -> list[str]:
        return ["run", "--agent", ref, "--dataset", "synthetic", "--hops", str(hops),
                "--n", str(n), "--seed", str(seed), "--no-cache", "--no-progress",
                "--out", str(out)]

    runner = CliRunner()
    with tempfile.TemporaryDirectory(prefix="cuer-kit-") as tmp:
        whole, killed = Path(tmp) / "whole", Path(tmp) / "killed"
        done = runner.invoke(app, command(whole))
        if done.exit_code != 0:
            return [f"kill and resume: `cuer-agent run --agent {ref}` failed: "
                    f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}"]
        original: Callable[..., None] = RunDir.append_rows

        def dying(self: RunDir, name: str, rows: Sequence[JsonRow]) -> None:
            original(self, name, rows)
            raise _Killed

        RunDir.append_rows = dying  # type: ignore[method-assign]
        try:
            runner.invoke(app, command(killed))
        except _Killed:
            pass
        finally:
            RunDir.append_rows = original  # type: ignore[method-assign]
        again = runner.invoke(app, command(killed))
        if again.exit_code != 0:
            return [f"kill and resume: the resumed run failed: {again.stderr.strip()}"]
        differ = [name for name in ("traces.jsonl", "summary.json")
                  if not filecmp.cmp(whole / name, killed / name, shallow=False)]
        return [f"kill and resume: {name} of the resumed run differs from an uninterrupted "
                "one" for name in differ]
