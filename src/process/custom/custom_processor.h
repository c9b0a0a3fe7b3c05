// The `custom` processor: a user function over every row, run by a pool of `max_workers` persistent worker
// processes (spec processors.md §3, with the faults of its weakness 13 fixed).
//
// Each worker runs share/mmirage/custom_worker.py (shipped next to the binary) under python3 — or
// `python_executable` / $MMIRAGE_PYTHON — or, with `command: [...]`, any program that speaks the same JSON-lines
// protocol (docs/custom_worker_protocol.md). A worker loads the script once, then answers one row (the row's
// whole variable environment as a JSON object) per line. Rows go to whichever worker is free; results come back
// through `done` and the scheduler puts them in row order.
//
// Outcomes per row: a JSON result → the value; the function raised → fallback_value plus a warning, counted
// towards max_errors; no answer within timeout_ms → that worker is killed and replaced, fallback_value plus a
// warning, counted towards max_timeouts; a result that is not a JSON value → a row error. Reaching a threshold,
// or a worker that dies or breaks the protocol, trips the circuit breaker: that row and every later one get a
// fatal error naming the real reason, and the shard fails. A script that cannot be loaded (missing file,
// syntax error, missing or non-callable function) fails Start with the interpreter's message; it never hangs.
//
// Thread-safety: as OutputProcessor. Ownership: the processor owns its worker processes and threads; Shutdown
// (or the destructor) closes them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "process/output_processor.h"

namespace mmirage::process::custom {

struct CustomStartOptions {
  config::VarLookup vars;         // for MMIRAGE_PYTHON; default: the process environment
  std::string worker_program;     // custom_worker.py; empty: FindCustomWorkerProgram()
  double boot_timeout_seconds = 300;  // a worker that has not answered its handshake by then fails the start
};

// The shipped worker program: <dir of this binary>/share/mmirage/custom_worker.py or
// <dir of this binary>/../share/mmirage/custom_worker.py (build tree and install prefix). kNotFound otherwise.
Result<std::string> FindCustomWorkerProgram();

// The argv of one worker: `command` verbatim, else {python, worker_program, --script, <absolute script>,
// --function, <name>}. Errors: the script does not exist (the original's boot message), no worker program.
Result<std::vector<std::string>> CustomWorkerCommand(const config::CustomProcessor& c,
                                                     const CustomStartOptions& options);

// Starts the pool and waits for every worker's handshake. Errors are located at the processor (`p.loc`).
// REQUIRES: p.type == "custom".
Result<std::unique_ptr<OutputProcessor>> StartCustomProcessor(const config::Processor& p,
                                                              const CustomStartOptions& options,
                                                              std::vector<std::string>* warnings);

}  // namespace mmirage::process::custom
