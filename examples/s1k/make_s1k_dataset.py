#!/usr/bin/env python3
"""Builds a save_to_disk dataset with the columns of simplescaling/s1K-1.1 (synthetic content, no download), for the
original's benchmark config `configs/config_benchmark_datatrove.yaml` (its `path: data/s1K-1.1`, `type: loadable`).

  python examples/s1k/make_s1k_dataset.py [--rows 1000] [--out data/s1K-1.1]

Needs `datasets` (e.g. build/venv/bin/python, the test venv). With the real data instead:
  datasets.load_dataset("simplescaling/s1K-1.1", split="train").save_to_disk("data/s1K-1.1")
"""
import argparse

import datasets

COT_TYPES = ["math", "science", "crossword"]
SOURCES = ["qq8933/AIME_1983_2024", "Idavidrein/gpqa", "AI-MO/NuminaMath-CoT/aops_forum"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--out", default="data/s1K-1.1")
    args = ap.parse_args()
    rows = []
    for i in range(args.rows):
        q = f"Problem {i}: find the number of integers n with 1 <= n <= {100 + i} such that n^2 + {i} is divisible by 7."
        rows.append({
            "solution": f"The answer is {(100 + i) // 7}.",
            "question": q,
            "cot_type": COT_TYPES[i % 3],
            "source_type": SOURCES[i % 3],
            "metadata": "{'ID': '%d', 'Year': %d}" % (i, 1983 + i % 40),
            "gemini_thinking_trajectory": f"Let me think about problem {i} step by step. " * 8,
            "gemini_attempt": f"Answer: {(100 + i) // 7}",
            "deepseek_thinking_trajectory": f"Okay, so problem {i} asks... " * 8,
            "deepseek_attempt": f"**Final Answer** {(100 + i) // 7}",
            "gemini_grade": "Yes" if i % 4 else "No",
            "gemini_grade_reason": "The attempt matches the solution.",
            "deepseek_grade": "Yes" if i % 5 else "No",
            "deepseek_grade_reason": "The attempt matches the solution.",
        })
    features = datasets.Features({k: datasets.Value("string") for k in rows[0]})
    datasets.Dataset.from_list(rows, features=features).save_to_disk(args.out)
    print(f"wrote {args.rows} rows to {args.out}")


if __name__ == "__main__":
    main()
