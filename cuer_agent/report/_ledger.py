"""The ledger tables of an evaluate report: what the run's skill requests cost, in total
and per skill (how the model's replies went)."""

from __future__ import annotations

from cuer_agent.llm.cache import PARSE_FAILURE_FLAG
from cuer_agent.report._format import num
from cuer_agent.report._render import Table
from cuer_agent.report._tables import ordered
from cuer_agent.studies.evaluate.summary_model import EvaluateLedger


def ledger(led: EvaluateLedger) -> Table:
    """The backend ledger of the evaluate run: its totals."""
    counters: dict[str, int | float] = led.model_dump(exclude={"by_skill",
                                                               "diagnoser_by_skill"})
    keys = ordered(list(counters), ("requests", "calls", "cache_hits", "parse_failures",
                                     "parse_failure_rate", "tokens"))
    rows = tuple((k, num(v, 4) if isinstance(v := counters[k], float) else str(v))
                 for k in keys)
    return Table(caption="Backend ledger (whole evaluate run)", headers=("counter", "value"),
                 rows=rows)


def skills(led: EvaluateLedger) -> Table | None:
    """How each skill's replies went (from the trace rows); None when no row recorded it."""
    if not led.by_skill:
        return None
    rows = tuple((name, str(s.requests), str(s.parse_failures),
                  num(s.parse_failure_rate, 4), str(s.cut), str(s.repaired),
                  num(s.mean_completion_tokens, 1))
                 for name, s in led.by_skill.items())
    return Table(caption="Per skill (studies' traces; the diagnosers' requests are not in it)",
                 headers=("skill", "requests", "parse failures", "rate", "cut at bound",
                          "repaired", "mean output tokens"),
                 rows=rows,
                 footnote=(f"A rate over {PARSE_FAILURE_FLAG:.0%} is flagged among the "
                           "caveats: its traces measure the model's output format as much "
                           "as the agent. Cut at bound: replies a server stopped at the "
                           "output-token bound derived from the reply schema (a server that "
                           "enforces the schema never does); repaired: closed after the "
                           "last field they completed and valid."))
