"""Ray job driver of mmirage's `execution_params.mode: ray` (docs/ray.md).

mmirage submits this program through the Ray Jobs API; it runs with the cluster's Python (Ray installed there) and
starts one Ray task per shard, at most --max-parallel at a time, each running `<mmirage_bin> run --config C
--shard-id N` in --cwd with the resources asked for. It does not retry: mmirage judges every shard from the state
directory and resubmits the failed ones. A shard process dies with its task (PR_SET_PDEATHSIG), so a stopped job
leaves no orphan behind. Exit status: 0 when every shard process exited 0, else 1.
"""
import argparse
import ctypes
import os
import signal
import subprocess
import sys

import ray

PR_SET_PDEATHSIG = 1


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_shard(binary, config, cwd, shard_id, stats):
    env = dict(os.environ)
    if stats:
        env["MMIRAGE_COLLECT_STATS"] = "1"
    argv = [binary, "run", "--config", config, "--shard-id", str(shard_id), "--progress", "log"]
    proc = subprocess.Popen(argv, cwd=cwd, env=env, preexec_fn=_die_with_parent)
    return shard_id, proc.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mmirage-bin", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--cwd", required=True)
    p.add_argument("--shards", required=True, help="comma-separated shard ids")
    p.add_argument("--num-cpus", type=float, default=1)
    p.add_argument("--num-gpus", type=float, default=0)
    p.add_argument("--memory", type=int, default=0)
    p.add_argument("--max-parallel", type=int, default=0)
    p.add_argument("--stats", action="store_true")
    a = p.parse_args()
    ray.init()
    options = {"num_cpus": a.num_cpus, "num_gpus": a.num_gpus, "max_retries": 0}
    if a.memory > 0:
        options["memory"] = a.memory
    task = ray.remote(run_shard).options(**options)
    pending = [int(s) for s in a.shards.split(",") if s]
    limit = a.max_parallel if a.max_parallel > 0 else len(pending)
    running, failed = [], 0
    while pending or running:
        while pending and len(running) < limit:
            running.append(task.remote(a.mmirage_bin, a.config, a.cwd, pending.pop(0), a.stats))
        done, running = ray.wait(running, num_returns=1)
        for ref in done:
            try:
                shard_id, rc = ray.get(ref)
            except ray.exceptions.RayError as e:
                print(f"mmirage ray driver: a shard task failed: {e}", file=sys.stderr, flush=True)
                failed += 1
                continue
            print(f"mmirage ray driver: shard {shard_id} exited with status {rc}", flush=True)
            failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
