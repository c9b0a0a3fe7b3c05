#!/usr/bin/env python3
"""Rate-limited hosted API: `mmirage run` (backend openai, limits learned from headers, max_concurrency: auto) vs
the limit-bound minimum and vs a naive client, against tests/support/fake_hosted_provider.py.

The provider enforces --rpm requests and --tpm tokens per minute (quantized to 1 s buckets, as OpenAI documents),
answers in --latency seconds and sends x-ratelimit-* headers and 429 + retry-after. Each client gets a fresh
provider. The limit-bound minimum is max(requests / RPM, tokens used / TPM) minutes (the per-minute limits, without
the provider's one-second burst). The naive client is a pool of --naive-concurrency Python threads with keep-alive
connections that retry a 429 after max(retry-after, exponential backoff with jitter) — what a client without
admission does. Wall time: the whole `mmirage run` process, start to exit; the naive pool, first request to last.
With --workers N > 1, `mmirage run` once more with the rows in N shards run by N local workers at once, which share
one rate-limit budget on this machine (docs/hosted_apis.md).
                                                         goal: mmirage <= 1.10x the minimum, 429s << naive's

Usage: bench/ratelimit_bench.py [--rows N] [--rpm R] [--tpm T] [--latency S] [--max-new T]
       [--naive-concurrency C] [--workers N] [--build DIR]
"""
import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

CONFIG = """processors:
  - type: llm
    backend: openai
    endpoint: {{base_url: "http://127.0.0.1:{port}/v1", model: bench, max_concurrency: auto, max_retries: 20}}
    default_sampling_params: {{temperature: 0, max_new_tokens: {max_new}}}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}}}]
  state_dir: {state}
processing_params:
  inputs: [{{name: text, key: text}}]
  outputs: [{{name: answer, type: llm, prompt: "{{{{ text }}}}"}}]
  remove_columns: true
  output_schema: {{answer: "{{{{ answer }}}}"}}
execution_params: {{cache: false}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_provider(args, log):
    port = free_port()
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/support/fake_hosted_provider.py"),
                          "--port", str(port), "--rpm", str(args.rpm), "--tpm", str(args.tpm),
                          "--latency", str(args.latency)], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    sys.exit("fake provider did not start")


def provider_stats(port):
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5).read())


def prompts(n):
    return [f"Write a short note about fact number {i} of the world." for i in range(n)]


def run_mmirage(args, tmp, port, workers=1):
    data = os.path.join(tmp, "data.jsonl")
    with open(data, "w") as f:
        for t in prompts(args.rows):
            f.write(json.dumps({"text": t}) + "\n")
    cfg = os.path.join(tmp, "cfg.yaml")
    with open(cfg, "w") as f:
        text = CONFIG.format(port=port, max_new=args.max_new, data=data, out=os.path.join(tmp, "out"),
                             state=os.path.join(tmp, "state"))
        if workers > 1:
            text = text.replace("  state_dir:", f"  num_shards: {workers}\n  state_dir:").replace(
                "{cache: false}", f"{{cache: false, retry: true, local_workers: {workers}}}")
        f.write(text)
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(args.build, "mmirage"), "run", "--config", cfg, "--quiet"],
                       capture_output=True, text=True, cwd=tmp)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit("mmirage run failed:\n" + r.stderr[-3000:])
    return wall


def run_naive(args, port):
    todo = prompts(args.rows)
    lock = threading.Lock()
    rng = random.Random(1)

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                if not todo:
                    return
                text = todo.pop()
            body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": text}],
                               "max_tokens": args.max_new, "temperature": 0})
            attempt = 0
            while True:
                conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    break
                attempt += 1
                retry_after = float(resp.getheader("retry-after") or 0)
                with lock:
                    backoff = rng.uniform(0, min(30, 0.5 * 2 ** (attempt - 1)))
                time.sleep(max(retry_after, backoff))

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(args.naive_concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0


def measure(args, name, fn):
    with tempfile.TemporaryDirectory(prefix="mmirage-ratelimit-") as tmp:
        with open(os.path.join(tmp, "provider.log"), "w") as log:
            p, port = start_provider(args, log)
            try:
                wall = fn(tmp, port)
                st = provider_stats(port)
            finally:
                p.kill()
                p.wait()
    minimum = max(args.rows / args.rpm, st["tokens"] / args.tpm) * 60
    print(f"{name:8s} wall {wall:7.2f} s  limit-bound minimum {minimum:6.2f} s  ratio {wall / minimum:5.3f}  "
          f"requests {st['ok']}  429s {st['429']}", flush=True)
    return wall, minimum, st["429"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=600)
    ap.add_argument("--rpm", type=float, default=600)
    ap.add_argument("--tpm", type=float, default=200000)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--max-new", type=int, default=300)
    ap.add_argument("--naive-concurrency", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2, help="local workers of the sharded variant (1: none)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    print(f"{args.rows} requests at {args.rpm:g} RPM / {args.tpm:g} TPM, {args.latency:g} s per answer, "
          f"max_tokens {args.max_new}; naive client: {args.naive_concurrency} threads", flush=True)
    ours, ours_min, ours_429 = measure(args, "mmirage", lambda tmp, port: run_mmirage(args, tmp, port))
    naive, naive_min, naive_429 = measure(args, "naive", lambda tmp, port: run_naive(args, port))
    print(f"mmirage / minimum = {ours / ours_min:.3f} (goal <= 1.10), naive / minimum = {naive / naive_min:.3f}, "
          f"mmirage / naive = {ours / naive:.3f}; 429s: mmirage {ours_429}, naive {naive_429}")
    if args.workers > 1:
        name = f"{args.workers} workers"
        w, w_min, w_429 = measure(args, name, lambda tmp, port: run_mmirage(args, tmp, port, args.workers))
        print(f"{name} sharing one budget: / minimum = {w / w_min:.3f}, 429s {w_429}")


if __name__ == "__main__":
    main()
