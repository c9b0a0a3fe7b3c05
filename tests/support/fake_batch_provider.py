#!/usr/bin/env python3
"""A fake provider batch API on 127.0.0.1 for the batch_api tests (OpenAI Batch and Anthropic Message Batches).

OpenAI:    POST /v1/files (multipart), POST /v1/batches, GET /v1/batches[?after=], GET /v1/batches/{id},
           GET /v1/files/{id}/content
Anthropic: POST /v1/messages/batches, GET /v1/messages/batches/{id}, GET /v1/messages/batches/{id}/results
Batches complete after --polls status reads. Requests whose custom id hashes to 0 mod --fail-every fail at the
provider; --bad-json-every makes a JSON answer unparsable; --fault-rate answers that share of calls with 500 or
429 (Retry-After: 0) first. Every batch creation is logged to --log as one JSON line, so tests can check that no
request was submitted twice. Only the documented fields used by clients are implemented.
"""
import argparse
import json
import random
import re
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--polls", type=int, default=2)
ap.add_argument("--fail-every", type=int, default=0)
ap.add_argument("--bad-json-every", type=int, default=0)
ap.add_argument("--fault-rate", type=float, default=0.0)
ap.add_argument("--api-key", default="test-key")
ap.add_argument("--create-delay", type=float, default=0.0)
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()

lock = threading.Lock()
rng = random.Random(args.seed)
files = {}     # id -> bytes
batches = {}   # id -> dict
counter = [0]


def new_id(prefix):
    counter[0] += 1
    return f"{prefix}_{counter[0]:06d}"


def log(event):
    with open(args.log, "a") as f:
        f.write(json.dumps(event) + "\n")


def h(custom_id):
    return zlib.crc32(custom_id.encode())


def answer_text(custom_id, prompt, schema_fields):
    if schema_fields:
        if args.bad_json_every and h(custom_id) % args.bad_json_every == 1:
            return '{"question": "unterminated'
        return json.dumps({f: f"{f} about {prompt[:30]}" for f in schema_fields}, ensure_ascii=False)
    return f"Answer to: {prompt[:40]}"


def failing(custom_id):
    return args.fail_every and h(custom_id) % args.fail_every == 0


def openai_prompt(body):
    c = body["messages"][0]["content"]
    return c if isinstance(c, str) else c[0]["text"]


def openai_results(batch):
    out, err = [], []
    for line in files[batch["input_file_id"]].decode().split("\n"):
        if not line.strip():
            continue
        req = json.loads(line)
        cid, body = req["custom_id"], req["body"]
        if failing(cid):
            err.append({"id": "r", "custom_id": cid, "response": {"status_code": 400, "request_id": "x", "body": {
                "error": {"message": f"fake provider failure for {cid}", "type": "invalid_request_error"}}},
                "error": None})
            continue
        rf = body.get("response_format")
        fields = list(rf["json_schema"]["schema"]["properties"]) if rf else []
        text = answer_text(cid, openai_prompt(body), fields)
        out.append({"id": "r", "custom_id": cid, "response": {"status_code": 200, "request_id": "x", "body": {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10 + len(cid) % 7, "completion_tokens": 5}}}, "error": None})
    return out, err


def anthropic_results(batch):
    rows = []
    for req in batch["requests"]:
        cid, params = req["custom_id"], req["params"]
        if failing(cid):
            rows.append({"custom_id": cid, "result": {"type": "errored", "error": {"type": "error", "error": {
                "type": "invalid_request_error", "message": f"fake provider failure for {cid}"}}}})
            continue
        oc = params.get("output_config")
        fields = list(oc["format"]["schema"]["properties"]) if oc else []
        prompt = params["messages"][0]["content"][0]["text"]
        rows.append({"custom_id": cid, "result": {"type": "succeeded", "message": {
            "id": "msg", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": answer_text(cid, prompt, fields)}],
            "usage": {"input_tokens": 20 + len(cid) % 5, "output_tokens": 7}}}})
    return rows


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, obj=None, raw=None, headers=()):
        data = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if raw is None else "application/jsonl")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n) if n else b""

    def gate(self):
        key = self.headers.get("x-api-key") or (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if key != args.api_key:
            self.send(401, {"error": {"message": "Incorrect API key provided", "type": "authentication_error"}})
            return False
        with lock:
            fault = rng.random() < args.fault_rate
            kind = rng.choice([500, 429])
        if fault:
            log({"event": "fault", "code": kind, "path": self.path})
            self.send(kind, {"error": {"message": "injected fault"}}, headers=[("Retry-After", "0")] if kind == 429 else [])
            return False
        return True

    def do_GET(self):
        if self.path == "/health":
            return self.send(200, {"ok": True})
        if not self.gate():
            return
        p = self.path
        with lock:
            m = re.fullmatch(r"/v1/batches/([^/?]+)", p)
            if m:
                b = batches.get(m.group(1))
                if b is None:
                    return self.send(404, {"error": {"message": "no such batch"}})
                b["polls"] += 1
                if b["polls"] >= args.polls and b["status"] != "completed":
                    out, err = openai_results(b)
                    b["status"] = "completed"
                    if out:
                        fid = new_id("file")
                        files[fid] = "\n".join(json.dumps(x) for x in out).encode()
                        b["output_file_id"] = fid
                    if err:
                        fid = new_id("file")
                        files[fid] = ("\n".join(json.dumps(x) for x in err) + "\n").encode()
                        b["error_file_id"] = fid
                    b["request_counts"] = {"total": b["n"], "completed": len(out), "failed": len(err)}
                return self.send(200, {k: v for k, v in b.items() if k not in ("polls", "n")})
            if p.startswith("/v1/batches"):
                items = [{k: v for k, v in b.items() if k not in ("polls", "n")} for b in batches.values()
                         if "input_file_id" in b]
                items.reverse()
                return self.send(200, {"object": "list", "data": items, "has_more": False})
            m = re.fullmatch(r"/v1/files/([^/]+)/content", p)
            if m:
                if m.group(1) not in files:
                    return self.send(404, {"error": {"message": "no such file"}})
                return self.send(200, raw=files[m.group(1)])
            m = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results)?", p)
            if m:
                b = batches.get(m.group(1))
                if b is None:
                    return self.send(404, {"error": {"type": "not_found_error", "message": "no such batch"}})
                if m.group(2):
                    if b["processing_status"] != "ended":
                        return self.send(400, {"error": {"message": "batch not ended"}})
                    return self.send(200, raw=("\n".join(json.dumps(x) for x in anthropic_results(b)) + "\n").encode())
                b["polls"] += 1
                if b["polls"] >= args.polls:
                    b["processing_status"] = "ended"
                    res = anthropic_results(b)
                    bad = sum(1 for r in res if r["result"]["type"] != "succeeded")
                    b["request_counts"] = {"processing": 0, "succeeded": len(res) - bad, "errored": bad,
                                           "canceled": 0, "expired": 0}
                    b["results_url"] = f"http://127.0.0.1:{args.port}/v1/messages/batches/{b['id']}/results"
                return self.send(200, {k: v for k, v in b.items() if k not in ("polls", "requests")})
        self.send(404, {"error": {"message": "unknown path " + p}})

    def do_POST(self):
        data = self.body()
        if not self.gate():
            return
        p = self.path
        if p == "/v1/files":
            ctype = self.headers.get("Content-Type", "")
            boundary = ctype.split("boundary=")[1].encode()
            content, purpose = None, None
            for part in data.split(b"--" + boundary):
                if b"\r\n\r\n" not in part:
                    continue
                head, _, payload = part.partition(b"\r\n\r\n")
                payload = payload[:-2] if payload.endswith(b"\r\n") else payload
                if b'name="file"' in head:
                    content = payload
                elif b'name="purpose"' in head:
                    purpose = payload.decode()
            if content is None or purpose != "batch":
                return self.send(400, {"error": {"message": "bad upload"}})
            with lock:
                fid = new_id("file")
                files[fid] = content
            return self.send(200, {"id": fid, "object": "file", "purpose": "batch", "bytes": len(content)})
        if args.create_delay:
            import time
            time.sleep(args.create_delay)
        req = json.loads(data or b"{}")
        with lock:
            if p == "/v1/batches":
                fid = req.get("input_file_id")
                if fid not in files:
                    return self.send(400, {"error": {"message": "no such file"}})
                ids = [json.loads(l)["custom_id"] for l in files[fid].decode().split("\n") if l.strip()]
                bid = new_id("batch")
                batches[bid] = {"id": bid, "object": "batch", "endpoint": req["endpoint"], "status": "validating",
                                "input_file_id": fid, "completion_window": req["completion_window"],
                                "metadata": req.get("metadata") or {}, "polls": 0, "n": len(ids),
                                "output_file_id": None, "error_file_id": None,
                                "request_counts": {"total": len(ids), "completed": 0, "failed": 0}}
                log({"event": "create", "provider": "openai", "batch_id": bid, "custom_ids": ids,
                     "metadata": req.get("metadata")})
                return self.send(200, {k: v for k, v in batches[bid].items() if k not in ("polls", "n")})
            if p == "/v1/messages/batches":
                reqs = req.get("requests") or []
                bid = new_id("msgbatch")
                batches[bid] = {"id": bid, "type": "message_batch", "processing_status": "in_progress",
                                "requests": reqs, "polls": 0, "results_url": None,
                                "request_counts": {"processing": len(reqs), "succeeded": 0, "errored": 0,
                                                   "canceled": 0, "expired": 0}}
                log({"event": "create", "provider": "anthropic", "batch_id": bid,
                     "custom_ids": [r["custom_id"] for r in reqs]})
                return self.send(200, {k: v for k, v in batches[bid].items() if k not in ("polls", "requests")})
        self.send(404, {"error": {"message": "unknown path " + p}})


ThreadingHTTPServer.allow_reuse_address = True
srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
srv.serve_forever()
