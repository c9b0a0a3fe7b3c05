#!/usr/bin/env python3
"""Generation cache: what a re-run after an output_schema edit costs, and what an empty cache costs.

On the synthetic model (build/mmirage-make-test-model), a config with two model outputs (a plain summary and a
JSON judgement over it) over N rows (default 500):

  rerun   : the config is run once (filling the cache), its output_schema is edited, and the edited config is run
            with the cache (every generation is a hit) and with `cache: off` (every generation again). Prints both
            wall times and the ratio (goal <= 0.05).
  overhead: the same config on an EMPTY cache (every lookup misses, every generation is written): the time spent
            inside the cache (as the run logs it) as a share of the run's wall time (goal <= 2 %), and, for
            reference, the wall times vs `cache: off`, alternating, `--repeats` times each (noisy on a busy
            machine). Wall time is the whole `mmirage run` process (model load included), as a user sees it.

Usage: bench/cache_bench.py [rerun|overhead|all] [--rows N] [--repeats K] [--threads T]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.join(ROOT, "build")
MMIRAGE = os.path.join(BUILD, "mmirage")
MAKE_MODEL = os.path.join(BUILD, "mmirage-make-test-model")

CONFIG = """processors:
  - type: llm
    server_args:
      model_path: {model}
      extra_engine_args: {{max_running_requests: 8, context_length: 512, n_threads: {threads}}}
    default_sampling_params: {{temperature: 0, max_new_tokens: {max_new}, stop: ["e"]}}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}, output_format: jsonl}}]
  state_dir: {state}
processing_params:
  inputs: [{{name: text, key: text}}, {{name: id, key: id}}]
  outputs:
    - name: summary
      type: llm
      prompt: "Summarise in one line: {{{{ text }}}}"
    - name: judge
      type: llm
      output_type: JSON
      output_schema: {{score: {{type: int, min: 0, max: 3}}}}
      prompt: "Rate this summary of '{{{{ text }}}}': {{{{ summary }}}}"
  remove_columns: true
  output_schema:
    id: "{{{{ id }}}}"
    summary: "{{{{ summary }}}}"
{schema_extra}execution_params:
  max_failed_rows: 100000
  cache: {cache}
  cache_dir: {cache_dir}
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return r


def timed_run(tmp, name, args, model, data, cache, cache_dir, edited=False):
    d = os.path.join(tmp, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(model=model, threads=args.threads, max_new=args.max_new, data=data,
                              out=os.path.join(d, "out"), state=os.path.join(d, "state"),
                              schema_extra='    score: "{{ judge.score }}"\n' if edited else "", cache=cache,
                              cache_dir=cache_dir))
    t0 = time.monotonic()
    r = run([MMIRAGE, "run", "--config", cfg, "--log-level", "INFO", "--quiet"])
    wall = time.monotonic() - t0
    m = re.search(r"([0-9.]+) s spent on the cache", r.stderr)
    cache_s = float(m.group(1)) if m else 0.0
    with open(os.path.join(d, "state", "shard_0", "status.json")) as f:
        stats = json.load(f)["stats"]
    gens = cached = 0
    with open(os.path.join(d, "out", "shard_0", "usage.jsonl")) as f:
        for line in f:
            u = json.loads(line)
            gens += u["generations"]
            cached += u["cached_generations"]
    return wall, gens, cached, cache_s


def bench_rerun(tmp, args, model, data):
    cache_dir = os.path.join(tmp, "cache-rerun")
    w0, g0, c0, _ = timed_run(tmp, "first", args, model, data, "readwrite", cache_dir)
    w_hit, g1, c1, _ = timed_run(tmp, "edited-cached", args, model, data, "readwrite", cache_dir, edited=True)
    w_off, g2, c2, _ = timed_run(tmp, "edited-nocache", args, model, data, "off", cache_dir, edited=True)
    print(f"rerun    : first run {w0:7.2f} s ({g0} generations) | after an output_schema edit: with cache "
          f"{w_hit:6.2f} s ({c1}/{g1} from the cache), without {w_off:7.2f} s ({g2 - c2} generated) | "
          f"ratio {w_hit / w_off:.3f} (goal <= 0.05)")


def bench_overhead(tmp, args, model, data):
    cold, off, spent = [], [], []
    for k in range(args.repeats):
        cache_dir = os.path.join(tmp, f"cache-cold-{k}")  # empty every time: every lookup misses
        w, g, c, cs = timed_run(tmp, "cold", args, model, data, "readwrite", cache_dir)
        cold.append(w)
        spent.append(cs / w)
        w2, _, _, _ = timed_run(tmp, "off", args, model, data, "off", cache_dir)
        off.append(w2)
    mc, mo = statistics.median(cold), statistics.median(off)
    # The wall-clock difference is at the mercy of the machine's load; the time measured inside the cache (open,
    # model identity, keys, lookups, writes, seal) is the overhead itself, as a share of the same run's wall time.
    print(f"overhead : time inside the cache on an empty cache {100 * statistics.median(spent):.3f} % of the run's "
          f"wall time (goal <= 2 %) | wall: empty cache {mc:7.2f} s vs cache off {mo:7.2f} s, medians of "
          f"{args.repeats} ({', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(cold, off))}): {100 * (mc - mo) / mo:+.2f} %")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", default="all", choices=["rerun", "overhead", "all"])
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("MMIRAGE_BENCH_THREADS", "1")))
    ap.add_argument("--max-new", type=int, default=24)
    args = ap.parse_args()
    for b in (MMIRAGE, MAKE_MODEL):
        if not os.path.exists(b):
            sys.exit(f"{b} is missing: run scripts/setup.sh first")
    tmp = tempfile.mkdtemp(prefix="mmirage-cache-bench-")
    try:
        model = os.path.join(tmp, "model.gguf")
        run([MAKE_MODEL, "--out", model, "--seed", "5"])
        data = os.path.join(tmp, "data.jsonl")
        with open(data, "w") as f:
            for i in range(args.rows):
                words = " ".join(f"w{(i * 3 + w) % 31}" for w in range(1 + (i * 11) % 30))
                f.write(json.dumps({"id": i, "text": f"Row {i}: {words}"}) + "\n")
        if args.what in ("rerun", "all"):
            bench_rerun(tmp, args, model, data)
        if args.what in ("overhead", "all"):
            bench_overhead(tmp, args, model, data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
