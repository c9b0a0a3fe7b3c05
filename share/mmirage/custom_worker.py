"""mmirage custom worker: runs one user function over rows sent as JSON lines.

Started by mmirage's `custom` processor, one process per pool worker:

    python3 custom_worker.py --script PATH --function NAME

Protocol (docs/custom_worker_protocol.md): the first line written is the handshake, {"ready": true} or
{"ready": false, "error": "..."} (then the process exits with status 1). Then, for every request line
{"id": N, "row": {...}} read from stdin, exactly one reply line:
    {"id": N, "ok": true, "value": <JSON value>}
    {"id": N, "ok": false, "kind": "exception", "error": "ValueError: ...", "traceback": "..."}
    {"id": N, "ok": false, "kind": "result", "error": "the function returned a set, which is not a JSON value"}
EOF on stdin ends the worker (status 0).

The user's code cannot disturb the protocol: its stdout (print, C extensions) goes to stderr, and its stdin
reads /dev/null.
"""

import importlib.util
import json
import math
import os
import sys
import traceback
import uuid


def _open_protocol_streams():
    """Duplicates stdin/stdout for the protocol and points fds 0/1 away from it."""
    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8", newline="\n")
    proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, "r")
    sys.stdout = sys.stderr
    return proto_in, proto_out


def _one_line(text):
    return " ".join(str(text).split())


def _exception_text(exc):
    """'Type: message', with the file and line for syntax errors."""
    name = type(exc).__name__
    if isinstance(exc, SyntaxError):
        where = f" ({exc.filename}, line {exc.lineno})" if exc.lineno else ""
        return _one_line(f"{name}: {exc.msg}{where}")
    msg = str(exc)
    return _one_line(f"{name}: {msg}" if msg else name)


def _load(script_path, function_name):
    """Loads the script as the original MMIRAGE does; returns the function or raises RuntimeError(message)."""
    abs_path = os.path.abspath(script_path)
    if not os.path.exists(abs_path):
        raise RuntimeError(f"Custom script not found at: {abs_path}")
    module_name = f"mmirage_custom_worker_{uuid.uuid4().hex}"
    try:
        spec = importlib.util.spec_from_file_location(module_name, abs_path)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"Could not load module spec from {abs_path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        script_dir = os.path.dirname(abs_path)
        if script_dir not in sys.path:
            sys.path.insert(0, script_dir)
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - any failure while importing is a load error
        raise RuntimeError(f"Failed to load or execute custom module from {abs_path}: {_exception_text(e)}") from e
    if not hasattr(module, function_name):
        raise RuntimeError(f"Function '{function_name}' not found in script '{abs_path}'")
    func = getattr(module, function_name)
    if not callable(func):
        raise RuntimeError(f"'{function_name}' in '{abs_path}' is not callable")
    return func


def _check_json(value):
    """Raises TypeError naming the first value that is not plain JSON data (dict keys must be strings)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, (bool, int, str)):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                raise TypeError(f"a float {v!r}, which JSON cannot hold")
            continue
        if isinstance(v, (list, tuple)):
            stack.extend(v)
            continue
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"a dict key of type {type(k).__name__} ({k!r}); keys must be str")
                stack.append(x)
            continue
        raise TypeError(f"a {type(v).__name__}, which is not a JSON value")


def main(argv):
    script = function = None
    i = 1
    while i < len(argv):
        if argv[i] == "--script" and i + 1 < len(argv):
            script = argv[i + 1]
            i += 2
        elif argv[i] == "--function" and i + 1 < len(argv):
            function = argv[i + 1]
            i += 2
        else:
            i += 1
    proto_in, proto_out = _open_protocol_streams()

    def send(obj):
        proto_out.write(json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n")
        proto_out.flush()

    if not script or not function:
        send({"ready": False, "error": "usage: custom_worker.py --script PATH --function NAME"})
        return 1
    try:
        func = _load(script, function)
    except RuntimeError as e:
        send({"ready": False, "error": _one_line(e)})
        return 1
    send({"ready": True})
    dumps = json.dumps
    for line in proto_in:
        if not line.strip():
            continue
        req = json.loads(line)
        rid = req.get("id")
        try:
            value = func(req["row"])
        except BaseException as e:  # noqa: BLE001 - the user's exception is reported, the worker lives on
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            send({"id": rid, "ok": False, "kind": "exception", "error": _exception_text(e),
                  "traceback": traceback.format_exc(limit=20)})
            continue
        try:
            out = dumps({"id": rid, "ok": True, "value": value}, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            try:
                _check_json(value)
                why = "a value that is not JSON"
            except TypeError as te:
                why = str(te)
            send({"id": rid, "ok": False, "kind": "result",
                  "error": f"the function returned {why}: results must be JSON values"})
            continue
        proto_out.write(out + "\n")
        proto_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
