"""Shared by the fake sglang and vllm launchers: log the command line, then exec llama-server."""
import os


def serve(logged_argv, args):
    with open(os.environ["FAKE_SERVER_ARGV_LOG"], "a") as f:
        f.write(" ".join(logged_argv) + "\n")
    port = args[args.index("--port") + 1]
    host = args[args.index("--host") + 1] if "--host" in args else "127.0.0.1"
    server = os.environ["FAKE_LLAMA_SERVER"]
    os.execv(server, [server, "-m", os.environ["FAKE_MODEL"], "--host", host, "--port", port, "-np", "2", "-c",
                      "1024", "--threads", "1"])
