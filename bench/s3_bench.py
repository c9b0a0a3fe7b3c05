#!/usr/bin/env python3
"""Object storage: a model-free restructure from and to an S3-compatible server vs the same on local disk.

Starts an S3 server on 127.0.0.1 — moto in server mode (the default; tests/e2e/s3_server.py, from build/venv-dist:
scripts/setup.sh --for-tests) or, with --server seaweedfs, a real store: SeaweedFS (`weed server -s3`, built by
bench/setup_seaweedfs.sh) on free ports with a temporary data directory —, uploads the rows, then runs the same
config twice: input, output and state on local disk, and all three in the bucket. Both outputs must have every row.
Prints wall time, rows/s and peak RSS of each `mmirage run`, the requests the S3 run made (by kind), and the ratio
(goal: S3 >= 0.8x local, RSS <= 300 MB). moto keeps objects in memory in one Python process and is slow at ranged
reads of large objects and multipart completes; SeaweedFS stores them on local disk behind a real S3 gateway (its
requests are counted from its Prometheus metrics). As a floor it times boto3 moving the same bytes (download of the
input, upload of one object the size of the output) and prints local / (local + floor): the ratio an S3 run that
only added those transfers to the local run would reach. Usage:
  bench/s3_bench.py [--rows N] [--shards K] [--commit-interval S] [--mmirage build/mmirage]
                    [--server moto|seaweedfs] [--weed PATH]
(--commit-interval: commit_interval_seconds; small values show what each commit costs on object storage.)
"""
import argparse
import collections
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from model_free_common import PROCESSING, synthetic_row

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVER = os.path.join(ROOT, "tests", "e2e", "s3_server.py")
SEAWEEDFS_SETUP = os.path.join(HERE, "setup_seaweedfs.sh")
BUCKET = "mmirage-bench"
KEY_ID, SECRET = "testing", "testing"  # the keys tests/e2e/s3_server.py signs with

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


def start_moto(python, tmp):
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


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def start_seaweedfs(weed, tmp):
    """`weed server -s3` on free 127.0.0.1 ports, data in tmp, one static admin identity (KEY_ID / SECRET)."""
    if not weed:
        weed = subprocess.run([SEAWEEDFS_SETUP], check=True, capture_output=True, text=True).stdout.split()[-1]
    data = os.path.join(tmp, "seaweedfs")
    os.makedirs(data)
    identity = os.path.join(tmp, "s3.json")
    with open(identity, "w") as f:
        json.dump({"identities": [{"name": "bench", "credentials": [{"accessKey": KEY_ID, "secretKey": SECRET}],
                                   "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}, f)
    names = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
             "s3.port", "s3.port.grpc", "metricsPort")
    ports = dict(zip(names, free_ports(len(names))))
    cmd = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data, "-filer", "-s3",
           "-s3.config=" + identity, "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
           "-master.volumeSizeLimitMB=1024", "-volume.max=0", "-filer.localSocket=" + os.path.join(tmp, "filer.sock")]
    cmd += [f"-{name}={port}" for name, port in ports.items()]
    log = open(os.path.join(tmp, "server.log"), "w")
    server = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", ports["s3.port"])) == 0:
                return server, endpoint, f"http://127.0.0.1:{ports['metricsPort']}/metrics"
        time.sleep(0.2)
    server.kill()
    sys.exit("SeaweedFS did not start; see " + log.name)


def upload(python, endpoint, path, server_log):
    """Creates the bucket and uploads the input; retries while a fresh SeaweedFS has no writable volume yet."""
    deadline = time.monotonic() + 120
    while True:
        done = subprocess.run([python, SERVER, "put", endpoint, BUCKET, "in/data.jsonl", path], capture_output=True,
                              text=True)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            sys.exit(f"uploading the input failed: {done.stderr.strip()[-500:]} (server log: {server_log})")
        time.sleep(1)


def moto_requests(log_path):
    """Requests moto has logged so far, by method."""
    with open(log_path) as f:
        text = f.read()
    counts = collections.Counter()
    for line in text.splitlines():
        for method in ("GET", "PUT", "HEAD", "POST", "DELETE"):
            if f'"{method} ' in line:
                counts[method] += 1
    return counts


def seaweedfs_requests(metrics_url):
    """S3 requests SeaweedFS has served so far, by its request type (from its Prometheus counters)."""
    counts = collections.Counter()
    for line in urllib.request.urlopen(metrics_url, timeout=10).read().decode().splitlines():
        if line.startswith("SeaweedFS_s3_request_total{"):
            labels, value = line.rsplit(" ", 1)
            kind = labels.split('type="', 1)[1].split('"', 1)[0]
            counts[kind] += int(float(value))
    return counts


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
    ap.add_argument("--server", choices=("moto", "seaweedfs"), default="moto")
    ap.add_argument("--weed", default="", help="the SeaweedFS binary (default: bench/setup_seaweedfs.sh builds it)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mmirage_s3_bench_")
    server = None
    try:
        data = os.path.join(tmp, "data.jsonl")
        with open(data, "w") as f:
            for i in range(args.rows):
                f.write(json.dumps(synthetic_row(i)) + "\n")
        log_path = os.path.join(tmp, "server.log")
        if args.server == "moto":
            server, endpoint = start_moto(args.python, tmp)
            requests_so_far = lambda: moto_requests(log_path)  # noqa: E731
        else:
            server, endpoint, metrics_url = start_seaweedfs(args.weed, tmp)
            requests_so_far = lambda: seaweedfs_requests(metrics_url)  # noqa: E731
        print(f"server: {args.server} at {endpoint}")
        env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
                   AWS_EC2_METADATA_DISABLED="true", AWS_ENDPOINT_URL=endpoint)
        upload(args.python, endpoint, data, log_path)

        results = {}
        for name, base in (("local", tmp), ("s3", f"s3://{BUCKET}")):
            src = data if name == "local" else f"s3://{BUCKET}/in/data.jsonl"
            cfg = os.path.join(tmp, name + ".yaml")
            with open(cfg, "w") as f:
                f.write(CONFIG.format(data=src, out=base + "/out", state=base + "/state", shards=args.shards,
                                      commit=args.commit_interval))
            before = requests_so_far()
            wall, rss = run(args.mmirage, cfg, env)
            requests = requests_so_far() - before
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
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
