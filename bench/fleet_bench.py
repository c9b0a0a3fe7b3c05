#!/usr/bin/env python3
"""Fleet scaling: `mmirage run` over 1, 2 and 4 llama-server replicas (endpoint.base_urls) vs a raw client
driving the same replicas at the same concurrency.

Each replica is a llama-server on the synthetic model with 1 thread and C slots, started here on a free
127.0.0.1 port. mmirage sends at most C requests per replica (endpoint.max_concurrency is per replica); the raw
client is C Python threads per replica, each with one keep-alive connection to its replica, pulling prompts from
one shared list. rows/s = answered rows (an HTTP 500 for the synthetic model's invalid UTF-8 counts: both sides
send the same requests, without retries) / wall time (for mmirage: the `mmirage run` process, start to exit).
Printed per replica count: both rows/s, mmirage / raw, and the scaling over 1 replica against linear.
Replicas run one thread each, so the scaling is bounded by the machine's cores (os.cpu_count()): past that many
replicas they share cores and the ideal is cores, not replicas.
                             goals: mmirage >= 0.97 of raw; scaling >= 0.9 x linear up to the cores

Usage: bench/fleet_bench.py [--rows N] [--concurrency C] [--max-new T] [--replicas 1,2,4] [--repeats R]
       [--build DIR]   (binaries from DIR, default build/: mmirage, mmirage-make-test-model, llama-server)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai_bench  # noqa: E402
from openai_bench import ROOT, free_port, raw_client, wait_healthy  # noqa: E402

# openai_bench's config with the replicas' URLs instead of one, and JSONL output (rows are counted from it).
CONFIG = openai_bench.CONFIG.replace('base_url: "http://127.0.0.1:{port}/v1"', "base_urls: [{urls}]").replace(
    "output_dir: {out}}}", "output_dir: {out}, output_format: jsonl}}")
assert "{urls}" in CONFIG and "output_format: jsonl" in CONFIG, "openai_bench.CONFIG changed: update fleet_bench"


def mmirage_run(mmirage, tmp, tag, ports, data, rows, conc, max_new):
    d = os.path.join(tmp, tag)
    os.makedirs(d)
    cfg = os.path.join(d, "cfg.yaml")
    urls = ", ".join(f'"http://127.0.0.1:{p}/v1"' for p in ports)
    with open(cfg, "w") as f:
        f.write(CONFIG.format(urls=urls, conc=conc, max_new=max_new, data=data, out=os.path.join(d, "out"),
                              state=os.path.join(d, "state"), rows=rows))
    t0 = time.perf_counter()
    r = subprocess.run([mmirage, "run", "-q", "--config", cfg], capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"mmirage run failed:\n{r.stderr[-3000:]}")
    out = os.path.join(d, "out", "shard_0")
    ok = sum(1 for _ in open(os.path.join(out, "data.jsonl")))
    errors = os.path.join(out, "errors.jsonl")
    failed = sum(1 for _ in open(errors)) if os.path.exists(errors) else 0
    return ok, failed, secs


def start_servers(args, tmp, model, n):
    procs, ports = [], []
    for i in range(n):
        port = free_port()
        cmd = [os.path.join(args.build, "llama-server"), "-m", model, "--host", "127.0.0.1", "--port", str(port),
               "-np", str(args.concurrency), "-c", str(args.concurrency * 512), "--threads", "1"]
        log = open(os.path.join(tmp, f"server_{n}_{i}.log"), "w")
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
        ports.append(port)
    for p, port in zip(procs, ports):
        wait_healthy(port, p)
    return procs, ports


def measure(args, mmirage, tmp, model, data, prompts, n):
    procs, ports = start_servers(args, tmp, model, n)
    try:
        raw_client(ports, prompts[: args.concurrency * n], args.concurrency, args.max_new)  # warm-up
        best_raw = best_mm = 0.0
        for r in range(args.repeats):
            _, failed, secs, ok = raw_client(ports, prompts, args.concurrency, args.max_new)
            best_raw = max(best_raw, (ok + failed) / secs)
            rate = (ok + failed) / secs
            print(f"  {n} replica(s) raw     run {r}: {ok} rows in {secs:.2f} s = {rate:7.2f} rows/s "
                  f"({failed} failed)")
            ok, failed, secs = mmirage_run(mmirage, tmp, f"mm_{n}_{r}", ports, data, len(prompts), args.concurrency,
                                           args.max_new)
            best_mm = max(best_mm, (ok + failed) / secs)
            rate = (ok + failed) / secs
            print(f"  {n} replica(s) mmirage run {r}: {ok} rows in {secs:.2f} s = {rate:7.2f} rows/s "
                  f"({failed} failed)")
        return best_raw, best_mm
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=96)
    ap.add_argument("--concurrency", type=int, default=4, help="slots and requests in flight per replica")
    ap.add_argument("--max-new", type=int, default=32)
    ap.add_argument("--replicas", default="1,2,4")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    mmirage = os.path.join(args.build, "mmirage")
    for b in (mmirage, os.path.join(args.build, "llama-server"), os.path.join(args.build, "mmirage-make-test-model")):
        if not os.path.exists(b):
            sys.exit(f"missing {b}: run scripts/setup.sh")
    tmp = tempfile.mkdtemp(prefix="fleet_bench_")
    model, prompts, data = openai_bench.make_inputs(args.build, tmp, args.rows, "tiny")
    cores = os.cpu_count() or 1
    results = {}
    for n in [int(x) for x in args.replicas.split(",")]:
        results[n] = measure(args, mmirage, tmp, model, data, prompts, n)
    base_raw, base_mm = results[min(results)]
    print(f"\n{'replicas':>8} {'raw rows/s':>11} {'mmirage rows/s':>15} {'mm/raw':>7} {'mm scaling':>11} "
          f"{'ideal':>6} {'vs ideal':>9}")
    for n, (raw, mm) in results.items():
        ideal = min(n, cores) / min(min(results), cores)
        scaling = mm / base_mm
        print(f"{n:>8} {raw:>11.2f} {mm:>15.2f} {mm / raw:>7.3f} {scaling:>10.2f}x {ideal:>5.1f}x "
              f"{scaling / ideal:>9.3f}")
    print(f"\n(this machine has {cores} core(s): each replica uses 1 thread, so past {cores} replicas they share "
          f"cores and the ideal scaling is capped at {cores}x; goals: mm/raw >= 0.97, vs ideal >= 0.9; "
          f"rows={args.rows}, concurrency={args.concurrency}/replica, max_new={args.max_new})")


if __name__ == "__main__":
    main()
