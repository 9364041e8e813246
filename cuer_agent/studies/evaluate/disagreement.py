"""How much the synthetic world disagrees with itself, and how often a clean run met it
(`WorldDisagreement`): facts whose article states a former value as former
(`cuer_agent.data._synthetic_former`), and the clean runs whose gold chain asks one.
The chain is read as a label (experimenter side: which entity and relation each hop
asks), never by the agent or a diagnoser."""

from __future__ import annotations

from collections.abc import Mapping

from cuer_agent.data import Dataset, Example
from cuer_agent.data._synthetic_world import World
from cuer_agent.interventions.facts import SyntheticFacts, fact_source
from cuer_agent.studies.evaluate.summary_model import WorldDisagreement


def _asks_a_former_value(example: Example, world: World) -> bool:
    return any(hop.relation is not None and hop.support_title is not None
               and (world.id_of(hop.support_title), hop.relation) in world.former
               for hop in example.hops)


def world_disagreement(dataset: Dataset, correct: Mapping[str, bool]
                       ) -> WorldDisagreement | None:
    """The disagreement of the dataset's synthetic world and the clean runs (`correct`:
    example id → whether its clean run was right) that asked a fact stating a former
    value; None for a data set that is no synthetic world."""
    source = fact_source(dataset)
    if not isinstance(source, SyntheticFacts):
        return None
    world = source.world
    stated, changeable = world.former_rate()
    examples = {ex.id: ex for ex in dataset.examples}
    asking = {i: _asks_a_former_value(examples[i], world)
              for i in correct if i in examples}
    hit = [correct[i] for i, asks in asking.items() if asks]
    miss = [correct[i] for i, asks in asking.items() if not asks]
    return WorldDisagreement(
        former_stated=stated, changeable=changeable,
        share=round(stated / changeable, 6) if changeable else 0.0,
        clean_runs=len(asking), asking_one=len(hit),
        accuracy_asking_one=round(sum(hit) / len(hit), 6) if hit else None,
        accuracy_others=round(sum(miss) / len(miss), 6) if miss else None)
