#!/usr/bin/env python3
"""Cost of the run report on a large run: `mmirage stats --html` and `--format table` vs plain `mmirage stats` (JSON,
the baseline), on a synthetic state directory of N successful shards whose timeline.jsonl is at the writer's bound
(4,000 lines: ~11 h of 10 s samples each) and whose usage.jsonl has R rows.

Prints seconds per command, the ratios to the JSON baseline, and the HTML size. Usage:
  bench/report_bench.py [--shards 256] [--lines 4000] [--rows 2000] [--mmirage build/mmirage]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def make_state(root, shards, lines, rows):
    out = os.path.join(root, "out")
    state = os.path.join(root, "state")
    t0 = 1_800_000_000.0
    for s in range(shards):
        d = os.path.join(state, f"shard_{s}")
        os.makedirs(d)
        os.makedirs(os.path.join(out, f"shard_{s}"))
        runtime = 40000.0 + 37 * s
        status = {
            "status": "success", "retry_count": 1, "shard_id": s,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t0)),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t0 + runtime)),
            "error": None, "hostname": f"node{s % 16}", "pid": 1000 + s, "slurm_job_id": "777",
            "slurm_array_task_id": str(s), "datasets": [{"image_base_path": None, "output_dir": out}],
            "failed_rows": 0,
            "stats": {"runtime_seconds": runtime, "rows_processed": rows, "gpu_util_mean": 71.5,
                      "gpu_util_samples": lines, "input_tokens": rows * 300, "output_tokens": rows * 500,
                      "num_gpus": 1, "model_load_seconds": 120.0, "cpu_util_mean": 40.0},
        }
        with open(os.path.join(d, "status.json"), "w") as f:
            json.dump(status, f, indent=2, sort_keys=True)
        with open(os.path.join(d, "timeline.jsonl"), "w") as f:
            f.write(json.dumps({"t": t0, "attempt": 1, "event": "start", "host": f"node{s % 16}", "pid": 1000 + s,
                                "slurm_job_id": "777", "interval": 10.0}) + "\n")
            f.write(json.dumps({"t": t0 + 120, "attempt": 1, "event": "loaded", "load_seconds": 120.0,
                                "capacity": 64}) + "\n")
            for i in range(1, lines - 2):
                t = t0 + 120 + i * (runtime - 120) / (lines - 3)
                f.write(json.dumps({"t": round(t, 3), "attempt": 1, "rows": rows * i // (lines - 3), "failed": 0,
                                    "in_tok": i * 90, "out_tok": i * 150, "rows_per_sec": 0.05, "tok_per_sec": 15.0,
                                    "gpu": 60 + (i * 7 + s) % 30, "cpu": 40.0, "in_flight": 48}) + "\n")
            f.write(json.dumps({"t": t0 + runtime, "attempt": 1, "event": "end", "outcome": "success"}) + "\n")
        with open(os.path.join(out, f"shard_{s}", "usage.jsonl"), "w") as f:
            for r in range(rows):
                f.write(f'{{"row_index":{r},"prompt_tokens":300,"completion_tokens":{400 + (r + s) % 200},'
                        f'"generations":1}}\n')
    cfg = os.path.join(root, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(f"processors: []\nloading_params:\n  datasets:\n    - type: JSONL\n      path: {root}/data.jsonl\n"
                f"      output_dir: {out}\n  state_dir: {state}\n  num_shards: {shards}\n"
                "processing_params:\n  inputs: []\n  outputs: []\n  output_schema: {}\n")
    open(os.path.join(root, "data.jsonl"), "w").close()
    return cfg


def timed(cmd, reps=3):
    best = None
    for _ in range(reps):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {p.stderr.decode()[-400:]}")
        best = dt if best is None else min(best, dt)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", type=int, default=256)
    ap.add_argument("--lines", type=int, default=4000)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--mmirage", default=os.path.join(os.path.dirname(__file__), "..", "build", "mmirage"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        cfg = make_state(root, a.shards, a.lines, a.rows)
        html = os.path.join(root, "report.html")
        base = timed([a.mmirage, "stats", "--config", cfg, "--log-level", "ERROR"])
        table = timed([a.mmirage, "stats", "--config", cfg, "--format", "table", "--log-level", "ERROR"])
        page = timed([a.mmirage, "stats", "--config", cfg, "--html", html, "--log-level", "ERROR"])
        size = os.path.getsize(html)
    print(f"state: {a.shards} shards x {a.lines} timeline lines, {a.rows} usage rows each")
    print(f"stats (json, baseline): {base:.3f} s")
    print(f"stats --format table:   {table:.3f} s  ({table / base:.2f}x the baseline)")
    print(f"stats --html:           {page:.3f} s  ({page / base:.2f}x the baseline), page {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
