#!/usr/bin/env python3
"""Object storage: a model-free restructure from and to an S3-compatible server vs the same on local disk.

Starts moto in server mode on 127.0.0.1 (tests/e2e/s3_server.py, from build/venv-dist: scripts/setup.sh
--for-tests), uploads the rows, then runs the same config twice: input, output and state on local disk, and all
three in the bucket. Both outputs must have every row. Prints wall time, rows/s and peak RSS of each `mmirage run`,
the requests the S3 run made (by method), and the ratio (goal: S3 >= 0.8x local, RSS <= 300 MB). moto keeps
objects in memory in one Python process, so this measures mmirage's own overhead (spooling, uploads, ranged reads)
more than a real store's network. As a floor it times boto3 moving the same bytes (download of the input, upload of
one object the size of the output) and prints local / (local + floor): the ratio an S3 run that only added those
transfers to the local run would reach. Usage:
  bench/s3_bench.py [--rows N] [--shards K] [--commit-interval S] [--mmirage build/mmirage]
(--commit-interval: commit_interval_seconds; small values show what each commit costs on object storage.)
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from model_free_common import PROCESSING, synthetic_row

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVER = os.path.join(ROOT, "tests", "e2e", "s3_server.py")
BUCKET = "mmirage-bench"

CONFIG = """processors: []
loading_params:
  datasets:
    - type: JSONL
      path: {data}
      output_dir: {out}
      output_format: jsonl
  state_dir: {state}
  num_shards: {shards}
""" + PROCESSING + """execution_params:
  retry: true
  merge: true
  commit_interval_seconds: {commit}
"""


def run(mmirage, cfg, env):
    """Wall seconds and peak RSS (MB) of one `mmirage run` and the workers it starts."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([mmirage, "run", "--config", cfg, "--log-level", "WARNING"], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"mmirage run --config {cfg} failed (status {status})")
    return wall, usage.ru_maxrss / 1024  # the largest of the process and the workers it waited for


FLOOR = """
import sys, time, boto3
endpoint, bucket, key, out_path = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint)
t0 = time.perf_counter()
s3.get_object(Bucket=bucket, Key=key)["Body"].read()
t1 = time.perf_counter()
s3.upload_file(out_path, bucket, "floor/out")
print(t1 - t0, time.perf_counter() - t1)
"""


def start_server(python, tmp):
    port_file = os.path.join(tmp, "port")
    log = open(os.path.join(tmp, "server.log"), "w")
    server = subprocess.Popen([python, SERVER, "serve", port_file, "log"], stdout=log, stderr=log,
                              start_new_session=True)
    for _ in range(3000):
        if os.path.exists(port_file):
            return server, "http://127.0.0.1:" + open(port_file).read()
        time.sleep(0.02)
    server.kill()
    sys.exit("the S3 server did not start; see " + log.name)


def requests_since(log_path, offset):
    """Requests moto logged after byte `offset` of its log, by method, and the log's new end."""
    with open(log_path) as f:
        f.seek(offset)
        text = f.read()
    counts = collections.Counter()
    for line in text.splitlines():
        for method in ("GET", "PUT", "HEAD", "POST", "DELETE"):
            if f'"{method} ' in line:
                counts[method] += 1
    return counts, offset + len(text.encode())


def count_rows(mmirage, path, env):
    out = subprocess.run([mmirage, "cat", path], env=env, check=True, capture_output=True, text=True).stdout
    return out.count("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--commit-interval", type=float, default=5.0)
    ap.add_argument("--mmirage", default=os.path.join(ROOT, "build", "mmirage"))
    ap.add_argument("--python", default=os.path.join(ROOT, "build", "venv-dist", "bin", "python"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mmirage_s3_bench_")
    server = None
    try:
        data = os.path.join(tmp, "data.jsonl")
        with open(data, "w") as f:
            for i in range(args.rows):
                f.write(json.dumps(synthetic_row(i)) + "\n")
        server, endpoint = start_server(args.python, tmp)
        env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1",
                   AWS_EC2_METADATA_DISABLED="true", AWS_ENDPOINT_URL=endpoint)
        subprocess.run([args.python, SERVER, "put", endpoint, BUCKET, "in/data.jsonl", data], check=True)

        log_path = os.path.join(tmp, "server.log")
        results = {}
        for name, base in (("local", tmp), ("s3", f"s3://{BUCKET}")):
            src = data if name == "local" else f"s3://{BUCKET}/in/data.jsonl"
            cfg = os.path.join(tmp, name + ".yaml")
            with open(cfg, "w") as f:
                f.write(CONFIG.format(data=src, out=base + "/out", state=base + "/state", shards=args.shards,
                                      commit=args.commit_interval))
            _, offset = requests_since(log_path, 0)
            wall, rss = run(args.mmirage, cfg, env)
            requests, _ = requests_since(log_path, offset)
            results[name] = (wall, rss)
            print(f"{name:6}: {args.rows:>9} rows in {wall:7.2f} s = {args.rows / wall:10,.0f} rows/s, "
                  f"peak RSS {rss:6.0f} MB" + (f", requests {dict(sorted(requests.items()))}" if requests else ""))
        for name, base in (("local", tmp), ("s3", f"s3://{BUCKET}")):
            n = count_rows(args.mmirage, base + "/out/merged", env)
            assert n == args.rows, (name, n, args.rows)
        out_file = os.path.join(tmp, "out", "merged", "data.jsonl")
        floor = subprocess.run([args.python, "-c", FLOOR, endpoint, BUCKET, "in/data.jsonl", out_file], env=env,
                               check=True, capture_output=True, text=True).stdout.split()
        down, up = float(floor[0]), float(floor[1])
        local, s3 = results["local"][0], results["s3"][0]
        print(f"floor : boto3 moves the same bytes in {down:.2f} s (download {os.path.getsize(data) >> 20} MiB) + "
              f"{up:.2f} s (upload {os.path.getsize(out_file) >> 20} MiB): at best {local / (local + down + up):.2f}x")
        print(f"ratio : S3 {local / s3:.2f}x local (goal >= 0.8x); S3 peak RSS {results['s3'][1]:.0f} MB "
              f"(goal <= 300 MB); S3 minus the floor: {local / max(s3 - down - up, 1e-9):.2f}x local")
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
