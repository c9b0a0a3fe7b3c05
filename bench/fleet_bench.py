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

`kills` mode: 3 replicas; a fault-free `mmirage run`, then the same run while this script kills -9 one replica 5
times (round robin, spread over the first 70% of the fault-free wall time) and starts each killed one again on its
port after --down seconds, as an operator's supervisor would; --repeats such pairs, alternated. Every run's
data.jsonl must be byte-identical (and the same rows failed); printed: the best wall time of each kind and their
ratio.
                             goals: identical output; wall ratio <= 1.5

Usage: bench/fleet_bench.py [scaling] [--rows N] [--concurrency C] [--max-new T] [--replicas 1,2,4] [--repeats R]
       bench/fleet_bench.py kills [--rows N] [--concurrency C] [--max-new T] [--kills K] [--down S] [--repeats R]
       [--build DIR]   (binaries from DIR, default build/: mmirage, mmirage-make-test-model, llama-server)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai_bench  # noqa: E402
from openai_bench import ROOT, free_port, raw_client, wait_healthy  # noqa: E402

# openai_bench's config with the replicas' URLs instead of one, and JSONL output (rows are counted from it).
CONFIG = openai_bench.CONFIG.replace('base_url: "http://127.0.0.1:{port}/v1"', "base_urls: [{urls}]").replace(
    "output_dir: {out}}}", "output_dir: {out}, output_format: jsonl}}")
assert "{urls}" in CONFIG and "output_format: jsonl" in CONFIG, "openai_bench.CONFIG changed: update fleet_bench"


def mmirage_run(mmirage, tmp, tag, ports, data, rows, conc, max_new, retries=0, during=None):
    """One `mmirage run` over the replicas on `ports` (request failover to at most max(1, retries) replicas);
    `during()` runs on a thread while it does. Returns (answered rows, failed rows, seconds)."""
    d = os.path.join(tmp, tag)
    os.makedirs(d)
    cfg = os.path.join(d, "cfg.yaml")
    urls = ", ".join(f'"http://127.0.0.1:{p}/v1"' for p in ports)
    with open(cfg, "w") as f:
        f.write(CONFIG.format(urls=urls, conc=conc, max_new=max_new, data=data, out=os.path.join(d, "out"),
                              state=os.path.join(d, "state"), rows=rows).replace("max_retries: 0",
                                                                                 f"max_retries: {retries}"))
    t0 = time.perf_counter()
    proc = subprocess.Popen([mmirage, "run", "--config", cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    side = threading.Thread(target=during) if during else None
    if side:
        side.start()
    _, err = proc.communicate()
    secs = time.perf_counter() - t0
    if side:
        side.join()
    with open(os.path.join(d, "stderr.log"), "w") as f:
        f.write(err)
    if proc.returncode != 0:
        sys.exit(f"mmirage run failed:\n{err[-3000:]}")
    out = os.path.join(d, "out", "shard_0")
    ok = sum(1 for _ in open(os.path.join(out, "data.jsonl")))
    errors = os.path.join(out, "errors.jsonl")
    failed = sum(1 for _ in open(errors)) if os.path.exists(errors) else 0
    return ok, failed, secs


def start_server(args, tmp, model, port, tag):
    cmd = [os.path.join(args.build, "llama-server"), "-m", model, "--host", "127.0.0.1", "--port", str(port),
           "-np", str(args.concurrency), "-c", str(args.concurrency * 512), "--threads", "1"]
    log = open(os.path.join(tmp, f"server_{tag}.log"), "a")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def start_servers(args, tmp, model, n):
    ports = [free_port() for _ in range(n)]
    procs = [start_server(args, tmp, model, port, f"{n}_{i}") for i, port in enumerate(ports)]
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


def error_rows(tag_dir):
    """The failed rows of a run, without their messages (those may name the replica that answered last)."""
    path = os.path.join(tag_dir, "out", "shard_0", "errors.jsonl")
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        e = json.loads(line)
        rows.append(e.get("row", e.get("row_index", line)))
    return rows


def same_output(tmp, tag_a, tag_b):
    a = open(os.path.join(tmp, tag_a, "out", "shard_0", "data.jsonl"), "rb").read()
    b = open(os.path.join(tmp, tag_b, "out", "shard_0", "data.jsonl"), "rb").read()
    return a == b and error_rows(os.path.join(tmp, tag_a)) == error_rows(os.path.join(tmp, tag_b)), a


def kill_run(args, mmirage, tmp, model, data, prompts, procs, ports, lock, tag, clean):
    """One run during which replicas are killed -9 and started again; returns its seconds."""
    log = []

    def killer():
        t0 = time.perf_counter()
        for k in range(args.kills):
            time.sleep(max(0.0, t0 + clean * 0.7 * (k + 1) / (args.kills + 1) - time.perf_counter()))
            i = k % 3
            with lock:
                procs[i].kill()  # SIGKILL
                procs[i].wait()
            log.append(f"kill {k + 1}: replica {i} (port {ports[i]}) at {time.perf_counter() - t0:.2f} s")
            time.sleep(args.down)
            with lock:
                procs[i] = start_server(args, tmp, model, ports[i], f"3_{i}")
            log.append(f"  restarted replica {i} at {time.perf_counter() - t0:.2f} s")

    _, failed, secs = mmirage_run(mmirage, tmp, tag, ports, data, len(prompts), args.concurrency, args.max_new,
                                  KILLS_RETRIES, during=killer)
    print("\n".join("    " + line for line in log))
    print(f"  {tag}: {secs:.2f} s ({failed} rows failed)")
    for i, port in enumerate(ports):  # every replica up again before the next run
        wait_healthy(port, procs[i])
    return secs


KILLS_RETRIES = 5  # failover: a request may go to every replica (and come back to a restarted one)


def kills(args, mmirage, tmp, model, data, prompts):
    procs, ports = start_servers(args, tmp, model, 3)
    lock = threading.Lock()
    try:
        raw_client(ports, prompts[: args.concurrency * 3], args.concurrency, args.max_new)  # warm-up
        cleans, killeds, same = [], [], True
        for r in range(args.repeats):  # alternated, so that both see the same machine load
            _, failed, secs = mmirage_run(mmirage, tmp, f"clean_{r}", ports, data, len(prompts), args.concurrency,
                                          args.max_new, KILLS_RETRIES)
            print(f"  clean_{r}: {secs:.2f} s ({failed} rows failed)")
            cleans.append(secs)
            killeds.append(kill_run(args, mmirage, tmp, model, data, prompts, procs, ports, lock, f"killed_{r}",
                                    secs))
            for tag in (f"clean_{r}", f"killed_{r}"):
                ok, first = same_output(tmp, "clean_0", tag)
                same = same and ok
        clean, killed = min(cleans), min(killeds)
        print(f"\nfault-free {clean:.2f} s, with {args.kills} kills {killed:.2f} s (best of {args.repeats} each): "
              f"wall ratio {killed / clean:.3f} (goal <= 1.5); every output identical: {'yes' if same else 'NO'} "
              f"({len(first)} bytes, {first.count(10)} rows; rows={args.rows}, "
              f"concurrency={args.concurrency}/replica, max_new={args.max_new}, down={args.down} s; logs under {tmp})")
        return same
    finally:
        with lock:
            for p in procs:
                p.terminate()
                p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="scaling", choices=["scaling", "kills"])
    ap.add_argument("--kills", type=int, default=5, help="kills mode: replicas killed -9 during the run")
    ap.add_argument("--down", type=float, default=0.5, help="kills mode: seconds before a killed replica restarts")
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
    if args.mode == "kills":
        sys.exit(0 if kills(args, mmirage, tmp, model, data, prompts) else 1)
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
