#!/usr/bin/env python3
"""Embedded-engine benchmarks on the synthetic model. Each prints a ratio measured in this one run.

  overhead   `mmirage run` end to end vs raw libllama batched decoding (bench/raw_llama) of the same prompts at the
             same parallelism, fixed output length (EOS ignored).                goal: >= 0.97 of raw output tok/s
  streaming  streaming scheduler vs the batch-barrier debug mode (the original's batch-synchronous loop), outputs
             of varied length (a model whose end-of-generation logit is raised).  goal: >= 1.3x rows/s
  prefix     shared-prefix reuse on vs off, prompts sharing a >= 200-token instruction.
                                                                                  goal: prompt-eval work <= 0.3x

Usage: bench/engine_bench.py [overhead|streaming|prefix|all] [--rows N] [--parallel P] [--preset tiny]
Binaries are taken from build/ (scripts/setup.sh builds them).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.join(ROOT, "build")
MMIRAGE = os.path.join(BUILD, "mmirage")
MAKE_MODEL = os.path.join(BUILD, "mmirage-make-test-model")
# The raw baseline may come from another build (e.g. the source build of llama.cpp when build/ uses the prebuilt one).
RAW = os.environ.get("MMIRAGE_BENCH_RAW", os.path.join(BUILD, "mmirage-bench-raw-llama"))
THREADS = int(os.environ.get("MMIRAGE_BENCH_THREADS", "1"))  # the same decode threads for both

CONFIG = """processors:
  - type: llm
    server_args:
      model_path: {model}
      extra_engine_args:
        max_running_requests: {parallel}
        context_length: {ctx}
        prefix_reuse: {prefix_reuse}
        batch_barrier: {barrier}
        n_threads: {threads}
    default_sampling_params:
      temperature: 0
      max_new_tokens: {max_new}
      ignore_eos: {ignore_eos}
      stop: {stop}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}}}]
  state_dir: {state}
  batch_size: {batch_size}
processing_params:
  inputs: [{{name: text, key: text}}]
  outputs:
    - name: answer
      type: llm
      prompt: "{{{{ text }}}}"
  remove_columns: true
  output_schema: {{answer: "{{{{ answer }}}}"}}
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return r


def make_model(tmp, preset, eos_bias=None):  # eos_bias: see mmirage-make-test-model --eos-bias
    path = os.path.join(tmp, f"model_{preset}_{eos_bias}.gguf")
    if not os.path.exists(path):
        cmd = [MAKE_MODEL, "--out", path, "--preset", preset]
        if eos_bias is not None:
            cmd += ["--eos-bias", str(eos_bias)]
        run(cmd)
    return path


def mmirage(tmp, name, model, texts, parallel, max_new, ignore_eos=True, prefix_reuse=False, barrier=False,
            batch_size=None, stop=()):
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "data.jsonl")
    with open(data, "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(model=model, parallel=parallel, ctx=2048, prefix_reuse=str(prefix_reuse).lower(),
                              barrier=str(barrier).lower(), max_new=max_new, ignore_eos=str(ignore_eos).lower(),
                              data=data, out=os.path.join(d, "out"), state=os.path.join(d, "state"),
                              batch_size=batch_size or parallel, threads=THREADS,
                              stop=json.dumps(list(stop))))
    run([MMIRAGE, "run", "--config", cfg, "--log-level", "WARNING"])
    with open(os.path.join(d, "state", "shard_0", "status.json")) as f:
        return json.load(f)["stats"]


def cpu_kernels(raw, model, prompts):
    """Which llama.cpp CPU backend a raw baseline binary loads (the engine of the same build loads the same one,
    engine/llama_backends.h): a measurement that silently ran on other kernels is worthless."""
    r = subprocess.run([raw, "--model", model, "--prompts", prompts, "--parallel", "1", "--max-new-tokens", "1",
                        "--ctx-seq", "256", "--threads", "1"], capture_output=True, text=True,
                       env=dict(os.environ, MMIRAGE_BENCH_VERBOSE="1"))
    notes = [l for l in r.stderr.splitlines() if "CPU backend" in l]
    return notes[0] if notes else "linked in (a static source build)"


def bench_overhead(tmp, args):
    model = make_model(tmp, args.preset)
    texts = [f"Rewrite sentence number {i} in a formal tone: the capital of country {i} is city {i}."
             for i in range(args.rows)]
    prompts = os.path.join(tmp, "prompts.jsonl")
    with open(prompts, "w") as f:
        for t in texts:
            f.write(json.dumps(t) + "\n")
    raw = json.loads(run([RAW, "--model", model, "--prompts", prompts, "--parallel", str(args.parallel),
                          "--max-new-tokens", str(args.max_new), "--ctx-seq", "2048", "--threads", str(THREADS)]).stdout)
    print(f"kernels  : raw baseline {RAW}: {cpu_kernels(RAW, model, prompts)}")
    own_raw = os.path.join(BUILD, "mmirage-bench-raw-llama")
    if os.path.exists(own_raw) and os.path.realpath(own_raw) != os.path.realpath(RAW):
        print(f"kernels  : mmirage run (as {own_raw}): {cpu_kernels(own_raw, model, prompts)}")
    st = mmirage(tmp, "overhead", model, texts, args.parallel, args.max_new)
    ours = st["output_tokens"] / st["inference_runtime_seconds"]
    print(f"overhead : raw libllama {raw['output_tok_per_s']:9.1f} tok/s | mmirage run {ours:9.1f} tok/s "
          f"({st['output_tokens']} tokens, {st['inference_runtime_seconds']} s) | ratio {ours / raw['output_tok_per_s']:.3f} "
          f"(goal >= 0.97)")


def bench_streaming(tmp, args):
    # Varied output lengths: generation ends at the first token whose text contains the stop string, which for
    # the synthetic model's pseudo-random tokens gives a geometric-like spread of lengths (capped at max_new).
    model = make_model(tmp, args.preset)
    texts = [f"Item {i}: describe the object number {i * 7919 % 1000} with color {i % 13} and size {i % 5}."
             for i in range(args.rows)]
    stop = [args.stop]
    barrier = mmirage(tmp, "barrier", model, texts, args.parallel, args.max_new, barrier=True, stop=stop)
    stream = mmirage(tmp, "stream", model, texts, args.parallel, args.max_new, stop=stop)
    rb = barrier["rows_processed"] / barrier["inference_runtime_seconds"]
    rs = stream["rows_processed"] / stream["inference_runtime_seconds"]
    print(f"streaming: batch barrier {rb:8.2f} rows/s | streaming {rs:8.2f} rows/s | ratio {rs / rb:.2f}x "
          f"(goal >= 1.3x; output tokens {barrier['output_tokens']} vs {stream['output_tokens']}, avg "
          f"{stream['output_tokens'] / max(1, stream['rows_processed']):.1f}/row, max {args.max_new}, stop {args.stop!r})")


def bench_prefix(tmp, args):
    model = make_model(tmp, args.preset)
    instruction = ("You are a careful data annotator. Read the record below and rewrite it as a single, precise, "
                   "well-formed English sentence. Keep every number, keep proper nouns unchanged, do not add facts, "
                   "do not remove facts, and never answer with more than one sentence. ") * 4
    texts = [instruction + f"Record {i}: city {i}, country {i % 17}, population {i * 1000}." for i in range(args.rows)]
    off = mmirage(tmp, "prefix_off", model, texts, args.parallel, 8, prefix_reuse=False)
    on = mmirage(tmp, "prefix_on", model, texts, args.parallel, 8, prefix_reuse=True)
    eval_off = off["input_tokens"] - (off.get("prompt_tokens_reused") or 0)
    eval_on = on["input_tokens"] - (on.get("prompt_tokens_reused") or 0)
    print(f"prefix   : prompt tokens evaluated off {eval_off} | on {eval_on} (reused {on.get('prompt_tokens_reused')}) "
          f"| ratio {eval_on / eval_off:.3f} (goal <= 0.3); prompt length ~{off['input_tokens'] // args.rows} tokens")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="?", default="all", choices=["overhead", "streaming", "prefix", "all"])
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--stop", default="en", help="streaming: stop string that ends outputs at varied lengths")
    args = ap.parse_args()
    for b in (MMIRAGE, MAKE_MODEL, RAW):
        if not os.path.exists(b):
            sys.exit(f"missing {b}: run scripts/setup.sh first")
    tmp = tempfile.mkdtemp(prefix="mmirage_engine_bench_")
    try:
        if args.which in ("overhead", "all"):
            bench_overhead(tmp, args)
        if args.which in ("streaming", "all"):
            bench_streaming(tmp, args)
        if args.which in ("prefix", "all"):
            bench_prefix(tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
