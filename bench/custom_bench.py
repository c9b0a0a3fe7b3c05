#!/usr/bin/env python3
"""`custom` processor: `mmirage run` with a trivial user function on 4 workers vs the original's pool design.

The baseline is what the original MMIRAGE does per row, minus HF datasets overhead: a process pool of 4 workers
(concurrent.futures.ProcessPoolExecutor, spawn, the script loaded once per worker by an initializer), one
submit() per row with the row's variables as a dict, results collected in row order, plus reading the JSONL rows
and writing the results as JSON lines. Same function, same rows.

Prints rows/s of both, the ratio (goal: >= 1x), and mmirage's marginal cost per row in µs
((T(N) - T(N/10)) / (0.9 N), so process start-up and worker boot are excluded). Usage:
  bench/custom_bench.py [--rows N] [--workers 4] [--mmirage build/mmirage] [--python python3]
"""
import argparse
import concurrent.futures as cf
import importlib.util
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time

SCRIPT = """def f(row):
    return len(row["text"]) + row["id"]
"""

CONFIG = """processors:
  - type: custom
    script_path: {script}
    function_name: f
    max_workers: {workers}
    python_executable: {python}
loading_params:
  datasets:
    - type: JSONL
      path: {data}
      output_dir: {out}
      output_format: jsonl
  state_dir: {state}
processing_params:
  inputs:
    - name: text
      key: text
    - name: id
      key: id
  outputs:
    - name: r
      type: custom
  remove_columns: true
  output_schema:
    id: "{{{{ id }}}}"
    r: "{{{{ r }}}}"
"""

_FN = None


def _init(path):
    global _FN
    spec = importlib.util.spec_from_file_location("bench_fn", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _FN = mod.f


def _call(row):
    return _FN(row)


def make_rows(n, path):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "text": f"row number {i} with some text", "meta": {"k": i % 7}}) + "\n")


def run_mmirage(binary, tmp, n, workers, python, script):
    d = tempfile.mkdtemp(dir=tmp)
    data = os.path.join(d, "data.jsonl")
    make_rows(n, data)
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(script=script, workers=workers, python=python, data=data, out=os.path.join(d, "out"),
                              state=os.path.join(d, "state")))
    t0 = time.perf_counter()
    subprocess.run([binary, "run", "--config", cfg, "--quiet"], check=True, stderr=subprocess.DEVNULL)
    secs = time.perf_counter() - t0
    with open(os.path.join(d, "out", "shard_0", "data.jsonl")) as f:
        got = sum(1 for _ in f)
    assert got == n, (got, n)
    return secs


def run_pool(tmp, n, workers, script):
    d = tempfile.mkdtemp(dir=tmp)
    data = os.path.join(d, "data.jsonl")
    make_rows(n, data)
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"), initializer=_init,
                                initargs=(script,)) as pool:
        rows = []
        with open(data) as f:
            for line in f:
                r = json.loads(line)
                rows.append({"text": r["text"], "id": r["id"]})
        futures = [pool.submit(_call, row) for row in rows]
        with open(os.path.join(d, "out.jsonl"), "w") as out:
            for row, fut in zip(rows, futures):
                out.write(json.dumps({"id": row["id"], "r": fut.result(timeout=60)}) + "\n")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--mmirage", default=os.path.join(os.path.dirname(__file__), "..", "build", "mmirage"))
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mmirage_custom_bench_")
    try:
        script = os.path.join(tmp, "fn.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        n, small = args.rows, max(1, args.rows // 10)
        t_m = run_mmirage(args.mmirage, tmp, n, args.workers, args.python, script)
        t_small = run_mmirage(args.mmirage, tmp, small, args.workers, args.python, script)
        t_p = run_pool(tmp, n, args.workers, script)
        per_row_us = (t_m - t_small) / (n - small) * 1e6 if n > small else float("nan")
        print(json.dumps({
            "rows": n, "workers": args.workers,
            "mmirage_seconds": round(t_m, 3), "mmirage_rows_per_sec": round(n / t_m, 1),
            "process_pool_seconds": round(t_p, 3), "process_pool_rows_per_sec": round(n / t_p, 1),
            "ratio_mmirage_over_pool": round(t_p / t_m, 2),
            "mmirage_marginal_us_per_row": round(per_row_us, 1),
        }, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
