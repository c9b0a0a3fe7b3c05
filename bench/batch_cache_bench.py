#!/usr/bin/env python3
"""Generation cache for provider batch APIs: what a re-run after an output_schema edit submits and costs.

Against the fake provider (tests/support/fake_batch_provider.py, on 127.0.0.1; batches complete after 2 status
reads), a batch_api config (OpenAI shape, temperature 0) with two outputs — a JSON `qa` and a `followup` that reads
`qa.question`, so two stages — over N rows (default 500) and S shards (default 2), with `wait: true`:

  1. the config is run once (filling the cache);
  2. its output_schema is edited, and the edited config is run with the cache and with `cache: off`.

Prints, for each run, the requests the provider was asked to create (from its log), the shard stats' cost and
cached generations, and the wall time of `mmirage run` (submission, polling every poll_interval_seconds,
collection, publication). With a real provider a batch takes minutes to hours, so the wall-time ratio here is a
floor on the gain; the submitted requests and the cost are the figures that carry over.

Usage: bench/batch_cache_bench.py [--rows N] [--shards S] [--poll-interval SECONDS]
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MMIRAGE = os.path.join(ROOT, "build", "mmirage")
PROVIDER = os.path.join(ROOT, "tests", "support", "fake_batch_provider.py")

CONFIG = """processors:
  - type: batch_api
    provider: openai
    base_url: http://127.0.0.1:{port}/v1
    temperature: 0
    max_requests_per_chunk: 200
    price_per_million_input_tokens: 2.5
    price_per_million_output_tokens: 10
    wait: true
    poll_interval_seconds: {poll}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}, output_format: jsonl}}]
  num_shards: {shards}
  state_dir: {state}
processing_params:
  inputs: [{{name: text, key: text}}, {{name: id, key: id}}]
  outputs:
    - name: qa
      type: batch_api
      output_type: JSON
      output_schema: [question, answer]
      prompt: "Write a question and its answer about: {{{{ text }}}}"
    - name: followup
      type: batch_api
      prompt: "Answer this: {{{{ qa.question }}}}"
  remove_columns: true
  output_schema:
    id: "{{{{ id }}}}"
    question: "{{{{ qa.question }}}}"
    followup: "{{{{ followup }}}}"
{schema_extra}execution_params:
  retry: true
  local_workers: {shards}
  max_failed_rows: 100000
  cache: {cache}
  cache_dir: {cache_dir}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def created(log):
    n = 0
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                e = json.loads(line)
                if e.get("event") == "create":
                    n += len(e["custom_ids"])
    return n


def timed_run(tmp, name, args, port, log, data, cache, cache_dir, edited=False):
    d = os.path.join(tmp, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(port=port, poll=args.poll_interval, data=data, out=os.path.join(d, "out"),
                              shards=args.shards, state=os.path.join(d, "state"),
                              schema_extra='    answer: "{{ qa.answer }}"\n' if edited else "", cache=cache,
                              cache_dir=cache_dir))
    before = created(log)
    env = dict(os.environ, OPENAI_API_KEY="bench-key")
    t0 = time.monotonic()
    r = subprocess.run([MMIRAGE, "run", "--config", cfg, "--quiet"], capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"{name}: mmirage run failed ({r.returncode}):\n{r.stderr[-3000:]}")
    cost = cached = rows = 0
    for s in range(args.shards):
        with open(os.path.join(d, "state", f"shard_{s}", "status.json")) as f:
            st = json.load(f)["stats"]
        cost += st.get("cost", 0)
        cached += st.get("cached_generations", 0)
        rows += st.get("rows_processed", 0)
    return {"wall": wall, "submitted": created(log) - before, "cost": cost, "cached": cached, "rows": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--poll-interval", type=int, default=1)
    args = ap.parse_args()
    if not os.path.exists(MMIRAGE):
        sys.exit(f"{MMIRAGE} is missing: run scripts/setup.sh first")
    tmp = tempfile.mkdtemp(prefix="mmirage-batch-cache-bench-")
    port, log = free_port(), os.path.join(tmp, "provider.log")
    prov = subprocess.Popen([sys.executable, PROVIDER, "--port", str(port), "--log", log, "--polls", "2",
                             "--api-key", "bench-key"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        data = os.path.join(tmp, "data.jsonl")
        with open(data, "w") as f:
            for i in range(args.rows):
                words = " ".join(f"w{(i * 3 + w) % 31}" for w in range(1 + (i * 11) % 30))
                f.write(json.dumps({"id": i, "text": f"Row {i}: {words}"}) + "\n")
        cache_dir = os.path.join(tmp, "cache")
        first = timed_run(tmp, "first", args, port, log, data, "readwrite", cache_dir)
        hit = timed_run(tmp, "edited-cached", args, port, log, data, "readwrite", cache_dir, edited=True)
        off = timed_run(tmp, "edited-nocache", args, port, log, data, "off", cache_dir, edited=True)
        for name, r in (("first run", first), ("edited, cache", hit), ("edited, cache: off", off)):
            print(f"{name:20s}: {r['wall']:6.2f} s, {r['submitted']:5d} requests submitted, {r['cached']:5d} "
                  f"answered by the cache, cost ${r['cost']:.6f}, {r['rows']} rows")
        print(f"ratio (edited re-run, cache / no cache): wall {hit['wall'] / off['wall']:.3f}, submitted requests "
              f"{hit['submitted']}/{off['submitted']}, cost {hit['cost']:.6f}/{off['cost']:.6f} "
              f"(poll interval {args.poll_interval} s; a real provider's batches take minutes to hours)")
    finally:
        prov.kill()
        prov.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
