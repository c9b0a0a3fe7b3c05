#!/usr/bin/env python3
"""Ray mode: the per-shard overhead of running shards as tasks of a Ray job vs local worker processes.

Starts a local Ray head on 127.0.0.1 (`ray start --head --block --num-cpus W` from build/venv-dist: scripts/setup.sh
--for-tests), then runs the same small model-free config twice on this machine: `execution_params.retry: true` with
`local_workers: W`, and `mode: ray` with one CPU per task (W tasks at once). Both outputs must have every row.
Prints each wall time and the Ray overhead per shard ((ray - local) / shards, seconds): job submission, driver
start (`ray.init`), task scheduling and worker start, and the polling interval (1 s here). Usage:
  bench/ray_bench.py [--rows N] [--shards K] [--workers W] [--mmirage build/mmirage]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from model_free_common import PROCESSING, synthetic_row

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CONFIG = """processors: []
loading_params:
  datasets:
    - {{type: JSONL, path: {data}, output_dir: {out}, output_format: jsonl}}
  state_dir: {state}
  num_shards: {shards}
""" + PROCESSING + """execution_params:
  retry: true
  merge: true
  poll_interval_seconds: 1
{extra}"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_head(venv, tmp, workers):
    dashboard = free_port()
    args = [os.path.join(venv, "bin", "ray"), "start", "--head", "--block", f"--num-cpus={workers}", "--num-gpus=0",
            "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1", "--include-dashboard=true",
            f"--port={free_port()}", f"--dashboard-port={dashboard}", f"--ray-client-server-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}", f"--temp-dir={tmp}/ray", "--disable-usage-stats"]
    log = open(os.path.join(tmp, "head.log"), "w")
    head = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
    address = f"http://127.0.0.1:{dashboard}"
    for _ in range(600):
        try:
            urllib.request.urlopen(address + "/api/jobs/", timeout=2)
            return head, address
        except OSError:
            time.sleep(0.1)
    head.kill()
    sys.exit("the Ray head did not start: " + open(os.path.join(tmp, "head.log")).read()[-2000:])


def run(mmirage, cfg):
    t0 = time.perf_counter()
    subprocess.run([mmirage, "run", "--config", cfg, "--log-level", "WARNING"], check=True)
    return time.perf_counter() - t0


def rows_in(out):
    merged = os.path.join(out, "merged")
    return sum(sum(1 for _ in open(os.path.join(merged, f))) for f in os.listdir(merged))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=8000)
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--mmirage", default=os.path.join(ROOT, "build", "mmirage"))
    a = p.parse_args()
    venv = os.path.join(ROOT, "build", "venv-dist")
    tmp = tempfile.mkdtemp(prefix="ray_bench_")
    head = None
    try:
        data = os.path.join(tmp, "data.jsonl")
        with open(data, "w") as f:
            for i in range(a.rows):
                f.write(json.dumps(synthetic_row(i)) + "\n")
        head, address = start_head(venv, tmp, a.workers)
        times = {}
        for name, extra in [("local", f"  local_workers: {a.workers}\n"),
                            ("ray", f"  mode: ray\n  ray: {{address: \"{address}\", num_cpus: 1, "
                                    f"python: {os.path.join(venv, 'bin', 'python')}}}\n")]:
            cfg = os.path.join(tmp, name + ".yaml")
            out = os.path.join(tmp, "out_" + name)
            with open(cfg, "w") as f:
                f.write(CONFIG.format(data=data, out=out, state=os.path.join(tmp, "state_" + name),
                                      shards=a.shards, extra=extra))
            times[name] = run(a.mmirage, cfg)
            if rows_in(out) != a.rows:
                sys.exit(f"{name}: the merged output does not have {a.rows} rows")
        print(f"rows={a.rows} shards={a.shards} workers={a.workers}")
        print(f"local workers: {times['local']:.2f} s")
        print(f"ray job:       {times['ray']:.2f} s")
        print(f"ray/local: {times['ray'] / times['local']:.2f}x; "
              f"overhead per shard: {(times['ray'] - times['local']) / a.shards:.2f} s")
    finally:
        if head is not None:
            head.send_signal(signal.SIGTERM)  # `ray start --block` stops what it started
            try:
                head.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
