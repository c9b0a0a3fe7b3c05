"""A stand-in for the sglang package in tests: importable, and `python -m sglang.launch_server` serves the
synthetic model with llama-server (see launch_server.py)."""
