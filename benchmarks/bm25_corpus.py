"""BM25 at corpus scale: index build time, peak memory and query latency per engine.

Run by hand; CI runs `--smoke` (tests/test_benchmarks.py)::

    python benchmarks/bm25_corpus.py --size 1000000 --queries 200 --engines bm25s,rank_bm25
    python benchmarks/bm25_corpus.py --smoke     # 2,000 passages, 10 queries: CI's run

The corpus is the synthetic world, ``cuer_agent.data.synthetic.build_world(seed, size)``;
when that module is not available a stand-in generator in this file makes Zipf-distributed
pseudo-word passages of 40-80 words whose most frequent ranks are real stopwords. The
output says which one was used.

Each engine runs in a child process of its own, pinned to one core
(``os.sched_setaffinity(0, {core})``), so memory figures do not mix. Memory is resident
set size (RSS) from /proc/self/status, not tracemalloc (which misses numpy's and would
slow the build): ``RSS before`` once the corpus and chunks exist, ``build peak`` = VmHWM
after resetting it (``/proc/self/clear_refs``) just before indexing, ``RSS after`` = what
the index keeps. ``build`` is the `BM25Retriever` constructor (tokenization + index).
Latency is the wall time of ``retrieve(query, k)`` end to end (tokenize, score, select,
build Evidence), after 3 warm-up queries. Two query sets: ``passage`` = 12 consecutive
words of passages drawn with a seeded generator; ``question`` = the synthetic world's own
questions (``make_questions``), the agent's real workload. rank_bm25 scores every
document in Python for every query term (about 100x slower), so it times only the first
``--rank-bm25-queries`` (default 20) of each set and can be run at a smaller size
(``--rank-bm25-size``); both are printed.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np
from _smoke import parse_args

from cuer_agent.data._example import Passage
from cuer_agent.retrieval import IDFS, STOPWORDS, BM25Retriever, chunk_passages

QUERY_WORDS = 12
SMOKE = {"size": 2000, "queries": 10}


def fallback_passages(seed: int, size: int) -> list[Passage]:
    """Zipf(1.1) pseudo-words over a 300k vocabulary, 40-80 words a passage; the top
    ranks are the real stopwords so the tokenizer sees English-like frequencies."""
    rng = np.random.default_rng(seed)
    syllables = [o + v for o in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai")]
    n_syl = len(syllables)

    def word(i: int) -> str:
        out = []
        i += n_syl  # at least two syllables, so no pseudo-word is a stopword
        while i:
            i, r = divmod(i, n_syl)
            out.append(syllables[r])
        return "".join(out)

    vocab = sorted(STOPWORDS) + [word(i) for i in range(300_000)]
    lengths = rng.integers(40, 81, size)
    ranks = np.minimum(rng.zipf(1.1, int(lengths.sum())), len(vocab)) - 1
    ends = np.cumsum(lengths)
    passages = []
    for n in range(size):
        words = [vocab[r] for r in ranks[ends[n] - lengths[n]:ends[n]]]
        title = f"{word(n).capitalize()} {word(n * 7 + 3).capitalize()}"
        passages.append(Passage(title=title, text=" ".join(words) + ".", index=n))
    return passages


def build_corpus(seed: int, size: int, n_questions: int) -> tuple[list[Passage], list[str], str]:
    """Passages, and (when the synthetic world exists) its own questions as a second
    query set: the agent's real workload."""
    try:
        from cuer_agent.data.synthetic import build_world, make_questions
    except ImportError:
        return fallback_passages(seed, size), [], "fallback Zipf generator (benchmarks/)"
    world = build_world(seed=seed, size=size)
    questions = [ex.question for ex in make_questions(world, n_questions, seed=seed)]
    return list(world.passages), questions, "cuer_agent.data.synthetic.build_world"


def draw_queries(passages: list[Passage], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + 1)
    queries = []
    for _ in range(n):  # one draw at a time: the first m queries are the same for any n
        words = passages[int(rng.integers(len(passages)))].text.split()
        start = int(rng.integers(0, max(1, len(words) - QUERY_WORDS + 1)))
        queries.append(" ".join(words[start:start + QUERY_WORDS]))
    return queries


def _status_mb(field: str) -> float:
    """A memory line of /proc/self/status (VmRSS: current RSS, VmHWM: peak RSS), in MiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak covers indexing only."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _latency(retriever: BM25Retriever, queries: list[str], k: int) -> dict[str, Any]:
    for q in queries[:3]:  # warm-up: first-call imports and caches
        retriever.retrieve(q, k)
    latencies, tops = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = retriever.retrieve(q, k)
        latencies.append(time.perf_counter() - t0)
        tops.append([e.id for e in hits])
    ms = np.array(latencies) * 1000
    return {"n": len(queries), "median_ms": float(np.median(ms)),
            "p95_ms": float(np.percentile(ms, 95)),
            "mean_hits": float(np.mean([len(t) for t in tops])), "tops": tops}


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    """One engine, one process: build the corpus, index it, time the queries."""
    os.sched_setaffinity(0, {args.core})
    t0 = time.perf_counter()
    passages, questions, source = build_corpus(args.seed, args.size, args.queries)
    chunks = chunk_passages(passages)
    corpus_s = time.perf_counter() - t0
    # Engines run in separate processes: the fingerprint proves they indexed the same corpus.
    digest = hashlib.sha1()
    for c in chunks:
        digest.update(f"{c.id}\t{c.title}\t{c.text}\n".encode())
    # Draw the full sets, then cap: a capped engine times a prefix of the same queries.
    query_sets = {"passage": draw_queries(passages, args.queries, args.seed)[:args.cap]}
    if questions:
        query_sets["question"] = questions[:args.cap]
    del passages
    gc.collect()
    exact_peak = _reset_peak_rss()
    rss_before = _status_mb("VmRSS")
    t0 = time.perf_counter()
    retriever = BM25Retriever(chunks, engine=args.engine, idf=args.idf)
    build_s = time.perf_counter() - t0
    peak = (_status_mb("VmHWM") if exact_peak
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    rss_after = _status_mb("VmRSS")
    return {"engine": args.engine, "size": args.size, "source": source,
            "chunks": len(chunks), "corpus_s": corpus_s, "build_s": build_s,
            "rss_before_mb": rss_before, "peak_mb": peak, "rss_after_mb": rss_after,
            "exact_peak": exact_peak, "fingerprint": digest.hexdigest()[:12],
            "latency": {kind: _latency(retriever, qs, args.k) for kind, qs in query_sets.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--engines", default="bm25s,rank_bm25")
    ap.add_argument("--rank-bm25-queries", type=int, default=20)
    ap.add_argument("--rank-bm25-size", type=int, default=None,
                    help="corpus size for rank_bm25 (default: --size)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--idf", choices=IDFS, default="robertson")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--engine", help=argparse.SUPPRESS)  # child mode
    ap.add_argument("--cap", type=int, default=None, help=argparse.SUPPRESS)
    args = parse_args(ap, SMOKE)
    if args.engine:
        print(json.dumps(run_child(args)))
        return

    results = []
    for engine in args.engines.split(","):
        size, cap = args.size, args.queries
        if engine == "rank_bm25":
            size = args.rank_bm25_size or args.size
            cap = min(cap, args.rank_bm25_queries)
        cmd = [sys.executable, __file__, "--engine", engine, "--size", str(size),
               "--queries", str(args.queries), "--cap", str(cap), "--k", str(args.k),
               "--seed", str(args.seed), "--core", str(args.core), "--idf", args.idf]
        print(f"running {engine} at {size:,} passages, {cap} queries a set ...", flush=True)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))

    first = results[0]
    print(f"\ncorpus: {first['source']}, seed {args.seed}, fingerprint "
          f"{first['fingerprint']}; k={args.k}; idf={args.idf}; one core "
          f"(affinity {{{args.core}}}); memory = RSS from /proc/self/status, peak = VmHWM "
          f"reset just before indexing" + ("" if first["exact_peak"] else
                                            " (reset failed: ru_maxrss of the whole run)"))
    print(f"{'engine':<10} {'passages':>10} {'chunks':>10} {'corpus s':>9} {'build s':>8} "
          f"{'RSS before MB':>13} {'build peak MB':>13} {'RSS after MB':>12} "
          f"{'queries':>16} {'median ms':>9} {'p95 ms':>8} {'hits':>5}")
    for r in results:
        for kind, lat in r["latency"].items():
            label = f"{lat['n']} {kind}"
            print(f"{r['engine']:<10} {r['size']:>10,} {r['chunks']:>10,} {r['corpus_s']:>9.1f} "
                  f"{r['build_s']:>8.1f} {r['rss_before_mb']:>13.0f} {r['peak_mb']:>13.0f} "
                  f"{r['rss_after_mb']:>12.0f} {label:>16} "
                  f"{lat['median_ms']:>9.2f} {lat['p95_ms']:>8.2f} {lat['mean_hits']:>5.1f}")
    by_engine = {r["engine"]: r for r in results}
    if "rank_bm25" in by_engine:
        r = by_engine["rank_bm25"]
        print(f"note: rank_bm25 query count capped at {args.rank_bm25_queries} per query set"
              + (f"; run at {r['size']:,} passages" if r["size"] != args.size else ""))
    if {"bm25s", "rank_bm25"} <= by_engine.keys() and (
            by_engine["bm25s"]["size"] == by_engine["rank_bm25"]["size"]):
        if by_engine["bm25s"]["fingerprint"] != by_engine["rank_bm25"]["fingerprint"]:
            print("corpus fingerprints differ between the engine runs (generator changed?): "
                  "top-k lists not compared")
            return
        for kind, lat in by_engine["rank_bm25"]["latency"].items():
            a, b = by_engine["bm25s"]["latency"][kind]["tops"], lat["tops"]
            same = sum(x == y for x, y in zip(a, b, strict=False))
            print(f"{kind} queries: top-{args.k} lists of the engines identical on "
                  f"{same}/{len(b)}")


if __name__ == "__main__":
    main()
