// execution_params.max_cost_usd as the row gate of the streaming scheduler (StreamOptions::may_start_row).
//
// The budget is the run's: a process counts its own cost so far (`spent`) and, when it shares a budget file with
// the other shards running at once on this machine (util/shared_counters.h), what they spent and reserved. A row
// starts while the run's cost so far plus, for every generation in flight and the new row, the mean cost of a
// finished generation of this process stays within the budget; each process publishes its spent and its reserve
// (that projection) under its own key at every decision, and its reserve goes to 0 when its gate is destroyed.
// A process killed before that leaves its last reserve counted: the run then stops a little early, never late.
// Thread-safety: a gate is called from one thread (the scheduler's). Errors with the shared file: logged once; the
// process then counts its own cost only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pipeline/stream_scheduler.h"
#include "util/shared_counters.h"

namespace mmirage::pipeline {

struct CostGateInput {
  double budget = 0;      // USD for the whole run
  double others = 0;      // spent + reserved by the other processes that share the budget
  double spent = 0;       // this process's cost so far
  int64_t done = 0;       // this process's finished (priced) generations
  int64_t in_flight = 0;  // this process's generations in flight
};

// Whether a shard's recorded error is a stop at max_cost_usd ("max_cost_usd (B) reached: $S spent after N rows;
// run again to continue (resumable)"): a rerun continues it.
bool IsCostBudgetStop(const std::string& error);
// The run's total cost so far in the shared budget file (the sum of every process's spent entries).
double SharedCostSpent(const SharedCounters::Map& m);

// The decision and, in *reserve, what this process's generations in flight are projected to cost (the new row's
// included when it starts). Until a generation has finished (no mean yet) rows start one at a time. Pure.
RowGate DecideCostGate(const CostGateInput& in, double* reserve);

// A gate over `budget` USD: `spent()` is this process's cost so far, `totals` its counters (borrowed; outlive the
// gate); `shared` (may be null) the run's budget file, where this process writes "spent.<self>" and
// "reserved.<self>" and reads the others' entries.
std::function<RowGate()> MakeCostGate(double budget, std::function<double()> spent, const StreamTotals* totals,
                                      std::shared_ptr<SharedCounters> shared, std::string self);

}  // namespace mmirage::pipeline
