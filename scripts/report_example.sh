#!/usr/bin/env bash
# Regenerates the example run report shown in docs/stats.md: docs/report_example.html and docs/report_example.png.
# A real run on the synthetic test model (build/mmirage-make-test-model, random weights): 3 shards side by side,
# shard 2 with much longer rows, shard 1 stopped with SIGTERM half-way and resumed; then `mmirage stats --html`,
# checked and rendered by tests/e2e/check_html_report.py in headless Chromium. Needs a built tree
# (scripts/setup.sh) and Debian's chromium (scripts/test.sh installs it). Takes about a minute on 2 cores.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build/mmirage"
PY="$ROOT/build/venv/bin/python"; [ -x "$PY" ] || PY=python3
WS="$(mktemp -d)"; trap 'rm -rf "$WS"' EXIT
cd "$WS"
"$ROOT/build/mmirage-make-test-model" --out tiny.gguf --seed 3 --eos-bias 0.2 >/dev/null
"$PY" - <<'PYEOF'
import json
with open("data.jsonl", "w") as f:
    for i in range(150):
        text = f"The capital of country {i} is city {i}"
        if i >= 100:  # shard 2: long rows (dataset skew)
            text += " and it is known for " + ", ".join(f"landmark number {j}" for j in range(90))
        f.write(json.dumps({"id": i, "text": text}) + "\n")
PYEOF
cat > example.yaml <<'YAML'
processors:
  - type: llm
    server_args:
      model_path: tiny.gguf
      extra_engine_args: {max_running_requests: 4, context_length: 2048, n_threads: 1}
    default_sampling_params: {temperature: 0, max_new_tokens: 48}
loading_params:
  datasets: [{type: JSONL, path: data.jsonl, output_dir: out}]
  state_dir: out/state
  num_shards: 3
  batch_size: 8
processing_params:
  inputs: [{name: text, key: text}, {name: id, key: id}]
  outputs: [{name: answer, type: llm, prompt: "Rewrite: {{ text }}"}]
  remove_columns: true
  output_schema: {id: "{{ id }}", answer: "{{ answer }}"}
execution_params:
  commit_every_rows: 4
YAML
export MMIRAGE_TIMELINE_INTERVAL_SECONDS=1  # a short run: a sample every second instead of every 10 s
run() { "$BIN" run --config example.yaml --shard-id "$1" --quiet 2>>"run$1.log" || { tail -5 "run$1.log" >&2; return 1; }; }
run 0 & p0=$!
run 2 & p2=$!
"$BIN" run --config example.yaml --shard-id 1 --quiet 2>>run1.log & p1=$!  # mmirage itself, to signal it
# Stop shard 1 once it has committed some rows; it resumes below.
committed() { "$PY" -c 'import json,sys; j=json.load(open("out/shard_1.tmp.partial/journal.json"))
sys.exit(0 if j["splits"][0]["rows_done"] >= 12 else 1)' 2>/dev/null; }
for _ in $(seq 300); do committed && break; sleep 0.2; done
kill -TERM "$p1"; wait "$p1" || true
run 1
wait "$p0" "$p2"
"$BIN" stats --config example.yaml > stats.json
"$BIN" stats --config example.yaml --html report.html
"$BIN" stats --config example.yaml --format table
"$PY" "$ROOT/tests/e2e/check_html_report.py" report.html stats.json --png report.png
cp report.html "$ROOT/docs/report_example.html"
cp report.png "$ROOT/docs/report_example.png"
echo "wrote docs/report_example.html and docs/report_example.png" >&2
