// The run's cost budget as a row gate (contract: cost_budget.h).

#include "pipeline/cost_budget.h"

#include "util/log.h"

namespace mmirage::pipeline {
namespace {

constexpr char kStopPrefix[] = "max_cost_usd (";

// Holds the process's entries in the shared file; zeroes its reserve when the gate goes.
class SharedCostGate {
 public:
  SharedCostGate(double budget, std::function<double()> spent, const StreamTotals* totals,
                 std::shared_ptr<SharedCounters> shared, std::string self)
      : budget_(budget),
        spent_(std::move(spent)),
        totals_(totals),
        shared_(std::move(shared)),
        spent_key_("spent." + self),
        reserved_key_("reserved." + self) {}
  SharedCostGate(const SharedCostGate&) = delete;
  SharedCostGate& operator=(const SharedCostGate&) = delete;
  ~SharedCostGate() {
    if (shared_) Publish(nullptr, 0);
  }

  RowGate Decide() {
    CostGateInput in;
    in.budget = budget_;
    in.spent = spent_();
    in.in_flight = totals_->in_flight;
    in.done = totals_->generations - in.in_flight - totals_->cached_generations;
    if (!shared_) {
      double reserve = 0;
      return DecideCostGate(in, &reserve);
    }
    RowGate gate = RowGate::kStart;
    Publish(&in, 0, &gate);
    return gate;
  }

 private:
  // Under the file's lock: reads the others' entries, decides (when `in` is set) and writes this process's.
  void Publish(CostGateInput* in, double reserve, RowGate* gate = nullptr) {
    double spent = in != nullptr ? in->spent : spent_();
    Status s = shared_->Update([&](SharedCounters::Map* m) {
      if (in != nullptr) {
        in->others = 0;
        for (const auto& [k, v] : *m)
          if (k != spent_key_ && k != reserved_key_) in->others += v;
        *gate = DecideCostGate(*in, &reserve);
      }
      (*m)[spent_key_] = spent;
      (*m)[reserved_key_] = reserve;
    });
    if (s.ok()) return;
    LOG_WARN("the run's shared cost budget is unusable (" << s.message() << "); this shard counts its own cost only");
    shared_.reset();
    if (in != nullptr) *gate = DecideCostGate(*in, &reserve);
  }

  double budget_;
  std::function<double()> spent_;
  const StreamTotals* totals_;
  std::shared_ptr<SharedCounters> shared_;
  std::string spent_key_, reserved_key_;
};

}  // namespace

bool IsCostBudgetStop(const std::string& error) {
  size_t at = error.find(kStopPrefix);
  return at != std::string::npos && error.find(") reached: $", at) != std::string::npos;
}

double SharedCostSpent(const SharedCounters::Map& m) {
  double total = 0;
  for (const auto& [k, v] : m)
    if (k.rfind("spent.", 0) == 0) total += v;
  return total;
}

RowGate DecideCostGate(const CostGateInput& in, double* reserve) {
  *reserve = 0;
  const double used = in.others + in.spent;
  if (in.done <= 0) {
    if (in.in_flight > 0) return RowGate::kWait;
    return used < in.budget ? RowGate::kStart : RowGate::kStop;
  }
  const double per_generation = in.spent / static_cast<double>(in.done);
  *reserve = per_generation * static_cast<double>(in.in_flight);
  if (used + per_generation * static_cast<double>(in.in_flight + 1) <= in.budget) {
    *reserve += per_generation;
    return RowGate::kStart;
  }
  return in.in_flight > 0 ? RowGate::kWait : RowGate::kStop;  // what is in flight may cost less than feared
}

std::function<RowGate()> MakeCostGate(double budget, std::function<double()> spent, const StreamTotals* totals,
                                      std::shared_ptr<SharedCounters> shared, std::string self) {
  auto gate = std::make_shared<SharedCostGate>(budget, std::move(spent), totals, std::move(shared), std::move(self));
  return [gate] { return gate->Decide(); };
}

}  // namespace mmirage::pipeline
