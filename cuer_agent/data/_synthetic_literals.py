"""How the synthetic world draws its literals (years, populations), in one place: the
world draws every entity's literal by these rules (`literal_values`), and a stale or
conflicting value is drawn again by the same rule (`World.literal_draw`), so nothing in
an injected value tells it from a real one."""

from __future__ import annotations

import numpy as np

LAST_YEAR = 2024
Targets = dict[tuple[str, str], np.ndarray]
"""(subject type, relation) -> object entity per subject, aligned with `by_type[type]`."""

YEAR_RANGES: dict[str, tuple[int, int]] = {
    "person": (1880, 1991), "university": (1150, 1901), "band": (1950, LAST_YEAR - 4)}
"""Type → [low, high) of its year, drawn uniformly."""
YEARS_AFTER: dict[str, tuple[str, int, int]] = {
    "film": ("directed_by", 24, 70), "book": ("written_by", 20, 75),
    "company": ("founded_by", 22, 60), "album": ("recorded_by", 0, 25)}
"""Type → (relation to its maker, fewest and most years after the maker's year)."""
CITY_POPULATION = (11.5, 1.2, 2_000, 9_000_000)
"""A city's population: exp(normal(mean, sd)) clipped to [low, high], in tens."""
COUNTRY_FACTOR = (1.5, 4.0)
"""A country's population: its cities' total times uniform(low, high), in thousands."""


def literal_values(rng: np.random.Generator, by_type: dict[str, np.ndarray],
                    targets: Targets, size: int) -> np.ndarray:
    """The literal of every entity, consistent with the graph (works after their makers'
    births, albums after their band formed, countries outnumber their cities)."""
    v = np.zeros(size, dtype=np.int64)

    def n(t: str) -> int:
        return len(by_type[t])

    v[by_type["person"]] = rng.integers(*YEAR_RANGES["person"], size=n("person"))
    for t in ("film", "book", "company"):
        rel, lo, hi = YEARS_AFTER[t]
        v[by_type[t]] = years_after(rng, v[targets[t, rel]], lo, hi)
    for t in ("university", "band"):
        v[by_type[t]] = rng.integers(*YEAR_RANGES[t], size=n(t))
    rel, lo, hi = YEARS_AFTER["album"]
    v[by_type["album"]] = years_after(rng, v[targets["album", rel]], lo, hi)
    v[by_type["city"]] = city_populations(rng, n("city"))
    totals = np.zeros(size, dtype=np.float64)
    np.add.at(totals, targets["city", "located_in"], v[by_type["city"]])
    v[by_type["country"]] = country_populations(rng, totals[by_type["country"]])
    return v


def city_populations(rng: np.random.Generator, n: int) -> np.ndarray:
    mean, sd, low, high = CITY_POPULATION
    drawn: np.ndarray = (np.exp(rng.normal(mean, sd, size=n)).clip(low, high)
                         // 10 * 10).astype(np.int64)
    return drawn


def country_populations(rng: np.random.Generator, city_totals: np.ndarray) -> np.ndarray:
    factor = rng.uniform(*COUNTRY_FACTOR, size=len(city_totals))
    drawn: np.ndarray = (city_totals * factor // 1000 * 1000).astype(np.int64)
    return drawn


def years_after(rng: np.random.Generator, base: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """A year uniformly in [base + lo, min(base + hi, LAST_YEAR)] (base + lo <= LAST_YEAR)."""
    top = np.minimum(base + hi, LAST_YEAR)
    years: np.ndarray = base + lo + (rng.random(len(base)) * (top - base - lo + 1)).astype(np.int64)
    return years
