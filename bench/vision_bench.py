#!/usr/bin/env python3
"""Vision benchmarks on the synthetic VLM (mmirage-make-test-model --vlm). Each prints a ratio measured in this run.

  throughput  images/s of `mmirage run` on a 64-row image dataset (one distinct image per row) vs a raw libmtmd
              loop (bench/raw_mtmd) doing the same encodes and generations at the same parallelism, fixed output
              length (EOS ignored).                                                goal: >= 0.95
  reuse       4 questions per image (16 images, 64 rows): image-encode reuse on vs off (extra_engine_args
              image_cache_mib 256 vs 0), encode work = images run through the vision encoder.   goal: <= 0.3x

Usage: bench/vision_bench.py [throughput|reuse|all] [--rows 64] [--parallel 8] [--max-new 32]
Binaries are taken from build/ (scripts/setup.sh builds them). Decode threads: $MMIRAGE_BENCH_THREADS (default 1).
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
RAW = os.path.join(BUILD, "mmirage-bench-raw-mtmd")
THREADS = int(os.environ.get("MMIRAGE_BENCH_THREADS", "1"))

CONFIG = """processors:
  - type: llm
    server_args:
      model_path: {model}
      mmproj_path: {mmproj}
      extra_engine_args: {{max_running_requests: {parallel}, context_length: 1024, n_threads: {threads},
                          image_cache_mib: {cache}}}
    default_sampling_params: {{temperature: 0, max_new_tokens: {max_new}, ignore_eos: true}}
loading_params:
  datasets: [{{type: JSONL, path: {data}, output_dir: {out}}}]
  state_dir: {state}
processing_params:
  inputs: [{{name: image, key: image, type: image}}, {{name: text, key: text}}]
  outputs: [{{name: answer, type: llm, prompt: "{{{{ text }}}}"}}]
  remove_columns: true
  output_schema: {{answer: "{{{{ answer }}}}"}}
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return r


def setup(tmp, n_images):
    vlm = os.path.join(tmp, "vlm")
    if not os.path.exists(os.path.join(vlm, "model.gguf")):
        run([MAKE_MODEL, "--vlm", "--out", vlm])
    images = []
    for i in range(n_images):
        p = os.path.join(tmp, "imgs", f"img{i}.png")
        if not os.path.exists(p):
            run([MAKE_MODEL, "--png", p, "--seed", str(i + 1)])
        images.append(p)
    return os.path.join(vlm, "model.gguf"), os.path.join(vlm, "mmproj-model.gguf"), images


def mmirage(tmp, name, model, mmproj, rows, parallel, max_new, cache_mib):
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "data.jsonl")
    with open(data, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(model=model, mmproj=mmproj, parallel=parallel, threads=THREADS, cache=cache_mib,
                              max_new=max_new, data=data, out=os.path.join(d, "out"), state=os.path.join(d, "state")))
    run([MMIRAGE, "run", "--config", cfg, "--log-level", "WARNING"])
    with open(os.path.join(d, "state", "shard_0", "status.json")) as f:
        return json.load(f)["stats"]


def bench_throughput(tmp, args):
    model, mmproj, images = setup(tmp, args.rows)
    rows = [{"image": images[i], "text": f"Describe picture {i} in one sentence."} for i in range(args.rows)]
    reqs = os.path.join(tmp, "requests.jsonl")
    with open(reqs, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    raw = json.loads(run([RAW, "--model", model, "--mmproj", mmproj, "--requests", reqs, "--parallel",
                          str(args.parallel), "--max-new-tokens", str(args.max_new), "--threads", str(THREADS)]).stdout)
    st = mmirage(tmp, "throughput", model, mmproj, rows, args.parallel, args.max_new, 256)
    ours = st["rows_processed"] / st["inference_runtime_seconds"]
    print(f"throughput: raw libmtmd {raw['images_per_s']:8.2f} images/s ({raw['seconds']} s) | mmirage run "
          f"{ours:8.2f} images/s ({st['inference_runtime_seconds']} s, {st['output_tokens']} output tokens, "
          f"{st.get('images_encoded')} encoded) | ratio {ours / raw['images_per_s']:.3f} (goal >= 0.95)")


def bench_reuse(tmp, args):
    n_images = max(1, args.rows // 4)
    model, mmproj, images = setup(tmp, n_images)
    rows = [{"image": images[i % n_images], "text": f"Question {i // n_images} about this picture?"}
            for i in range(n_images * 4)]
    off = mmirage(tmp, "reuse_off", model, mmproj, rows, args.parallel, 8, 0)
    on = mmirage(tmp, "reuse_on", model, mmproj, rows, args.parallel, 8, 256)
    print(f"reuse     : images encoded off {off['images_encoded']} | on {on['images_encoded']} "
          f"(reused {on['images_reused']}) | ratio {on['images_encoded'] / off['images_encoded']:.3f} (goal <= 0.3); "
          f"rows/s off {off['rows_processed'] / off['inference_runtime_seconds']:.2f}, "
          f"on {on['rows_processed'] / on['inference_runtime_seconds']:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="?", default="all", choices=["throughput", "reuse", "all"])
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=32)
    args = ap.parse_args()
    for b in (MMIRAGE, MAKE_MODEL, RAW):
        if not os.path.exists(b):
            sys.exit(f"missing {b}: run scripts/setup.sh first")
    tmp = tempfile.mkdtemp(prefix="mmirage_vision_bench_")
    try:
        if args.which in ("throughput", "all"):
            bench_throughput(tmp, args)
        if args.which in ("reuse", "all"):
            bench_reuse(tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
