"""Run an agent on an example; fork a run at hop h and let the same agent re-execute the suffix.

The agent is a compiled LangGraph graph and its `AgentSpec` (`cuer_agent.agents`): our
agent, the single-shot system, or a user's graph (``agent="module:factory"``). Nothing
below knows more of an agent than its spec says. Semantics (tests/test_execution.py,
tests/test_agent_spec.py):

* **run** streams the compiled graph and keeps a *snapshot* of the state after every
  node, keyed by the spec's step key (``"<hop>:<role>"``, ``"<hop>.<attempt>:<role>"``
  for a retry, ``"final:answer"``); ``"0:start"`` is the initial state.
* **fork(base, hop, boundary, edit, condition)** copies the snapshot at a boundary of
  hop *h*, applies `edit`, seeds a fresh thread with it via ``update_state(...,
  as_node=<node>)`` and resumes with ``invoke(None)``: LangGraph's own edges choose what
  runs next, and nothing before the boundary runs again (no skill call is spent on the
  prefix). Boundaries: ``"plan"`` and ``"retrieve"`` (after hop h's *first* plan or
  retrieval: where a fault meets the hop), ``"read"`` (after hop h's *last* read — or,
  for an agent that reads and plans in one node, after hop h's retrieval: the boundary
  between hop h and h+1; ``read`` of hop 0 is the initial state).
* **conditions**: a run may execute under a `Condition` (a fault in force, see
  `cuer_agent.graphs.state`). The graph's tools consult it, through the run context,
  for the sub-query issued and the evidence returned, and the executor caps the hop
  budget (the spec's `budget_key`) with it; a fork takes the
  condition it is given (by default its base run's), and every later re-execution of the
  run — retries, regenerated suffixes, probes — meets the same fault.
* **reanswer(base, overrides)** (frozen): replace some hops' evidence, keep every other
  hop as observed, run only ``answer``.
* **rerun_hop(run, j)** and **repair_and_regenerate(run, j)**: re-execute hop j with hop j
  *repaired* (`Condition.repaired(j)`: a clean retriever and sub-query at hop j), keep
  hops < j as observed; the first stops after hop j, the second lets the agent continue
  under the fault as it held in the run — so regenerating from hop 1 is not a clean
  restart, and a suffix that asks the faulted query again meets the fault again.
* **continue_retrieving(run)**: one hop more than the run took, with that hop repaired
  (a forced early stop is lifted; other faults still hold).

* **cost**: `RunResult.spent` counts the skill requests of one invocation (the
  `SkillClient` request log: calls, tokens, invalid replies, retries). An agent that
  counts nothing in its state gets its trace's cost from the same log, a fork's
  including what its prefix cost.

* **reuse**: with repeatable skills (a response cache, or the deterministic offline
  reader) an execution is a function of its inputs, so a repeated one — same example,
  state, entry node, condition, stop rule and inherited cost — returns the stored result
  and counts its requests again in every open request log (`SkillClient.replay`): every
  output byte is as if it ran again. Snapshots are deep copies, or shallow ones sharing
  unchanged values for a spec that declares `shares_state` (its nodes never edit a value
  in place).

Edits go through the spec's writers, which rewrite the observable trace consistently
(an edited retrieval shows in the RETRIEVE step), because the trace must not reveal
that an intervention happened.

Where it lives: `AgentConfig`, `RunResult` and `Spent` in `_results`, the `Executor` in
`_executor`, the fork edits in `_edits`; every name is imported from here.
"""

from __future__ import annotations

from cuer_agent.agents import hop_of_key
from cuer_agent.execution._edits import (
    Edit,
    force_answer,
    identity,
    replace_evidence,
    replace_subquery,
    without_retries,
)
from cuer_agent.execution._executor import Executor, our_system
from cuer_agent.execution._results import AgentConfig, Mode, RunResult, Spent, nothing_spent
from cuer_agent.graphs.state import AgentState
from cuer_agent.trace import build_trace

__all__ = ["AgentConfig", "AgentState", "Edit", "Executor", "Mode", "RunResult", "Spent",
           "build_trace", "force_answer", "hop_of_key", "identity", "nothing_spent",
           "our_system", "replace_evidence", "replace_subquery", "without_retries"]
