"""Fake `python -m sglang.launch_server`: appends its interpreter and arguments to $FAKE_SERVER_ARGV_LOG (one line,
space-separated), then execs $FAKE_LLAMA_SERVER on $FAKE_MODEL at the --host/--port it was given."""
import os
import sys

from sglang import _fake_server

if __name__ == "__main__":
    _fake_server.serve([sys.executable, "-m", "sglang.launch_server"] + sys.argv[1:], sys.argv[1:])
