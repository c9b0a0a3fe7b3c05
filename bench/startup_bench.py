#!/usr/bin/env python3
"""Start-up cost: `mmirage validate --config examples/quickstart/rewrite.yaml` vs starting a trivial program.

Both are run N times, interleaved, in this one run; prints each one's median wall time in ms, the ratio and the
difference, and how many shared libraries each loads (glibc's loader reports every object it maps, the ones opened
later with dlopen included). validate needs no model, dataset or network: what it costs is mostly loading the binary
and its libraries. Goal: validate's median <= 10 ms (on the idle 2-core machine).

The baseline is /bin/true (a C program that links only glibc): the fixed cost of exec, the loader and process exit
on this machine at this moment, so the ratio stays comparable when the machine is busy.

Usage: bench/startup_bench.py [--runs 30] [--mmirage build/mmirage] [--config examples/quickstart/rewrite.yaml]
                              [--list-libraries]
"""
import argparse
import os
import re
import statistics
import subprocess
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def wall_ms(cmd, env=None):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return (time.perf_counter() - t0) * 1000.0


def libraries_loaded(cmd):
    """Shared objects the loader mapped during the whole run (LD_DEBUG=files), dlopen'ed ones included."""
    env = dict(os.environ, LD_DEBUG="files")
    out = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, check=True)
    names = set(re.findall(r"file=(\S+) \[\d+\];\s+generating link map", out.stderr))
    return sorted(names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--mmirage", default=os.path.join(ROOT, "build", "mmirage"))
    ap.add_argument("--config", default=os.path.join(ROOT, "examples", "quickstart", "rewrite.yaml"))
    ap.add_argument("--baseline", default="/bin/true")
    ap.add_argument("--list-libraries", action="store_true", help="also print the libraries validate loads")
    args = ap.parse_args()
    validate = [args.mmirage, "validate", "--config", args.config]
    baseline = [args.baseline]
    # The quickstart's model path is relative to the repository root, as its comment says.
    os.chdir(ROOT)
    subprocess.run(validate, stdout=subprocess.DEVNULL, check=True)  # fail early, and warm the page cache
    wall_ms(baseline)
    t_val, t_base = [], []
    for _ in range(args.runs):
        t_base.append(wall_ms(baseline))
        t_val.append(wall_ms(validate))
    m_val, m_base = statistics.median(t_val), statistics.median(t_base)
    libs_val, libs_base = libraries_loaded(validate), libraries_loaded(baseline)
    print(f"baseline {os.path.basename(args.baseline):<9}: median {m_base:7.2f} ms over {args.runs} runs, "
          f"{len(libs_base)} shared libraries")
    print(f"mmirage validate  : median {m_val:7.2f} ms over {args.runs} runs, {len(libs_val)} shared libraries")
    print(f"ratio             : {m_val / m_base:.1f}x the baseline, +{m_val - m_base:.2f} ms "
          f"(goal: validate <= 10 ms on the idle machine)")
    if args.list_libraries:
        print("libraries:", " ".join(os.path.basename(n) for n in libs_val))


if __name__ == "__main__":
    main()
