"""A fake OpenAI-images server on 127.0.0.1 for image_gen tests: deterministic PNGs, scripted failures.

    python3 fake_images_server.py --port-file F --log L [--port P] [--mode M]

GET /models, /v1/models: a model list; GET /health: {"status": "ok"}.
POST /v1/images/generations: {"data": [{"b64_json": <PNG>}]} — an RGB PNG of the requested size (at most
64x64, to stay fast) whose colour is derived from SHA-256(prompt, seed), so the same request gives the same bytes.
Every POST is appended to the log as one JSON line {"path", "auth", "inflight" (POSTs being answered, this one
included), "body"}.
Modes: ok | fail429:N / fail500:N (the first N POSTs fail with that status) | failprompt:S (HTTP 500 for prompts
containing S, always) | hang (POSTs never answer) | slow:SECONDS (each POST takes that long) | badb64 (invalid base64) | notjson (a non-JSON 200).
"""
import argparse, base64, hashlib, http.server, json, os, struct, threading, time, zlib

ap = argparse.ArgumentParser()
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--mode", default="ok")
args = ap.parse_args()
lock = threading.Lock()
posts = [0]
active = [0]  # POSTs being answered now


def png(width, height, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path in ("/models", "/v1/models"):
            return self.reply(200, json.dumps({"object": "list", "data": [{"id": "fake-diffusion"}]}))
        if self.path == "/health":
            return self.reply(200, json.dumps({"status": "ok"}))
        self.reply(404, json.dumps({"error": "not found"}))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            posts[0] += 1
            active[0] += 1
            n = posts[0]
            with open(args.log, "a") as f:
                f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization", ""),
                                    "inflight": active[0], "body": json.loads(body or b"{}")}) + "\n")
        try:
            self.answer(body, n)
        finally:
            with lock:
                active[0] -= 1

    def answer(self, body, n):
        if self.path != "/v1/images/generations":
            return self.reply(404, json.dumps({"error": "not found"}))
        req = json.loads(body)
        mode = args.mode
        if mode == "hang":
            time.sleep(3600)
        if mode.startswith("slow:"):
            time.sleep(float(mode.split(":")[1]))
        if mode.startswith("fail429:") and n <= int(mode.split(":")[1]):
            return self.reply(429, json.dumps({"error": "slow down"}))
        if mode.startswith("fail500:") and n <= int(mode.split(":")[1]):
            return self.reply(500, json.dumps({"error": "boom"}))
        if mode.startswith("failprompt:") and mode.split(":", 1)[1] in req.get("prompt", ""):
            return self.reply(500, json.dumps({"error": "cannot draw that"}))
        if mode == "notjson":
            return self.reply(200, "<html>oops</html>", "text/html")
        w, h = 32, 32
        if isinstance(req.get("size"), str) and "x" in req["size"]:
            w, h = (min(64, int(x)) for x in req["size"].split("x"))
        digest = hashlib.sha256(json.dumps([req.get("prompt"), req.get("seed")]).encode()).digest()
        b64 = base64.b64encode(png(w, h, digest[:3])).decode()
        if mode == "badb64":
            b64 = "!!!" + b64
        self.reply(200, json.dumps({"created": 0, "data": [{"b64_json": b64}]}))


srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), H)
srv.daemon_threads = True
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
