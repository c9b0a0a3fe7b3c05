#!/usr/bin/env python3
"""`mmirage tune` and prefix-aware row order, measured in one run.

  tune  : a config whose engine settings are mis-set (one parallel sequence, default) and one already set well
          (`--good-parallel`); each is tuned with `mmirage tune --budget-seconds B --write`, then the original and
          the tuned copy run over the same N rows. Prints output tok/s tuned / original (goal >= 1.3 where mis-set,
          >= 1.0 where already good) and the tuning wall time / budget (goal <= 1.1).
  prefix: a dataset whose rows carry one of 8 long system prompts, shuffled; the same config runs with
          `order: input` and `order: prefix`. Prints prompt tokens evaluated prefix / input (goal <= 0.5; evaluated
          = prompt tokens - those served by the engine's shared prefix) and rows/s prefix / input (goal >= 1.2).

Models: the synthetic model (build/mmirage-make-test-model, default) or `--model PATH` (e.g. the quickstart model,
build/models/smollm2-135m-instruct-q4_1.gguf). Wall times are whole `mmirage` processes, as a user sees them; the
throughputs are the runs' own (status.json: output tokens / inference seconds).

Usage: bench/tune_bench.py [tune|prefix|all] [--rows N] [--budget S] [--model PATH] [--threads T]
"""
import argparse
import json
import os
import random
import shutil
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
      extra_engine_args: {{max_running_requests: {parallel}, context_length: 1024, n_threads: {threads}}}
    default_sampling_params: {{temperature: 0, max_new_tokens: {max_new}}}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}, output_format: jsonl}}]
  state_dir: {state}
processing_params:
  inputs: [{{name: sys, key: sys}}, {{name: q, key: q}}, {{name: id, key: id}}]
  outputs:
    - {{name: a, type: llm, prompt: "{{{{ sys }}}}\\n\\nQuestion: {{{{ q }}}}"}}
  order: {order}
  remove_columns: true
  output_schema: {{id: "{{{{ id }}}}", a: "{{{{ a }}}}"}}
execution_params: {{cache: off}}
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return r


def write_rows(path, n, seed=7):
    rnd = random.Random(seed)
    systems = []
    for s in range(8):
        words = " ".join(f"rule{s}_{w}" for w in range(60))
        systems.append(f"You are assistant {s}. Follow these rules carefully: {words}.")
    rows = [{"id": i, "sys": systems[rnd.randrange(8)], "q": f"What is item {i} made of?"} for i in range(n)]
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def write_config(d, args, data, parallel, order="input"):
    os.makedirs(d, exist_ok=True)
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(model=args.model, parallel=parallel, threads=args.threads, max_new=args.max_new,
                              data=data, out=os.path.join(d, "out"), state=os.path.join(d, "state"), order=order))
    return cfg


def run_stats(cfg, state_dir):
    start = time.time()
    run([MMIRAGE, "run", "--config", cfg])
    wall = time.time() - start
    with open(os.path.join(state_dir, "shard_0", "status.json")) as f:
        st = json.load(f)["stats"]
    infer = st.get("inference_runtime_seconds") or st["runtime_seconds"]
    return {"wall": wall, "out_tps": (st.get("output_tokens") or 0) / infer, "rows_ps": st["rows_processed"] / infer,
            "prompt": st.get("input_tokens") or 0, "reused": st.get("prompt_tokens_reused") or 0}


def bench_tune(tmp, args, data):
    for label, parallel in (("mis-set", 1), ("already good", args.good_parallel)):
        d = os.path.join(tmp, f"tune_{parallel}")
        shutil.rmtree(d, ignore_errors=True)
        cfg = write_config(d, args, data, parallel)
        tuned = os.path.join(d, "tuned.yaml")
        start = time.time()
        r = run([MMIRAGE, "tune", "--config", cfg, "--budget-seconds", str(args.budget), "--sample", str(args.sample),
                 "--format", "json", "--write", tuned])
        tune_wall = time.time() - start
        rep = json.loads(r.stdout)
        base = run_stats(cfg, os.path.join(d, "state"))
        with open(tuned) as f:
            text = f.read().replace(os.path.join(d, "state"), os.path.join(d, "state_tuned")).replace(
                os.path.join(d, "out"), os.path.join(d, "out_tuned"))
        with open(tuned, "w") as f:
            f.write(text)
        after = run_stats(tuned, os.path.join(d, "state_tuned"))
        print(f"tune [{label}: max_running_requests={parallel}] best: {rep['best']['label']} "
              f"({len(rep['trials'])} trials, tune's own gain {rep['gain']:.2f}x)")
        print(f"  output tok/s tuned / original: {after['out_tps']:.1f} / {base['out_tps']:.1f} = "
              f"{after['out_tps'] / base['out_tps']:.2f}x (goal {'>= 1.3' if parallel == 1 else '>= 1.0'})")
        print(f"  tuning wall time / budget: {tune_wall:.1f} s / {args.budget:.0f} s = {tune_wall / args.budget:.2f}")


def bench_prefix(tmp, args, data):
    res = {}
    for order in ("input", "prefix"):
        d = os.path.join(tmp, f"prefix_{order}")
        shutil.rmtree(d, ignore_errors=True)
        cfg = write_config(d, args, data, args.good_parallel, order)
        res[order] = run_stats(cfg, os.path.join(d, "state"))
    ev = {o: r["prompt"] - r["reused"] for o, r in res.items()}
    print(f"prefix order, 8 shared system prompts, {args.rows} rows, max_running_requests={args.good_parallel}:")
    print(f"  prompt tokens evaluated prefix / input: {ev['prefix']} / {ev['input']} = "
          f"{ev['prefix'] / max(1, ev['input']):.2f} (goal <= 0.5)")
    print(f"  rows/s prefix / input: {res['prefix']['rows_ps']:.2f} / {res['input']['rows_ps']:.2f} = "
          f"{res['prefix']['rows_ps'] / res['input']['rows_ps']:.2f}x (goal >= 1.2)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="all", choices=["tune", "prefix", "all"])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--budget", type=float, default=30)
    ap.add_argument("--sample", type=int, default=16)
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-new", dest="max_new", type=int, default=16)
    ap.add_argument("--good-parallel", dest="good_parallel", type=int, default=8)
    args = ap.parse_args()
    for p in (MMIRAGE, MAKE_MODEL):
        if not os.path.exists(p):
            sys.exit(f"missing {p}: build first (scripts/setup.sh)")
    tmp = tempfile.mkdtemp(prefix="mmirage-tune-bench-")
    try:
        if not args.model:
            args.model = os.path.join(tmp, "tiny.gguf")
            run([MAKE_MODEL, "--out", args.model, "--seed", "3"])
        args.model = os.path.abspath(args.model)
        data = os.path.join(tmp, "data.jsonl")
        write_rows(data, args.rows)
        print(f"model {os.path.basename(args.model)}, {args.rows} rows, {args.threads} threads")
        if args.what in ("tune", "all"):
            bench_tune(tmp, args, data)
        if args.what in ("prefix", "all"):
            bench_prefix(tmp, args, data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
