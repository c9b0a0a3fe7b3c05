"""Oracle for the HF datasets tests (tests/e2e/hf_io_test.cc): builds inputs with `datasets`/`pyarrow` and checks
mmirage's outputs by loading them back with `datasets`. Each subcommand exits non-zero with a message on mismatch.

  make-basic DIR            save_to_disk Dataset with every HF column kind (Image, nested, nulls, non-ASCII, ...)
  check-basic OUT FORMAT    OUT (a shard or merged dir) in FORMAT (hf|parquet|jsonl) holds the restructured rows
  make-dict DIR             save_to_disk DatasetDict (train: 3 rows, test: 2 rows)
  check-dict OUT ORDER      OUT is a DatasetDict (splits in ORDER, comma-separated) with the same splits and rows plus the new column
  make-exotic DIR           Arrow stream (save_to_disk layout) + Parquet file with the Arrow types datasets rarely
                            writes (dictionary, map, large types, uint64, decimal, time, ...); writes DIR/expected.jsonl
  make-big DIR N            a save_to_disk-layout dataset of N simple rows (written with pyarrow, quickly)
  load OUT FORMAT           prints the rows of OUT as JSON lines (bytes as base64), for equality checks
"""
import base64
import datetime
import decimal
import io
import json
import os
import sys

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image as PILImage

datasets.disable_progress_bars()


def png(color):
    buf = io.BytesIO()
    PILImage.new("RGB", (2, 2), color).save(buf, format="PNG")
    return buf.getvalue()


N_BASIC = 7


def basic_rows():
    rows = []
    for i in range(N_BASIC):
        rows.append({
            "id": i,
            "text": f"Grüße, 世界 🌍 #{i} \"quoted\"\n",
            "score": i * 0.5 + 0.25,
            "flag": i % 2 == 0,
            "maybe": None if i % 2 else f"m{i}",
            "conv": [{"role": "user", "content": f"q{i}"}] + ([{"role": "assistant", "content": f"a{i}"}] if i % 3 else []),
            "tags": [f"t{j}" for j in range(i % 3)],
            "meta": {"lang": "fr" if i % 2 else "en", "n": i * 10},
            "img": None if i == 3 else {"bytes": png((i * 30, 0, 0)), "path": None},
            "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, i * 1000),
            "day": datetime.date(2020, 2, 28) + datetime.timedelta(days=i),
            "blob": bytes([0, 255, i, 10]),
            "label": i % 2,
        })
    return rows


BASIC_FEATURES = datasets.Features({
    "id": datasets.Value("int64"),
    "text": datasets.Value("string"),
    "score": datasets.Value("float32"),
    "flag": datasets.Value("bool"),
    "maybe": datasets.Value("string"),
    "conv": datasets.List({"role": datasets.Value("string"), "content": datasets.Value("string")}),
    "tags": datasets.List(datasets.Value("string")),
    "meta": {"lang": datasets.Value("string"), "n": datasets.Value("int32")},
    "img": datasets.Image(),
    "ts": datasets.Value("timestamp[us]"),
    "day": datasets.Value("date32"),
    "blob": datasets.Value("binary"),
    "label": datasets.ClassLabel(names=["neg", "pos"]),
})


def expected_basic():
    """The rows mmirage must write for tests/e2e/hf_io_test.cc's restructure config (remove_columns: false)."""
    out = []
    for r in basic_rows():
        e = dict(r)
        e["meta"] = dict(r["meta"])
        e["ts"] = r["ts"].isoformat()
        e["day"] = r["day"].isoformat()
        e["summary"] = f"{r['text']} ({len(r['tags'])} tags)"
        e["first_role"] = r["conv"][0]["role"]
        e["pic"] = r["img"]
        out.append(e)
    return out


EXPECTED_FEATURES = datasets.Features({
    "id": datasets.Value("int64"),
    "text": datasets.Value("string"),
    "score": datasets.Value("float64"),
    "flag": datasets.Value("bool"),
    "maybe": datasets.Value("string"),
    "conv": datasets.List({"role": datasets.Value("string"), "content": datasets.Value("string")}),
    "tags": datasets.List(datasets.Value("string")),
    "meta": {"lang": datasets.Value("string"), "n": datasets.Value("int64")},
    "img": datasets.Image(),
    "ts": datasets.Value("string"),
    "day": datasets.Value("string"),
    "blob": datasets.Value("binary"),
    "label": datasets.Value("int64"),
    "summary": datasets.Value("string"),
    "first_role": datasets.Value("string"),
    "pic": datasets.Image(),
})


def fail(msg):
    print("MISMATCH: " + msg, file=sys.stderr)
    sys.exit(1)


def to_jsonable(v):
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: to_jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_jsonable(x) for x in v]
    return v


def load(out, fmt):
    """Rows and features of an mmirage output directory."""
    if fmt == "hf":
        ds = datasets.load_from_disk(out)
    elif fmt == "parquet":
        ds = datasets.load_dataset("parquet", data_files=os.path.join(out, "data.parquet"), split="train")
    else:
        with open(os.path.join(out, "data.jsonl"), encoding="utf-8") as f:
            return [json.loads(l) for l in f if l.strip()], None
    feats = ds.features
    for name, feat in feats.items():
        if isinstance(feat, datasets.Image):
            ds = ds.cast_column(name, datasets.Image(decode=False))
    return ds.to_list(), feats


def check_basic(out, fmt):
    rows, feats = load(out, fmt)
    want = expected_basic()
    if fmt == "jsonl":
        want = [to_jsonable(r) for r in want]
    elif feats != EXPECTED_FEATURES:
        fail(f"features\n got  {feats}\n want {EXPECTED_FEATURES}")
    if len(rows) != len(want):
        fail(f"{len(rows)} rows, want {len(want)}")
    for i, (g, w) in enumerate(zip(rows, want)):
        if list(g.keys()) != list(w.keys()):
            fail(f"row {i} columns {list(g.keys())}, want {list(w.keys())}")
        for k in w:
            if g[k] != w[k]:
                fail(f"row {i} column {k}: got {g[k]!r}, want {w[k]!r}")
    if fmt == "hf":  # the features are in the Arrow schema metadata too
        for f in sorted(os.listdir(out)):
            if f.endswith(".arrow"):
                meta = pa.ipc.open_stream(os.path.join(out, f)).schema.metadata
                info = json.loads(meta[b"huggingface"])["info"]["features"]
                if datasets.Features.from_dict(info) != EXPECTED_FEATURES:
                    fail(f"{f}: schema metadata features {info}")
    print("OK")


def make_dict(d):
    dd = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"q": ["a", "b", "c"], "n": [1, 2, 3]}),
        "test": datasets.Dataset.from_dict({"q": ["x", "y"], "n": [10, 20]}),
    })
    dd.save_to_disk(d)


def check_dict(out, order):
    dd = datasets.load_from_disk(out)
    if list(dd.keys()) != order.split(","):  # a shard keeps the input's order; merge sorts (as the original)
        fail(f"splits {list(dd.keys())}, want {order}")
    want = {"train": [("a", 1), ("b", 2), ("c", 3)], "test": [("x", 10), ("y", 20)]}
    for s, rows in want.items():
        got = dd[s].to_list()
        exp = [{"q": q, "n": n, "shout": q.upper() + "!"} for q, n in rows]
        if got != exp:
            fail(f"split {s}: {got} != {exp}")
    print("OK")


def exotic_table():
    n = 4
    dict_arr = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, None], pa.int8()), pa.array(["red", "green"]))
    return pa.table({
        "u64": pa.array([0, 1, 2**63, None], pa.uint64()),
        "i8": pa.array([-1, 2, None, 127], pa.int8()),
        "f16": pa.array(np.array([0.5, 0, -2.0, 1.0], dtype="float16"), mask=np.array([False, True, False, False])),
        "ls": pa.array(["é", None, "", "z"], pa.large_string()),
        "lb": pa.array([b"\x00", None, b"", b"\xff\xfe"], pa.large_binary()),
        "fsb": pa.array([b"ab", b"cd", None, b"ef"], pa.binary(2)),
        "ll": pa.array([[1, 2], [], None, [3]], pa.large_list(pa.int32())),
        "fsl": pa.array([[1.5, 2.5], None, [0.0, -1.0], [3.0, 4.0]], pa.list_(pa.float64(), 2)),
        "m": pa.array([[("a", 1), ("b", 2)], [], None, [("c", 3)]], pa.map_(pa.string(), pa.int64())),
        "mi": pa.array([[(1, "x")], None, [], [(2, "y"), (3, "z")]], pa.map_(pa.int32(), pa.string())),
        "dict": dict_arr,
        "ts_tz": pa.array([0, 1_700_000_000_123, None, -1], pa.timestamp("ms", tz="Europe/Paris")),
        "ts_ns": pa.array([1, None, 86_400_000_000_000, 0], pa.timestamp("ns")),
        "d64": pa.array([0, None, 86_400_000 * 365, -86_400_000], pa.date64()),
        "t32": pa.array([3661, None, 0, 86399], pa.time32("s")),
        "t64": pa.array([1_500_000, None, 0, 3_600_000_001], pa.time64("us")),
        "dec": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-0.01"), decimal.Decimal("12345.67")],
                        pa.decimal128(9, 2)),
        "dur": pa.array([5, None, -3, 0], pa.duration("s")),
        "st": pa.array([{"x": 1, "y": [{"z": None}]}, None, {"x": None, "y": []}, {"x": 4, "y": None}]),
        "nul": pa.nulls(n),
    })


EXOTIC_EXPECTED = [
    {"u64": 0, "i8": -1, "f16": 0.5, "ls": "é", "lb": "AA==", "fsb": "YWI=", "ll": [1, 2], "fsl": [1.5, 2.5],
     "m": {"a": 1, "b": 2}, "mi": [[1, "x"]], "dict": "red", "ts_tz": "1970-01-01T00:00:00+00:00",
     "ts_ns": "1970-01-01T00:00:00.000000001", "d64": "1970-01-01", "t32": "01:01:01", "t64": "00:00:01.500000",
     "dec": "1.50", "dur": 5, "st": {"x": 1, "y": [{"z": None}]}, "nul": None},
    {"u64": 1, "i8": 2, "f16": None, "ls": None, "lb": None, "fsb": "Y2Q=", "ll": [], "fsl": None,
     "m": {}, "mi": None, "dict": "green", "ts_tz": "2023-11-14T22:13:20.123+00:00",
     "ts_ns": None, "d64": None, "t32": None, "t64": None,
     "dec": None, "dur": None, "st": None, "nul": None},
    {"u64": 9223372036854775808.0, "i8": None, "f16": -2.0, "ls": "", "lb": "", "fsb": None, "ll": None,
     "fsl": [0.0, -1.0], "m": None, "mi": [], "dict": "red", "ts_tz": None,
     "ts_ns": "1970-01-02T00:00:00", "d64": "1971-01-01", "t32": "00:00:00", "t64": "00:00:00",
     "dec": "-0.01", "dur": -3, "st": {"x": None, "y": []}, "nul": None},
    {"u64": None, "i8": 127, "f16": 1.0, "ls": "z", "lb": "//4=", "fsb": "ZWY=", "ll": [3], "fsl": [3.0, 4.0],
     "m": {"c": 3}, "mi": [[2, "y"], [3, "z"]], "dict": None, "ts_tz": "1969-12-31T23:59:59.999+00:00",
     "ts_ns": "1970-01-01T00:00:00", "d64": "1969-12-31", "t32": "23:59:59", "t64": "01:00:00.000001",
     "dec": "12345.67", "dur": 0, "st": {"x": 4, "y": None}, "nul": None},
]


def write_state(d, files):
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump({"_data_files": [{"filename": x} for x in files], "_fingerprint": "0", "_format_columns": None,
                   "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False, "_split": None}, f)
    with open(os.path.join(d, "dataset_info.json"), "w") as f:
        json.dump({"features": {}}, f)


def make_exotic(d):
    os.makedirs(d, exist_ok=True)
    t = exotic_table()
    # Two record batches, to cross a batch boundary.
    with pa.ipc.new_stream(os.path.join(d, "data-00000-of-00001.arrow"), t.schema) as w:
        for b in t.to_batches(max_chunksize=3):
            w.write_batch(b)
    write_state(d, ["data-00000-of-00001.arrow"])
    pq.write_table(t, os.path.join(d, "exotic.parquet"), row_group_size=2)
    # `mmirage cat` prints map-with-int-keys as [key, value] pairs: JSON-equal to EXOTIC_EXPECTED.
    with open(os.path.join(d, "expected.jsonl"), "w") as f:
        for r in EXOTIC_EXPECTED:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def make_big(d, n):
    os.makedirs(d, exist_ok=True)
    schema = pa.schema([("id", pa.int64()), ("text", pa.string()), ("tags", pa.list_(pa.string()))])
    with pa.ipc.new_stream(os.path.join(d, "data-00000-of-00001.arrow"), schema) as w:
        step = 100_000
        for s in range(0, n, step):
            ids = list(range(s, min(n, s + step)))
            w.write_batch(pa.record_batch([pa.array(ids), pa.array([f"row {i} é" for i in ids]),
                                           pa.array([["a", str(i % 7)] for i in ids])], schema=schema))
    write_state(d, ["data-00000-of-00001.arrow"])


def main():
    cmd = sys.argv[1]
    if cmd == "make-basic":
        datasets.Dataset.from_list(basic_rows(), features=BASIC_FEATURES).save_to_disk(sys.argv[2])
    elif cmd == "check-basic":
        check_basic(sys.argv[2], sys.argv[3])
    elif cmd == "make-dict":
        make_dict(sys.argv[2])
    elif cmd == "check-dict":
        check_dict(sys.argv[2], sys.argv[3])
    elif cmd == "make-exotic":
        make_exotic(sys.argv[2])
    elif cmd == "make-big":
        make_big(sys.argv[2], int(sys.argv[3]))
    elif cmd == "compare-jsonl":  # two JSON-lines files hold JSON-equal rows
        with open(sys.argv[2], encoding="utf-8") as a, open(sys.argv[3], encoding="utf-8") as b:
            ga = [json.loads(l) for l in a if l.strip()]
            gb = [json.loads(l) for l in b if l.strip()]
        if len(ga) != len(gb):
            fail(f"{len(ga)} rows vs {len(gb)}")
        for i, (x, y) in enumerate(zip(ga, gb)):
            if x != y:
                for k in sorted(set(x) | set(y)):
                    if x.get(k, "<absent>") != y.get(k, "<absent>"):
                        fail(f"row {i} column {k}: {x.get(k, '<absent>')!r} != {y.get(k, '<absent>')!r}")
        print("OK")
    elif cmd == "load":
        rows, _ = load(sys.argv[2], sys.argv[3])
        for r in rows:
            print(json.dumps(to_jsonable(r), ensure_ascii=False, sort_keys=True))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
