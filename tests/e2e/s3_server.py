#!/usr/bin/env python3
"""A throwaway S3-compatible server for the object-storage tests: moto in server mode on 127.0.0.1.

  s3_server.py serve PORT_FILE [log]      pick a free port, write it to PORT_FILE once the server answers, serve
                                          until killed; with "log", one line per request on stderr
  s3_server.py put ENDPOINT BUCKET KEY FILE    create BUCKET if needed and upload FILE as KEY
  s3_server.py wait ENDPOINT BUCKET KEY SECONDS READY_FILE MIN_ROWS  create READY_FILE once connected, then exit 0
                                          as soon as the JSON object KEY has rows_done >= MIN_ROWS (or, with
                                          MIN_ROWS "exists", as soon as KEY exists), 1 after SECONDS
  s3_server.py get ENDPOINT BUCKET KEY         print the object KEY
  s3_server.py list ENDPOINT BUCKET PREFIX     print the keys under PREFIX, one a line
"""
import json
import os
import socket
import sys
import threading
import time

import boto3


def client(endpoint):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                        aws_secret_access_key="testing", region_name="us-east-1")


def serve(port_file, log=""):
    from moto.server import ThreadedMotoServer
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=log == "log")
    server.start()
    s3 = client("http://127.0.0.1:%d" % port)
    for _ in range(500):
        try:
            s3.list_buckets()
            break
        except Exception:  # not listening yet
            time.sleep(0.02)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(port_file + ".tmp", port_file)
    threading.Event().wait()


def put(endpoint, bucket, key, path):
    s3 = client(endpoint)
    if bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=bucket)
    s3.upload_file(path, bucket, key)


def wait(endpoint, bucket, key, seconds, ready_file, min_rows):
    s3 = client(endpoint)
    s3.list_buckets()
    open(ready_file, "w").close()
    deadline = time.monotonic() + float(seconds)
    while time.monotonic() < deadline:
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            if min_rows == "exists" or json.loads(body).get("rows_done", 0) >= int(min_rows):
                return 0
        except Exception:  # not there yet
            pass
        time.sleep(0.01)
    return 1


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve(*args)
    elif cmd == "put":
        put(*args)
    elif cmd == "list":
        pages = client(args[0]).get_paginator("list_objects_v2").paginate(Bucket=args[1], Prefix=args[2])
        sys.stdout.write("".join(o["Key"] + "\n" for page in pages for o in page.get("Contents", [])))
    elif cmd == "get":
        sys.stdout.write(client(args[0]).get_object(Bucket=args[1], Key=args[2])["Body"].read().decode())
    else:
        sys.exit(wait(*args))
