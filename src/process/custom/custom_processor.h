// The `custom` processor: a user function over every row, run by a pool of `max_workers` persistent worker
// processes speaking JSON lines (docs/custom_worker_protocol.md; the default worker is
// share/mmirage/custom_worker.py). Rows go to whichever worker is free; results come back through `done`.
// Errors per row: the function raised → fallback_value plus a warning (counts towards max_errors); timeout →
// that worker is replaced, fallback_value plus a warning (counts towards max_timeouts); a non-JSON result → a row
// error. A threshold reached, or a worker that dies or breaks the protocol, fails that row and every later one
// (the shard fails). A script that cannot be loaded fails Start with the interpreter's message; it never hangs.
// Thread-safety: as OutputProcessor. Ownership: owns its worker processes and threads; Shutdown (or the
// destructor) closes them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "process/output_processor.h"

namespace mmirage::process::custom {

struct CustomStartOptions {
  config::VarLookup vars;             // for MMIRAGE_PYTHON; default: the process environment
  std::string worker_program;         // custom_worker.py; empty: FindCustomWorkerProgram()
  double boot_timeout_seconds = 300;  // a worker that has not answered its handshake by then fails the start
};

// The shipped worker program: <dir of this binary>/share/mmirage/custom_worker.py or
// <dir of this binary>/../share/mmirage/custom_worker.py (build tree and install prefix). kNotFound otherwise.
Result<std::string> FindCustomWorkerProgram();

// The argv of one worker: `command` verbatim, else {python, worker_program, --script, <absolute script>,
// --function, <name>}. Errors: the script does not exist (MMIRAGE's boot message), no worker program.
Result<std::vector<std::string>> CustomWorkerCommand(const config::CustomProcessor& c,
                                                     const CustomStartOptions& options);

// Starts the pool and waits for every worker's handshake. Errors are located at the processor (`p.loc`).
// REQUIRES: p.type == "custom".
Result<std::unique_ptr<OutputProcessor>> StartCustomProcessor(const config::Processor& p,
                                                              const CustomStartOptions& options,
                                                              std::vector<std::string>* warnings);

}  // namespace mmirage::process::custom
