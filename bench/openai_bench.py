#!/usr/bin/env python3
"""OpenAI-engine overhead: `mmirage run` (backend openai) vs a raw client, against the same llama-server.

Both send the same chat requests (one user message per row, greedy, a fixed number of output tokens with EOS
ignored) at the same concurrency to one llama-server started here on the synthetic model, on a free 127.0.0.1
port. The raw client is a pool of Python threads, each with one keep-alive HTTP connection, pulling prompts from
a shared list (the analogue of the original's endpoint-matched experiment, where its pipeline kept 0.954 of raw
throughput). Output tok/s = completion tokens of the successful requests / wall time of the whole run (for
mmirage: the `mmirage run` process, start to exit). Runs alternate raw, mmirage, raw, mmirage, ... and the best
of each is compared.                                                          goal: mmirage >= 0.97 of raw tok/s

Usage: bench/openai_bench.py [--rows N] [--concurrency C] [--max-new T] [--preset tiny|small] [--repeats R]
       [--build DIR]   (binaries from DIR, default build/: mmirage, mmirage-make-test-model, llama-server)
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

CONFIG = """processors:
  - type: llm
    backend: openai
    server_args: {{model_path: none}}
    endpoint: {{base_url: "http://127.0.0.1:{port}/v1", model: bench, max_concurrency: {conc}, max_retries: 0}}
    default_sampling_params: {{temperature: 0, max_new_tokens: {max_new}, ignore_eos: true}}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}}}]
  state_dir: {state}
processing_params:
  inputs: [{{name: text, key: text}}]
  outputs:
    - name: answer
      type: llm
      generation_retries: 0
      prompt: "{{{{ text }}}}"
  remove_columns: true
  output_schema: {{answer: "{{{{ answer }}}}"}}
execution_params: {{max_failed_rows: {rows}}}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_healthy(port, proc, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("llama-server exited during startup")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("llama-server not healthy")


def raw_client(port, prompts, conc, max_new):
    """`conc` threads per port (one port or a list of them) over one shared prompt list.
    Returns (completion tokens, failed requests, seconds, answered requests)."""
    lock = threading.Lock()
    state = {"next": 0, "tokens": 0, "failed": 0, "ok": 0}
    ports = port if isinstance(port, list) else [port]

    def worker(port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                i = state["next"]
                state["next"] += 1
            if i >= len(prompts):
                return
            body = json.dumps({"stream": False, "model": "bench",
                               "messages": [{"role": "user", "content": prompts[i]}], "max_tokens": max_new,
                               "temperature": 0.0, "top_p": 1.0, "ignore_eos": True})
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            with lock:
                if resp.status == 200:
                    state["tokens"] += json.loads(data)["usage"]["completion_tokens"]
                    state["ok"] += 1
                else:
                    state["failed"] += 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(p,)) for p in ports for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return state["tokens"], state["failed"], time.perf_counter() - t0, state["ok"]


def make_inputs(build, tmp, rows, preset):
    """The synthetic model and `rows` prompts (a list and a JSONL file) under tmp: (model, prompts, data)."""
    model = os.path.join(tmp, "model.gguf")
    subprocess.run([os.path.join(build, "mmirage-make-test-model"), "--out", model, "--preset", preset],
                   check=True, capture_output=True)
    prompts = [f"Write a short story about city number {i} and its {i % 7} rivers." for i in range(rows)]
    data = os.path.join(tmp, "data.jsonl")
    with open(data, "w") as f:
        for p in prompts:
            f.write(json.dumps({"text": p}) + "\n")
    return model, prompts, data


def mmirage_run(mmirage, tmp, n, port, data, rows, conc, max_new):
    d = os.path.join(tmp, f"mmirage_{n}")
    os.makedirs(d)
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(port=port, conc=conc, max_new=max_new, data=data, out=os.path.join(d, "out"),
                              state=os.path.join(d, "state"), rows=rows))
    t0 = time.perf_counter()
    r = subprocess.run([mmirage, "run", "--config", cfg], capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"mmirage run failed:\n{r.stderr[-3000:]}")
    with open(os.path.join(d, "state", "shard_0", "status.json")) as f:
        stats = json.load(f)["stats"]
    errors = os.path.join(d, "out", "shard_0", "errors.jsonl")
    failed = sum(1 for _ in open(errors)) if os.path.exists(errors) else 0
    return stats.get("output_tokens") or 0, failed, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="llama-server --threads (0: its default)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    mmirage = os.path.join(args.build, "mmirage")
    server = os.path.join(args.build, "llama-server")
    for b in (mmirage, server, os.path.join(args.build, "mmirage-make-test-model")):
        if not os.path.exists(b):
            sys.exit(f"missing {b}: run scripts/setup.sh")
    tmp = tempfile.mkdtemp(prefix="openai_bench_")
    model, prompts, data = make_inputs(args.build, tmp, args.rows, args.preset)
    port = free_port()
    cmd = [server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-np", str(args.concurrency),
           "-c", str(args.concurrency * 512)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    log = open(os.path.join(tmp, "llama-server.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(port, proc)
        raw_client(port, prompts[: args.concurrency * 2], args.concurrency, args.max_new)  # warm-up
        best_raw = best_mm = 0.0
        for n in range(args.repeats):
            tok, failed, secs, _ = raw_client(port, prompts, args.concurrency, args.max_new)
            best_raw = max(best_raw, tok / secs)
            print(f"raw     run {n}: {tok} tokens in {secs:.2f} s = {tok / secs:8.1f} tok/s ({failed} failed)")
            tok, failed, secs = mmirage_run(mmirage, tmp, n, port, data, args.rows, args.concurrency, args.max_new)
            best_mm = max(best_mm, tok / secs)
            print(f"mmirage run {n}: {tok} tokens in {secs:.2f} s = {tok / secs:8.1f} tok/s ({failed} failed)")
        print(f"\nraw client: {best_raw:.1f} output tok/s   mmirage: {best_mm:.1f} output tok/s   "
              f"ratio: {best_mm / best_raw:.3f}  (goal >= 0.97; rows={args.rows}, concurrency={args.concurrency}, "
              f"max_new={args.max_new}, preset={args.preset})")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
