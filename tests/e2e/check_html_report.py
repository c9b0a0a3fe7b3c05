#!/usr/bin/env python3
"""Checks an `mmirage stats --html` report (used by tests/e2e/stats_html_test.cc and scripts/report_example.sh).

  check_html_report.py REPORT.html STATS.json [--png OUT.png] [--chromium BIN]

* the page parses as HTML with balanced tags (html.parser), and every <svg> is well-formed XML (xml.etree);
* it is self-contained: no <script>, no src=/href= attributes, no @import or url(...);
* every key of STATS.json's "aggregate" has its cell <td class="val" data-key="KEY"> with the same value
  (numbers compared as numbers, null shown as an em dash);
* the report's sections are all there;
* with --png: headless Chromium renders it to a PNG without console errors. The console check is proven live first:
  a probe page that logs an error must be caught, else the check itself fails.
Exit 0 when all hold; otherwise the failures, one per line, and exit 1.
"""
import argparse
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
SECTIONS = ["advice", "timeline", "throughput", "utilisation", "per-shard", "skew", "metrics"]


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.cells, self.ids = [], [], {}, set()
        self._cell_key, self._cell_text = None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for k in ("src", "href"):
            if k in a:
                self.errors.append(f"external reference: <{tag} {k}={a[k]!r}>")
        if tag == "script":
            self.errors.append("a <script> element")
        if tag == "td" and a.get("class") == "val":
            self._cell_key, self._cell_text = a.get("data-key"), []
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if k in a:
                self.errors.append(f"external reference: <{tag} {k}={a[k]!r}>")

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"line {self.getpos()[0]}: </{tag}> does not close "
                               f"{'<' + self.stack[-1][0] + '>' if self.stack else 'anything'}")
            return
        self.stack.pop()
        if tag == "td" and self._cell_key is not None:
            self.cells[self._cell_key] = "".join(self._cell_text)
            self._cell_key = None

    def handle_data(self, data):
        if self._cell_key is not None:
            self._cell_text.append(data)


def same_value(expected, shown):
    if expected is None:
        return shown == "\u2014"
    if isinstance(expected, bool) or isinstance(expected, str):
        return shown == str(expected)
    try:
        return float(shown) == float(expected)
    except ValueError:
        return False


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def console_messages(chromium, url, png=None, size="1100,3000"):
    """Loads url in headless Chromium; returns (exit code, console/resource error lines)."""
    with tempfile.TemporaryDirectory() as prof:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--user-data-dir=" + prof, "--enable-logging=stderr", "--v=0", "--window-size=" + size]
        cmd += ["--screenshot=" + png] if png else ["--dump-dom"]
        p = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=120)
    bad = [l for l in p.stderr.splitlines()
           if "CONSOLE" in l or "Uncaught" in l or "Failed to load resource" in l or "Refused to" in l]
    return p.returncode, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("stats")
    ap.add_argument("--png")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = ap.parse_args()
    errors = []
    text = open(args.report, encoding="utf-8").read()
    stats = json.load(open(args.stats, encoding="utf-8"))

    c = Checker()
    c.feed(text)
    c.close()
    errors += c.errors
    errors += [f"<{t}> opened at line {pos[0]} is never closed" for t, pos in c.stack]
    if not text.startswith("<!DOCTYPE html>"):
        errors.append("no <!DOCTYPE html>")
    for pat, what in ((r"@import", "@import"), (r"url\(", "url(...)"), (r"<link\b", "<link>")):
        if re.search(pat, text):
            errors.append(f"external resource: {what}")
    svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
    if len(svgs) < 3:
        errors.append(f"only {len(svgs)} <svg> charts")
    for i, s in enumerate(svgs):
        try:
            ET.fromstring(s)
        except ET.ParseError as e:
            errors.append(f"svg #{i} is not well-formed XML: {e}")
    for sec in SECTIONS:
        if sec not in c.ids:
            errors.append(f"section #{sec} missing")
    agg = stats.get("aggregate", {})
    if not agg:
        errors.append("STATS.json has no aggregate")
    for k, v in agg.items():
        if k not in c.cells:
            errors.append(f"aggregate {k} has no cell")
        elif not same_value(v, c.cells[k]):
            errors.append(f"aggregate {k}: report shows {c.cells[k]!r}, stats say {v!r}")

    if args.png:
        if not args.chromium:
            errors.append("chromium is not installed (scripts/test.sh installs Debian's chromium)")
        else:
            with tempfile.TemporaryDirectory() as d:
                probe = os.path.join(d, "probe.html")
                with open(probe, "w") as f:
                    f.write("<!DOCTYPE html><html><body><script>console.error('probe-error')</script></body></html>")
                _, caught = console_messages(args.chromium, "file://" + probe)
                if not any("probe-error" in l for l in caught):
                    errors.append("the console check is blind: a page logging an error was not caught")
            rc, bad = console_messages(args.chromium, "file://" + os.path.abspath(args.report), png=args.png)
            if rc != 0:
                errors.append(f"chromium exited with {rc}")
            errors += ["console: " + l for l in bad]
            dims = png_size(args.png) if os.path.exists(args.png) else None
            if dims is None:
                errors.append("no PNG written")
            elif os.path.getsize(args.png) < 20000:
                errors.append(f"the PNG is suspiciously small ({os.path.getsize(args.png)} bytes): blank page?")

    for e in errors:
        print(e)
    if not errors:
        print(f"ok: {len(svgs)} svg charts, {len(c.cells)} aggregate cells" + (f", {args.png}" if args.png else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
