#!/usr/bin/env python3
"""HF datasets path: restructure a `loadable` (save_to_disk) dataset into an HF dataset, mmirage vs the original's
Python path doing the same work.

The peer is what MMIRAGE does for a model-free config: `load_from_disk`, `Dataset.map` with the row function (one
compiled jmespath expression per input, one compiled Jinja2 template per output_schema string, with mmirage's
plain-variable bypass so types match), then `save_to_disk`. mmirage: `mmirage run` with output_format hf (the
default), one shard. Both outputs are loaded back with `datasets` and compared on sampled rows.

Prints rows/s of both, the ratio (goal: >= 20x) and mmirage's peak RSS (goal: <= 300 MB at any row count).
Usage:
  bench/hf_bench.py [--rows 500000] [--python-rows 100000] [--mmirage build/mmirage] [--keep DIR] [--mmirage-only]
"""
import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import datasets
import pyarrow as pa

from model_free_common import PROCESSING, row_function, synthetic_row

datasets.disable_progress_bars()

CONFIG = """processors: []
loading_params:
  datasets:
    - type: loadable
      path: {data}
      output_dir: {out}
  state_dir: {state}
""" + PROCESSING


def make_dataset(n, path):
    """A save_to_disk Dataset written batch by batch (1000-row record batches, as datasets writes them), so that
    building 5M rows needs no more memory than 100k."""
    os.makedirs(path, exist_ok=True)
    step = 100_000
    schema = None
    writer = None
    for s in range(0, n, step):
        rows = []
        for i in range(s, min(n, s + step)):
            rows.append(synthetic_row(i))
        table = pa.Table.from_pylist(rows)
        if writer is None:
            schema = table.schema
            features = datasets.Features.from_arrow_schema(schema)
            meta = {"huggingface": json.dumps({"info": {"features": features.to_dict()}})}
            schema = schema.with_metadata(meta)
            writer = pa.ipc.new_stream(os.path.join(path, "data-00000-of-00001.arrow"), schema)
        for b in table.cast(schema).to_batches(max_chunksize=1000):
            writer.write_batch(b)
    writer.close()
    with open(os.path.join(path, "dataset_info.json"), "w") as f:
        json.dump({"citation": "", "description": "", "features": features.to_dict(), "homepage": "", "license": ""}, f)
    with open(os.path.join(path, "state.json"), "w") as f:
        json.dump({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "bench",
                   "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
                   "_output_all_columns": False, "_split": None}, f)


def python_peer(config_path, data_path, out_path, limit):
    """The original's path: load_from_disk, map with compiled jmespath + Jinja2, save_to_disk."""
    fn = row_function(config_path)
    ds = datasets.load_from_disk(data_path)
    if limit < len(ds):
        ds = ds.select(range(limit))
    out = ds.map(fn, remove_columns=ds.column_names)
    out.save_to_disk(out_path)
    return len(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--python-rows", type=int, default=100_000, help="rows the (slow) Python peer processes")
    ap.add_argument("--mmirage", default=os.path.join(os.path.dirname(__file__), "..", "build", "mmirage"))
    ap.add_argument("--keep", help="build the dataset here and keep it (reused when present)")
    ap.add_argument("--mmirage-only", action="store_true", help="skip the Python peer (e.g. for RSS at 5M rows)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mmirage_hfbench_")
    try:
        data = os.path.join(args.keep or tmp, f"data_{args.rows}")
        if not os.path.exists(os.path.join(data, "state.json")):
            make_dataset(args.rows, data)
        cfg = os.path.join(tmp, "cfg.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(data=data, out=os.path.join(tmp, "out"), state=os.path.join(tmp, "state")))

        # mmirage is this script's first child: RUSAGE_CHILDREN's max RSS is its peak.
        t0 = time.perf_counter()
        subprocess.run([args.mmirage, "run", "-q", "--config", cfg, "--log-level", "WARNING"], check=True)
        t_cpp = time.perf_counter() - t0
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        got = datasets.load_from_disk(os.path.join(tmp, "out", "shard_0"))
        n_cpp = len(got)  # (load_from_disk memory-maps: no copy)
        assert n_cpp == args.rows, (n_cpp, args.rows)

        if args.mmirage_only:
            print(f"mmirage run (hf out)       : {n_cpp:>9} rows in {t_cpp:7.2f} s = {n_cpp / t_cpp:12,.0f} rows/s, "
                  f"peak RSS {rss_mb:.0f} MB (goal <= 300 MB)")
            return
        t0 = time.perf_counter()
        n_py = python_peer(cfg, data, os.path.join(tmp, "py"), args.python_rows)
        t_py = time.perf_counter() - t0

        want = datasets.load_from_disk(os.path.join(tmp, "py"))
        rng = random.Random(0)
        for i in [0, n_py - 1] + [rng.randrange(n_py) for _ in range(200)]:
            if got[i] != want[i]:
                print(f"row {i} differs:\n  mmirage {json.dumps(got[i])}\n  python  {json.dumps(want[i])}",
                      file=sys.stderr)
                sys.exit(1)

        r_cpp, r_py = n_cpp / t_cpp, n_py / t_py
        print(f"mmirage run (hf out)       : {n_cpp:>9} rows in {t_cpp:7.2f} s = {r_cpp:12,.0f} rows/s, "
              f"peak RSS {rss_mb:.0f} MB (goal <= 300 MB)")
        print(f"datasets.map + save_to_disk: {n_py:>9} rows in {t_py:7.2f} s = {r_py:12,.0f} rows/s")
        print(f"ratio                      : {r_cpp / r_py:.1f}x (goal >= 20x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
