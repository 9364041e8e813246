"""The response cache and the ledger: keys, persistence, concurrent use."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke

from cuer_agent.llm.backends import SkillClient
from cuer_agent.llm.cache import (
    CachedReply,
    Ledger,
    ResponseCache,
    cache_key,
    default_cache_path,
)


def test_cache_key_depends_on_every_part() -> None:
    base = ("openai", "m", "plan", [{"role": "user", "content": "x"}], {"temperature": 0})
    keys = {cache_key(*base),
            cache_key("ollama", *base[1:]),
            cache_key(base[0], "m2", *base[2:]),
            cache_key(*base[:2], "read", *base[3:]),
            cache_key(*base[:3], [{"role": "user", "content": "y"}], base[4]),
            cache_key(*base[:4], {"temperature": 0, "seed": 1}),
            cache_key(*base, "rules-2")}
    assert len(keys) == 7
    assert cache_key(*base) == cache_key(*base)


def test_the_default_cache_is_the_projects_unless_cuer_cache_names_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUER_CACHE", raising=False)
    assert default_cache_path() == tmp_path / ".cuer-cache" / "responses.sqlite"
    monkeypatch.setenv("CUER_CACHE", str(tmp_path / "elsewhere.sqlite"))
    assert default_cache_path() == tmp_path / "elsewhere.sqlite"


@pytest.mark.parametrize("where", ["project", "env", "flag"])
def test_a_command_without_cache_flags_writes_the_project_cache(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUER_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a machine-wide cache would show
    flags: list[str] = []
    expected = tmp_path / ".cuer-cache" / "responses.sqlite"
    if where == "env":
        expected = tmp_path / "env.sqlite"
        monkeypatch.setenv("CUER_CACHE", str(expected))
    elif where == "flag":
        expected = tmp_path / "flag.sqlite"
        flags = ["--cache", str(expected)]
    result = invoke(["run", "--n", "1", "--hops", "1", "--out", "r", "--no-progress", *flags])
    assert result.exit_code == 0, result.output
    assert len(ResponseCache(expected)) > 0
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*.sqlite")}
    assert written == {expected.relative_to(tmp_path)}  # no other cache, none in ~/.cache


def test_cache_persists_across_instances(tmp_path: Path) -> None:
    ResponseCache(tmp_path / "c.sqlite").put("k", "plan", CachedReply('{"a": 1}', 3, 4))
    assert ResponseCache(tmp_path / "c.sqlite").get("k") == CachedReply('{"a": 1}', 3, 4, "")


def test_cache_is_safe_under_concurrent_threads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    def work(i: int) -> None:
        for j in range(50):
            key = f"k{(i * 50 + j) % 120}"  # overlapping keys: racing writers
            cache.put(key, "read", CachedReply(key, 1, 1))
            got = cache.get(key)
            assert got is not None and got.text == key

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert len(cache) == 120


def _writer(path: str, offset: int) -> None:
    cache = ResponseCache(path)
    for j in range(100):
        cache.put(f"k{(offset + j) % 150}", "plan", CachedReply("x", 0, 0))


def test_cache_is_safe_across_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, offset)) for offset in (0, 50)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    assert len(ResponseCache(path)) == 150


def test_ledger_totals_and_rate() -> None:
    ledger = Ledger()
    ledger.add("plan", calls=2, prompt_tokens=10, completion_tokens=5)
    ledger.add("read", cache_hits=2, parse_failures=1)
    out = ledger.to_dict(timings=False)
    assert (out["calls"], out["cache_hits"], out["tokens"]) == (2, 2, 15)
    assert out["parse_failure_rate"] == 0.25
    assert "latency_s" not in out and "latency_s" not in out["by_skill"]["plan"]


def test_a_reply_read_once_is_served_from_memory_without_the_file(tmp_path: Path) -> None:
    ResponseCache(tmp_path / "c.sqlite").put("k", "plan", CachedReply("{}", 3, 4))
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") == CachedReply("{}", 3, 4)
    cache._conn.execute("DELETE FROM replies")  # only memory can answer now
    assert cache.get("k") == CachedReply("{}", 3, 4)


def test_a_miss_asks_the_file_again_so_another_processs_reply_is_found(tmp_path: Path
                                                                       ) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    ResponseCache(tmp_path / "c.sqlite").put("k", "plan", CachedReply("{}", 1, 1))
    assert cache.get("k") == CachedReply("{}", 1, 1)


def test_a_put_that_lost_the_race_serves_the_stored_reply_not_its_own(tmp_path: Path
                                                                      ) -> None:
    first, second = ResponseCache(tmp_path / "c.sqlite"), ResponseCache(tmp_path / "c.sqlite")
    first.put("k", "plan", CachedReply('{"a": 1}', 1, 1))
    second.put("k", "plan", CachedReply('{"a": 2}', 1, 1))  # ignored: the row exists
    assert second.get("k") == CachedReply('{"a": 1}', 1, 1)


def test_a_repeated_request_is_rendered_once_and_keyed_as_a_fresh_render_would_be(
        tmp_path: Path) -> None:
    from cuer_agent.llm.backends import SkillClient
    from cuer_agent.llm.extractive import ExtractiveBackend
    from cuer_agent.llm.skills import PlanRequest

    renders: list[str] = []

    class Counting(ExtractiveBackend):
        def render(self, skill, request):  # type: ignore[no-untyped-def]
            renders.append(skill)
            return super().render(skill, request)

    backend = Counting()
    skills = SkillClient(backend, cache=ResponseCache(tmp_path / "c.sqlite"))
    first = PlanRequest(question="Who directed Quorin Rising?", hop=1, hop_budget=3)
    again = PlanRequest(question="Who directed Quorin Rising?", hop=1, hop_budget=3)
    other = PlanRequest(question="Who wrote Quorin Rising?", hop=1, hop_budget=3)
    with skills.collect() as log:
        replies = [skills("plan", r).response for r in (first, again, other)]
    assert renders == ["plan", "plan"]  # `again` equals `first`: rendered once
    assert replies[0] == replies[1] != replies[2]
    fresh = [cache_key(backend.name, backend.model, "plan", ExtractiveBackend().render(
        "plan", r), backend.decoding(), backend.version) for r in (first, again, other)]
    assert list(log) == fresh


def _read_request() -> Any:
    from cuer_agent.llm.skills import EvidenceView, ReadRequest

    text = "Quorin Rising was helmed by Pell Varnick."
    return ReadRequest(question="Who directed Quorin Rising?", hop=1,
                       subquery="Who directed Quorin Rising?",
                       evidence=(EvidenceView(id="a", title="Quorin Rising", text=text),))


def test_an_edited_reader_is_never_served_a_cached_answer(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from cuer_agent.llm import _reading, extractive
    from cuer_agent.llm.extractive import ExtractiveBackend

    cache = ResponseCache(tmp_path / "c.sqlite")
    before = SkillClient(ExtractiveBackend(), cache=cache)
    old = before("read", _read_request()).response
    again = SkillClient(ExtractiveBackend(), cache=cache)
    again("read", _read_request())
    assert again.ledger.to_dict()["cache_hits"] == 1  # the same reader: served
    edited = (*_reading.RELATION_GROUPS, ("direc", "a made-up synonym", "directed helmed"))
    monkeypatch.setattr(_reading, "RELATION_GROUPS", edited)
    monkeypatch.setattr(_reading, "RELATION_STEMS", _reading._groups(*edited))
    monkeypatch.setattr(extractive, "RELATION_GROUPS", edited)
    after = SkillClient(ExtractiveBackend(), cache=cache)
    new = after("read", _read_request()).response
    counts = after.ledger.to_dict()
    assert (counts["calls"], counts["cache_hits"]) == (1, 0)
    assert new != old  # the edited table reads "helmed" as "directed"


def versions_before_and_after_an_edit(module: Any, names: tuple[str, ...], edited: str,
                                     copy_to: Path) -> tuple[str, str]:
    """`module.rules_version` of a copy of its files `names`, then again with `edited` one
    changed by a comment."""
    import shutil

    source = Path(module.__file__).parent
    for name in names:
        shutil.copy(source / name, copy_to / name)
    before = module.rules_version(root=copy_to)
    with open(copy_to / edited, "a", encoding="utf-8") as fh:
        fh.write("\n# an edited rule\n")
    return before, module.rules_version(root=copy_to)


def test_editing_a_reader_file_changes_its_version(tmp_path: Path) -> None:
    from cuer_agent.llm import extractive

    before, after = versions_before_and_after_an_edit(
        extractive, extractive.READER_MODULES, "_reading.py", tmp_path)
    assert before == extractive.rules_version() != after
    assert extractive.rules_version(relation_table=False) != extractive.rules_version()


def test_editing_a_consistency_check_leaves_the_reader_and_its_keys_unchanged(
        tmp_path: Path) -> None:
    from cuer_agent.diagnosers import _rule_checks
    from cuer_agent.llm import extractive

    before, after = versions_before_and_after_an_edit(
        _rule_checks, _rule_checks.RULE_MODULES, "_checks.py", tmp_path)
    assert before == _rule_checks.rules_version() != after
    # the reader's version (its plan/read/answer keys, the reader a run records) reads
    # none of the checks' files
    assert not set(extractive.READER_MODULES) & set(_rule_checks.RULE_MODULES)
    reader = Path(extractive.__file__).parent
    assert not any((reader / name).exists() for name in _rule_checks.RULE_MODULES)


def test_an_edited_consistency_check_is_never_served_a_cached_reply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cuer_agent.diagnosers import _rule_checks
    from cuer_agent.llm.extractive import ExtractiveBackend
    from cuer_agent.llm.skills import CheckRequest, CheckResponse

    request = CheckRequest(check="grounded", question="Who directed Quorin Rising?",
                           hops=(), answer="Pell Varnick")
    cache = ResponseCache(tmp_path / "c.sqlite")
    reader = SkillClient(ExtractiveBackend(), cache=cache)
    old = _rule_checks.rule_check_client(reader)("check", request).response
    again = _rule_checks.rule_check_client(reader)
    again("check", request)
    assert again.ledger.to_dict()["cache_hits"] == 1  # the same rules: served
    edited = CheckResponse(consistent=False, hops=[1], reason="an edited rule")
    monkeypatch.setattr(_rule_checks, "check", lambda req: edited)
    monkeypatch.setattr(_rule_checks, "rules_version", lambda root=None: "edited")
    fresh = SkillClient(ExtractiveBackend(), cache=cache)
    new = _rule_checks.rule_check_client(fresh)("check", request).response
    assert (fresh.ledger.to_dict()["calls"], fresh.ledger.to_dict()["cache_hits"]) == (1, 0)
    assert new == edited != old
