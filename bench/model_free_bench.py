#!/usr/bin/env python3
"""Model-free path: `mmirage run` vs a Python loop doing the original's per-row work.

Same config and data for both. The Python peer does what MMIRAGE does per row, minus HF datasets overhead:
json.loads, one compiled jmespath search per input, one compiled Jinja2 template render per output_schema string
(with the plain-variable bypass), json.dumps. It is a generous baseline: the original also pays for Arrow
conversion and HF map() batching.

Prints rows/s of both and the ratio (goal: >= 50x). Usage:
  bench/model_free_bench.py [--rows N] [--mmirage build/mmirage] [--python-rows N]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from model_free_common import PROCESSING, row_function, synthetic_row

CONFIG = """processors: []
loading_params:
  datasets:
    - type: JSONL
      path: {data}
      output_dir: {out}
      output_format: jsonl
  state_dir: {state}
""" + PROCESSING


def make_rows(n, path):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps(synthetic_row(i)) + "\n")


def python_peer(config_path, data_path, out_path, limit):
    """The original's per-row work, templates and expressions compiled once."""
    fn = row_function(config_path)
    n = 0
    with open(data_path) as f, open(out_path, "w") as out:
        for line in f:
            if n >= limit:
                break
            out.write(json.dumps(fn(json.loads(line))) + "\n")
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--python-rows", type=int, default=100_000, help="rows the (slow) Python peer processes")
    ap.add_argument("--mmirage", default=os.path.join(os.path.dirname(__file__), "..", "build", "mmirage"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mmirage_bench_")
    try:
        data = os.path.join(tmp, "data.jsonl")
        make_rows(args.rows, data)
        cfg = os.path.join(tmp, "cfg.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(data=data, out=os.path.join(tmp, "out"), state=os.path.join(tmp, "state")))

        t0 = time.perf_counter()
        subprocess.run([args.mmirage, "run", "--config", cfg, "--log-level", "WARNING"], check=True)
        t_cpp = time.perf_counter() - t0
        n_cpp = sum(1 for _ in open(os.path.join(tmp, "out", "shard_0", "data.jsonl")))
        assert n_cpp == args.rows, (n_cpp, args.rows)

        t0 = time.perf_counter()
        n_py = python_peer(cfg, data, os.path.join(tmp, "py.jsonl"), args.python_rows)
        t_py = time.perf_counter() - t0

        # Same output on the rows both processed (key order and values).
        with open(os.path.join(tmp, "out", "shard_0", "data.jsonl")) as a, open(os.path.join(tmp, "py.jsonl")) as b:
            for i, (x, y) in enumerate(zip(a, b)):
                if json.loads(x) != json.loads(y):
                    print(f"row {i} differs:\n  mmirage {x.strip()}\n  python  {y.strip()}", file=sys.stderr)
                    break

        r_cpp, r_py = n_cpp / t_cpp, n_py / t_py
        print(f"mmirage run   : {n_cpp:>9} rows in {t_cpp:7.2f} s = {r_cpp:12,.0f} rows/s")
        print(f"python loop   : {n_py:>9} rows in {t_py:7.2f} s = {r_py:12,.0f} rows/s")
        print(f"ratio         : {r_cpp / r_py:.1f}x (goal >= 50x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
