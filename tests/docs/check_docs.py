#!/usr/bin/env python3
"""The doc-test: every example in README.md and docs/*.md must work, and every error names FILE:LINE.

Checks, per fenced block (the info string's first word is the language, the next words are flags):
  ```yaml               a complete config: `mmirage validate` must accept it with no warning
                        (run in a scratch directory where examples/, tests/, share/ and build/ link to the repo's and
                        every relative dataset/model path it names exists as an empty file)
  ```yaml overlay[=P]   a partial config, deep-merged (maps merge, lists and scalars replace) over P (default
                        examples/quickstart/rewrite.yaml), then validated the same way
  ```yaml fragment      not a config: it must parse as YAML
  ```sh / bash / shell  every command line that runs mmirage (`mmirage`, `build/mmirage`, `.../bin/mmirage`) names
  ```console            a real subcommand and only flags its `--help` lists; `scripts/…`, `bench/…`, `tests/…`
                        programs must exist. In `console` blocks only the lines after a `$ ` prompt are commands.
Other blocks (text, json, …) are prose. Besides: every relative link resolves (file, and #anchor against the
target's headings), README.md has at most 200 lines, and its command table names every subcommand of `--help`.

Usage: check_docs.py --root REPO --mmirage BUILD/mmirage          exit 0, or 1 with one line per problem
       check_docs.py --self-test --mmirage BUILD/mmirage          checks that broken examples are caught
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # the test venv (tests/requirements.txt) has PyYAML; a bare python3 may not
    print("check_docs.py: PyYAML is not importable by " + sys.executable +
          " (configure with -DMMIRAGE_PYTHON=<the test venv's python>, as scripts/setup.sh --for-tests does)")
    sys.exit(1)

README_MAX_LINES = 200
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*(.*)$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
SHELL_LANGS = {"sh", "bash", "shell", "console"}
DEFAULT_OVERLAY_BASE = "examples/quickstart/rewrite.yaml"


class Block:
    def __init__(self, path, line, lang, flags, text):
        self.path, self.line, self.lang, self.flags, self.text = path, line, lang, flags, text

    def where(self, offset=0):  # offset 1 = the first line inside the fence
        return "%s:%d" % (self.path, self.line + offset)


def parse_blocks(path, display, errors):
    """Fenced blocks of a Markdown file, and the lines outside them (for links)."""
    blocks, prose = [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        fence, info = m.group(1), m.group(2).split()
        start = i + 1  # 1-based line of the opening fence
        body = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence)) and
                                      lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            errors.append("%s:%d: unclosed code fence" % (display, start))
            break
        i += 1
        lang = info[0].lower() if info else ""
        blocks.append(Block(display, start, lang, info[1:], "\n".join(body) + "\n"))
    return blocks, prose


# ---- YAML configs ------------------------------------------------------------------------------------------------

def deep_merge(base, over):
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = deep_merge(base[k], v) if k in base else v
        return out
    return over


def relative_paths(cfg):
    """Relative file paths a config names (dataset files, model and projector files) that validate might need."""
    out = []
    if not isinstance(cfg, dict):
        return out
    for d in (cfg.get("loading_params") or {}).get("datasets") or []:
        if not isinstance(d, dict):
            continue
        p = d.get("path")
        for v in (p.values() if isinstance(p, dict) else [p]):
            if isinstance(v, str) and v and not os.path.isabs(v) and not re.search(r"[*?\[$~]", v):
                out.append(v)
    for proc in cfg.get("processors") or []:
        sa = proc.get("server_args") if isinstance(proc, dict) else None
        for key in ("model_path", "mmproj_path"):
            v = (sa or {}).get(key)
            if isinstance(v, str) and v.endswith(".gguf") and not os.path.isabs(v) and "://" not in v:
                out.append(v)
    return out


def scratch_dir(root, mmirage):
    d = tempfile.mkdtemp(prefix="mmirage-docs-")
    for name in ("examples", "tests", "share"):
        if os.path.isdir(os.path.join(root, name)):
            os.symlink(os.path.join(root, name), os.path.join(d, name))
    os.symlink(os.path.dirname(os.path.abspath(mmirage)), os.path.join(d, "build"))
    return d


def guess_line(block, message):
    """For a merged overlay (whose line numbers are not the block's): the block line naming the first quoted word
    of the message, e.g. the unknown key; 0 (the fence) when none does."""
    for word in re.findall(r"'([^']+)'", message):
        for k, line in enumerate(block.text.split("\n"), start=1):
            if re.search(r"(^|[\s{,])" + re.escape(word) + r"\s*:", line):
                return k
    return 0


def validate(block, text, cfg, root, mmirage, line_map):
    """Runs `mmirage validate` on `text`; returns problems as 'FILE:LINE: …' strings."""
    d = scratch_dir(root, mmirage)
    try:
        for rel in relative_paths(cfg):
            p = os.path.join(d, rel)
            if not os.path.exists(p):
                os.makedirs(os.path.dirname(p) or d, exist_ok=True)
                open(p, "w").close()
        path = os.path.join(d, "doc_example.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run([mmirage, "validate", "--config", path], cwd=d, capture_output=True, text=True,
                           timeout=60)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    problems = []
    out = r.stdout + r.stderr
    # "error: /tmp/…/doc_example.yaml:12:5: message" → the Markdown line when the config is the block itself.
    loc = re.compile(r"^(?:\S+ )?(error|warning|ERROR|WARNING)[: ].*?doc_example\.yaml:(\d+):(\d+): (.*)$")
    for line in out.splitlines():
        m = loc.match(line.strip())
        if m:
            kind = m.group(1).lower()
            where = block.where(int(m.group(2))) if line_map else block.where(guess_line(block, m.group(4)))
            problems.append("%s: mmirage validate: %s: %s" % (where, kind, m.group(4)))
    if r.returncode != 0 and not problems:
        problems.append("%s: mmirage validate exited %d: %s" % (block.where(), r.returncode,
                                                                 " | ".join(out.strip().splitlines()[-3:])))
    return problems


def check_yaml(block, root, mmirage):
    flags = block.flags
    try:
        doc = yaml.safe_load(block.text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        n_lines = max(1, len(block.text.rstrip("\n").split("\n")))
        where = block.where(min(mark.line + 1, n_lines)) if mark is not None else block.where()
        return ["%s: the YAML does not parse: %s" % (where, str(e).splitlines()[0])]
    if "fragment" in flags:
        return []
    overlay = [f for f in flags if f == "overlay" or f.startswith("overlay=")]
    if overlay:
        base_rel = overlay[0].split("=", 1)[1] if "=" in overlay[0] else DEFAULT_OVERLAY_BASE
        with open(os.path.join(root, base_rel), encoding="utf-8") as f:
            base = yaml.safe_load(f)
        if not isinstance(doc, dict):
            return ["%s: a `yaml overlay` block must be a map" % block.where()]
        merged = deep_merge(base, doc)
        return validate(block, yaml.safe_dump(merged, sort_keys=False), merged, root, mmirage, line_map=False)
    if not isinstance(doc, dict):
        return ["%s: a `yaml` block must be a whole config (mark partial ones `yaml fragment` or `yaml overlay`)"
                % block.where()]
    return validate(block, block.text, doc, root, mmirage, line_map=True)


# ---- shell commands ----------------------------------------------------------------------------------------------

class HelpCache:
    def __init__(self, mmirage):
        self.mmirage, self.cache = mmirage, {}
        self.subcommands = subcommands(mmirage)

    def get(self, words):
        key = tuple(words)
        if key not in self.cache:
            r = subprocess.run([self.mmirage] + list(words) + ["--help"], capture_output=True, text=True, timeout=30)
            self.cache[key] = (r.returncode, r.stdout + r.stderr)
        return self.cache[key]


def command_lines(block):
    """(offset, text) of each command in a shell block, continuation lines joined."""
    out, pending, start = [], "", 0
    for k, raw in enumerate(block.text.split("\n"), start=1):
        line = raw.rstrip()
        if block.lang == "console" and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not pending:
            start = k
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        if pending.strip():
            out.append((start, pending))
        pending = ""
    return out


def split_segments(tokens):
    segs, cur = [], []
    for t in tokens:
        if t in ("&&", "||", ";", "|", "&", "(", ")"):
            if cur:
                segs.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        segs.append(cur)
    return segs


def flag_listed(flag, help_text):
    return re.search(r"(^|[\s,\[])" + re.escape(flag) + r"($|[\s,=\]])", help_text, re.M) is not None


def check_mmirage(where, args, helps):
    if not args or args[0].startswith("-"):
        return []  # `mmirage --version`, `mmirage --help`
    if args[0] not in helps.subcommands:
        return ["%s: `mmirage %s` is not a subcommand (`mmirage --help` lists %s)"
                % (where, args[0], ", ".join(helps.subcommands))]
    words = [args[0]]
    rc, text = helps.get(words)
    if rc != 0:
        return ["%s: `mmirage %s --help` exits %d" % (where, args[0], rc)]
    rest = args[1:]
    nested = subcommands(helps.mmirage, words)
    if nested:  # `mmirage cache stats|clear`
        if not rest or rest[0] not in nested:
            return ["%s: `mmirage %s` needs one of %s" % (where, args[0], ", ".join(nested))]
        words.append(rest[0])
        rc, text = helps.get(words)
        rest = rest[1:]
    problems = []
    for t in rest:
        if re.fullmatch(r"--?[A-Za-z][A-Za-z0-9-]*(=.*)?", t):
            flag = t.split("=", 1)[0]
            if not flag_listed(flag, text):
                problems.append("%s: `mmirage %s` has no flag %s (see `mmirage %s --help`)"
                                % (where, " ".join(words), flag, " ".join(words)))
    return problems


def check_shell(block, root, helps):
    problems = []
    for offset, line in command_lines(block):
        where = block.where(offset)
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=True)
            lex.whitespace_split = True
            lex.commenters = "#"
            tokens = list(lex)
        except ValueError as e:
            problems.append("%s: cannot parse the command: %s" % (where, e))
            continue
        for seg in split_segments(tokens):
            while seg and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", seg[0]):  # VAR=value prefixes
                seg = seg[1:]
            if seg and seg[0] in ("export", "cd", "sudo"):
                continue
            if not seg:
                continue
            prog = seg[0]
            if os.path.basename(prog) == "mmirage":
                problems += check_mmirage(where, seg[1:], helps)
            elif re.match(r"^(scripts|bench|tests|tools|fuzz)/", prog) and not os.path.exists(os.path.join(root, prog)):
                problems.append("%s: %s does not exist" % (where, prog))
    return problems


# ---- links -------------------------------------------------------------------------------------------------------

def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


_ANCHORS = {}


def anchors(path):
    cache = _ANCHORS
    if path not in cache:
        seen, out = {}, set()
        with open(path, encoding="utf-8") as f:
            in_fence = None
            for line in f:
                m = FENCE.match(line.rstrip("\n"))
                if m:
                    in_fence = None if in_fence else m.group(1)
                    continue
                if in_fence is None and line.startswith("#"):
                    h = slug(line.lstrip("#"))
                    n = seen.get(h, 0)
                    seen[h] = n + 1
                    out.add(h if n == 0 else "%s-%d" % (h, n))
        cache[path] = out
    return cache[path]


def check_links(path, display, prose):
    problems = []
    for lineno, line in prose:
        line = re.sub(r"`[^`]*`", "", line)
        for m in LINK.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                problems.append("%s:%d: broken link %s (no file %s)" % (display, lineno, target, file_part))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append("%s:%d: broken link %s (no heading #%s in %s)"
                                % (display, lineno, target, anchor, os.path.basename(dest)))
    return problems


# ---- the README's own rules ---------------------------------------------------------------------------------------

def subcommands(mmirage, words=()):
    """The subcommands `mmirage WORDS --help` lists (CLI11 accepts `--help` after an unknown word too)."""
    r = subprocess.run([mmirage] + list(words) + ["--help"], capture_output=True, text=True, timeout=30)
    text = r.stdout + r.stderr
    parts = re.split(r"^subcommands:", text, maxsplit=1, flags=re.M | re.I)
    section = parts[1] if len(parts) == 2 else ""
    return re.findall(r"^\s{2}([a-z][a-z-]*)\s", section, re.M)


def check_readme(path, display, mmirage):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    problems = []
    n = text.count("\n")
    if n > README_MAX_LINES:
        problems.append("%s:%d: README.md has %d lines; at most %d" % (display, README_MAX_LINES + 1, n,
                                                                       README_MAX_LINES))
    subs = subcommands(mmirage)
    if not subs:
        problems.append("%s:1: `mmirage --help` lists no subcommands" % display)
    for s in subs:
        if not re.search(r"^\| `mmirage " + re.escape(s) + r"[ `]", text, re.M):
            problems.append("%s:1: the command table has no line for `mmirage %s`" % (display, s))
    return problems


def check_tree(root, mmirage):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    helps = HelpCache(mmirage)
    problems, counts = [], {"yaml": 0, "shell": 0, "files": 0}
    for path in files:
        if not os.path.exists(path):
            problems.append("%s:1: missing" % os.path.relpath(path, root))
            continue
        display = os.path.relpath(path, root)
        counts["files"] += 1
        blocks, prose = parse_blocks(path, display, problems)
        for b in blocks:
            if b.lang == "yaml":
                counts["yaml"] += 1
                problems += check_yaml(b, root, mmirage)
            elif b.lang in SHELL_LANGS:
                counts["shell"] += 1
                problems += check_shell(b, root, helps)
        problems += check_links(path, display, prose)
        if display == "README.md":
            problems += check_readme(path, display, mmirage)
    return problems, counts


# ---- self-test: the checker catches what it claims to catch -------------------------------------------------------

SELF_TEST_README = """# t
| `mmirage run -c C` | x |
[ok](docs/page.md#a-heading) [broken](docs/nope.md) [bad anchor](docs/page.md#no-such-heading)
```sh
build/mmirage run --config c.yaml --no-such-flag
build/mmirage frobnicate --config c.yaml
scripts/no_such_script.sh
mmirage cache purge --config c.yaml
mmirage cache stats --config c.yaml --format json    # fine
```
"""
SELF_TEST_PAGE = """# Page
## A heading
```yaml
processors: []
loading_params:
  datasets: [{type: JSONL, path: data.jsonl, output_dir: out/x}]
processing_params:
  inputs: [{name: t, key: 'text[?'}]
  outputs: []
  output_schema: {t: "{{ t }}"}
```
```yaml fragment
a: [1, 2
```
```yaml overlay
execution_params: {retyr: true}
```
```console
$ build/mmirage validate --config x.yaml --colour
output line, not a command: --whatever
```
"""


def self_test(mmirage):
    root = tempfile.mkdtemp(prefix="mmirage-docs-selftest-")
    try:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "examples", "quickstart"))
        shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", DEFAULT_OVERLAY_BASE),
                    os.path.join(root, DEFAULT_OVERLAY_BASE))
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(SELF_TEST_README)
        with open(os.path.join(root, "docs", "page.md"), "w") as f:
            f.write(SELF_TEST_PAGE)
        problems, _ = check_tree(root, mmirage)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    expected = [
        ("README.md:3: broken link docs/nope.md", "a link to a missing file"),
        ("README.md:3: broken link docs/page.md#no-such-heading", "a link to a missing heading"),
        ("README.md:5: `mmirage run` has no flag --no-such-flag", "an unknown flag"),
        ("README.md:6: `mmirage frobnicate` is not a subcommand", "an unknown subcommand"),
        ("README.md:7: scripts/no_such_script.sh does not exist", "a missing script"),
        ("README.md:8: `mmirage cache` needs one of stats, clear", "an unknown nested subcommand"),
        ("README.md:1: the command table has no line for `mmirage check`", "a command missing from the table"),
        ("docs/page.md:8: mmirage validate: error:", "an invalid JMESPath key, on its own line"),
        ("docs/page.md:13: the YAML does not parse", "a fragment that is not YAML"),
        ("docs/page.md:16: mmirage validate: warning:", "an unknown key in an overlay, on its own line"),
        ("docs/page.md:19: `mmirage validate` has no flag --colour", "an unknown flag in a console block"),
    ]
    failed = 0
    for prefix, what in expected:
        if not any(p.startswith(prefix) for p in problems):
            print("self-test: %s was not reported (expected a line starting %r)" % (what, prefix))
            failed += 1
    for p in problems:
        if "--whatever" in p or "page.md#a-heading" in p or "README.md:9:" in p:
            print("self-test: false alarm: " + p)
            failed += 1
    if failed:
        print("self-test: the checker reported:\n  " + "\n  ".join(problems))
        return 1
    print("self-test: all %d kinds of broken example were reported with their FILE:LINE" % len(expected))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", help="the repository root")
    ap.add_argument("--mmirage", required=True, help="the built mmirage binary")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if not os.access(a.mmirage, os.X_OK):
        print("check_docs.py: %s is not an executable (build the mmirage target first)" % a.mmirage)
        return 1
    if a.self_test:
        return self_test(a.mmirage)
    if not a.root:
        ap.error("--root is required")
    problems, counts = check_tree(os.path.abspath(a.root), a.mmirage)
    for p in problems:
        print(p)
    if problems:
        print("%d problem(s) in the documentation's examples" % len(problems))
        return 1
    print("docs OK: %d files, %d YAML blocks validated or parsed, %d shell blocks checked"
          % (counts["files"], counts["yaml"], counts["shell"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
