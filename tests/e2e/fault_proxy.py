#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for the OpenAI engine tests (standard library only).

Listens on 127.0.0.1:<port> and forwards each request to http://127.0.0.1:<upstream>, except that a fraction of
POST requests (chosen by a seeded RNG) get a fault instead:
  500     answer 500 with a JSON error body
  429     answer 429 with `Retry-After: 1`
  stall   read the request, then say nothing for --stall-seconds (past the client's timeout), then close
  reset   close the connection at once with a TCP reset (SO_LINGER 0)
Keeps client connections alive (HTTP/1.1, Content-Length bodies). Writes one line per fault to --fault-log.
"""
import argparse
import asyncio
import random
import socket
import struct
import sys

FAULTS = ("500", "429", "stall", "reset")


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    body = await reader.readexactly(n) if n else b""
    return method, path, headers, body


async def forward(upstream, method, path, headers, body):
    r, w = await asyncio.open_connection("127.0.0.1", upstream)
    hdrs = "".join(f"{k}: {v}\r\n" for k, v in headers.items()
                   if k not in ("connection", "content-length", "host", "expect"))
    w.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{upstream}\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n{hdrs}\r\n".encode("latin-1") + body)
    await w.drain()
    data = await r.read()
    w.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n")[0].decode("latin-1")
    code = int(status_line.split(" ")[1])
    ctype = b"application/json"
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-type:"):
            ctype = line.split(b":", 1)[1].strip()
        if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
            rest = dechunk(rest)
    return code, ctype, rest


def dechunk(data):
    out, i = b"", 0
    while True:
        j = data.index(b"\r\n", i)
        n = int(data[i:j].split(b";")[0], 16)
        if n == 0:
            return out
        out += data[j + 2:j + 2 + n]
        i = j + 2 + n + 2


def respond(writer, code, body, ctype=b"application/json", extra=b""):
    reason = {200: b"OK", 429: b"Too Many Requests", 500: b"Internal Server Error"}.get(code, b"Status")
    writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: keep-alive\r\n%s\r\n"
                 % (code, reason, ctype, len(body), extra) + body)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--fault-rate", type=float, default=0.3)
    ap.add_argument("--stall-seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fault-log", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    log = open(args.fault_log, "a", buffering=1)

    async def handle(reader, writer):
        try:
            while True:
                try:
                    method, path, headers, body = await read_request(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                fault = rng.choice(FAULTS) if method == "POST" and rng.random() < args.fault_rate else None
                if fault:
                    log.write(fault + "\n")
                if fault == "500":
                    respond(writer, 500, b'{"error":{"message":"injected failure"}}')
                elif fault == "429":
                    respond(writer, 429, b'{"error":{"message":"injected rate limit"}}', extra=b"Retry-After: 1\r\n")
                elif fault == "stall":
                    await asyncio.sleep(args.stall_seconds)
                    writer.close()
                    return
                elif fault == "reset":
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                else:
                    code, ctype, data = await forward(args.upstream, method, path, headers, body)
                    respond(writer, code, data, ctype)
                await writer.drain()
        except Exception as e:  # a broken client connection ends this handler only
            print(f"fault_proxy: {type(e).__name__}: {e}", file=sys.stderr)
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.port, reuse_address=True)
    print(f"fault_proxy listening on 127.0.0.1:{args.port} -> {args.upstream}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
