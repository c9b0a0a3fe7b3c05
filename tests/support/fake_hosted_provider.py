#!/usr/bin/env python3
"""A fake hosted LLM API on 127.0.0.1 that enforces rate limits the way OpenAI and Anthropic document them, for the
admission tests and bench/ratelimit_bench.py.

OpenAI:    POST /v1/chat/completions  (x-ratelimit-{limit,remaining,reset}-{requests,tokens} on every answer)
Anthropic: POST /v1/messages          (anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset})
Both:      GET /health, GET /stats (counts as JSON: ok, 429, 529, first_s / last_s of the accepted requests)

Limits: --rpm requests and --tpm tokens per minute, enforced over --quantum seconds as OpenAI documents ("60,000
RPM may be enforced as 1,000 requests per second"): a token bucket per limit holding quantum × limit / 60,
refilled continuously. A request is charged 1 request and its estimated tokens (prompt characters / 4 + max
tokens) at arrival; the unused part of the estimate is given back when it is answered (usage corrects it). Over a
limit: 429 with retry-after (whole seconds, as the APIs send) and, for Anthropic, a rate_limit_error body.
--overload-rate answers that share of Anthropic requests with 529 overloaded_error. --no-headers leaves the
rate-limit headers out. Each answer takes --latency seconds.
"""
import argparse
import json
import math
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--rpm", type=float, default=600)
ap.add_argument("--tpm", type=float, default=200000)
ap.add_argument("--quantum", type=float, default=1.0)
ap.add_argument("--latency", type=float, default=0.0)
ap.add_argument("--overload-rate", type=float, default=0.0)
ap.add_argument("--no-headers", action="store_true")
ap.add_argument("--api-key", default="")
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()

lock = threading.Lock()
rng = random.Random(args.seed)
stats = {"ok": 0, "429": 0, "529": 0, "other": 0, "first_s": None, "last_s": None, "tokens": 0}


class Bucket:
    def __init__(self, per_minute):
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * args.quantum)
        self.level = self.capacity
        self.last = time.monotonic()

    def refill(self, now):
        self.level = min(self.capacity, self.level + (now - self.last) * self.rate)
        self.last = now

    def wait_for(self, cost):
        return max(0.0, (min(cost, self.capacity) - self.level) / self.rate)


requests_bucket = Bucket(args.rpm)
tokens_bucket = Bucket(args.tpm)


def text_chars(content):
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text", "")) for p in content if isinstance(p, dict))
    return 0


def estimate(body, anthropic):
    chars = sum(text_chars(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict))
    if anthropic:
        chars += text_chars(body.get("system", ""))
        max_tokens = body.get("max_tokens", 0)
    else:
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens", 0)) or 0
    images = sum(1 for m in body.get("messages", []) if isinstance(m, dict) and isinstance(m.get("content"), list)
                 for p in m["content"] if isinstance(p, dict) and p.get("type") in ("image_url", "image"))
    return math.ceil(chars / 4) + 85 * images, int(max_tokens)


def limit_headers(anthropic):
    if args.no_headers:
        return []
    rem_r, rem_t = int(max(0, requests_bucket.level)), int(max(0, tokens_bucket.level))
    reset_r = requests_bucket.wait_for(requests_bucket.capacity)
    reset_t = tokens_bucket.wait_for(tokens_bucket.capacity)
    if anthropic:
        at = lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + s))
        return [("anthropic-ratelimit-requests-limit", str(int(args.rpm))),
                ("anthropic-ratelimit-requests-remaining", str(rem_r)),
                ("anthropic-ratelimit-requests-reset", at(reset_r)),
                ("anthropic-ratelimit-tokens-limit", str(int(args.tpm))),
                ("anthropic-ratelimit-tokens-remaining", str(rem_t)),
                ("anthropic-ratelimit-tokens-reset", at(reset_t))]
    return [("x-ratelimit-limit-requests", str(int(args.rpm))),
            ("x-ratelimit-limit-tokens", str(int(args.tpm))),
            ("x-ratelimit-remaining-requests", str(rem_r)),
            ("x-ratelimit-remaining-tokens", str(rem_t)),
            ("x-ratelimit-reset-requests", f"{int(reset_r * 1000)}ms"),
            ("x-ratelimit-reset-tokens", f"{int(reset_t * 1000)}ms")]


def admit(prompt_tokens, max_tokens):
    """Charges the buckets; returns (None, headers) when admitted, else (retry_after_seconds, headers)."""
    cost = prompt_tokens + max_tokens
    with lock:
        now = time.monotonic()
        requests_bucket.refill(now)
        tokens_bucket.refill(now)
        wait = max(requests_bucket.wait_for(1), tokens_bucket.wait_for(cost))
        if wait > 0:
            stats["429"] += 1
            return max(1, math.ceil(wait)), None
        requests_bucket.level -= 1
        tokens_bucket.level -= cost
        if stats["first_s"] is None:
            stats["first_s"] = now
        return None, now


def settle(estimated, used, anthropic):
    with lock:
        tokens_bucket.level = min(tokens_bucket.capacity, tokens_bucket.level + estimated - used)
        stats["ok"] += 1
        stats["tokens"] += used
        stats["last_s"] = time.monotonic()
        return limit_headers(anthropic)


def fill(props, text):
    """A JSON answer for a schema's properties, each of its type."""
    typed = {"integer": 1, "number": 0.5, "boolean": True}
    out = {}
    for k, spec in props.items():
        t = spec.get("type") if isinstance(spec, dict) else None
        out[k] = typed.get(t, f"{k} of {text[:20]}")
    return out


def answer_text(body, anthropic):
    msgs = body.get("messages", [])
    last = msgs[-1].get("content", "") if msgs else ""
    if isinstance(last, list):
        last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
    return f"Answer to: {last[:40]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs

    def log_message(self, *a):
        pass

    def send(self, code, obj, headers=()):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            return self.send(200, {"ok": True})
        if self.path == "/stats":
            with lock:
                s = dict(stats)
            return self.send(200, s)
        self.send(404, {"error": {"message": "no route " + self.path}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        anthropic = self.path == "/v1/messages"
        if self.path not in ("/v1/chat/completions", "/v1/messages"):
            return self.send(404, {"error": {"message": "no route " + self.path}})
        if args.api_key:
            got = self.headers.get("x-api-key") if anthropic else self.headers.get("Authorization", "")[7:]
            if got != args.api_key:
                with lock:
                    stats["other"] += 1
                return self.send(401, {"error": {"type": "authentication_error", "message": "bad key"}})
        try:
            body = json.loads(raw)
        except ValueError:
            with lock:
                stats["other"] += 1
            return self.send(400, {"error": {"type": "invalid_request_error", "message": "bad JSON"}})
        if anthropic and (self.headers.get("anthropic-version") is None or "max_tokens" not in body):
            with lock:
                stats["other"] += 1
            return self.send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                             "message": "anthropic-version and max_tokens needed"}})
        if anthropic and args.overload_rate > 0:
            with lock:
                overloaded = rng.random() < args.overload_rate
                if overloaded:
                    stats["529"] += 1
            if overloaded:
                return self.send(529, {"type": "error", "error": {"type": "overloaded_error",
                                                                 "message": "Overloaded"}})
        prompt_tokens, max_tokens = estimate(body, anthropic)
        retry_after, _ = admit(prompt_tokens, max_tokens)
        if retry_after is not None:
            with lock:
                hdrs = limit_headers(anthropic)
            hdrs.append(("retry-after", str(retry_after)))
            err = {"type": "rate_limit_error", "message": "rate limit exceeded"}
            return self.send(429, {"type": "error", "error": err} if anthropic else {"error": err}, hdrs)
        if args.latency > 0:
            time.sleep(args.latency)
        text = answer_text(body, anthropic)
        completion_tokens = min(max_tokens, max(1, len(text) // 4))
        hdrs = settle(prompt_tokens + max_tokens, prompt_tokens + completion_tokens, anthropic)
        usage_in, usage_out = prompt_tokens, completion_tokens
        if anthropic:
            tools = body.get("tools") or []
            if tools:
                props = tools[0].get("input_schema", {}).get("properties", {})
                content = [{"type": "tool_use", "id": "toolu_1", "name": tools[0].get("name", "out"),
                            "input": fill(props, text)}]
                stop = "tool_use"
            else:
                content = [{"type": "text", "text": text}]
                stop = "end_turn"
            return self.send(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                                   "content": content, "stop_reason": stop,
                                   "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}, hdrs)
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            props = fmt.get("json_schema", {}).get("schema", {}).get("properties", {})
            text = json.dumps(fill(props, text))
        return self.send(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": text}}],
                               "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out}}, hdrs)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


Server(("127.0.0.1", args.port), Handler).serve_forever()
