// Chart primitives of the run report (report_html.h): inline SVG strings, well-formed XML, 1000 units wide, text
// escaped. Time charts put seconds since t0 on x; values are binned so that a chart's size does not grow with
// the number of samples (≤ 200 points per shard and line, ≤ 120 bins per stacked chart).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stats/report_data.h"

namespace mmirage::report_svg {

std::string ShardColor(int64_t shard_id);              // one of 10 colours, by id
std::string OutcomeColor(const std::string& outcome);  // success | failed | interrupted | killed | running
std::string F(double x, int nd = 1);                   // "%.*f"
std::string C(double x);                               // a coordinate (1 decimal)
std::string Offset(double seconds);                    // "1h02m", "3m05s", "12s"
std::string Short(double x);                           // "1.2k", "3.4M", "12", "0.35"
std::vector<double> Ticks(double hi, int target = 5);  // 0, step, … ≥ hi, step 1/2/5 × 10^k
double TicksTop(double hi);
std::vector<double> TimeTicks(double span_seconds);  // 0 … span in round steps (1 s … 1 day)

// A chart area: x in seconds from t0, y in data units from 0 to ymax.
constexpr double kW = 1000, kLeft = 64, kRight = 16, kTop = 14, kBottom = 28;
struct Frame {
  double t0 = 0, span = 1, ymax = 1, height = 200;
  double X(double t) const { return kLeft + (t - t0) / span * (kW - kLeft - kRight); }
  double Y(double v) const { return kTop + (1 - v / ymax) * (height - kTop - kBottom); }
};
std::string Axes(const Frame& f, const std::string& y_unit);  // grid, tick labels, unit
std::string SvgOpen(double height, const std::string& aria_label);
std::string Title(const std::string& text);  // <title> (hover text)
// Marks on a shard's lane (top y, height lane) for its fleet replica events ("replica" timeline entries): a red
// triangle pointing down where a replica was taken out or given up, a green one pointing up where one came back
// or was restarted; each a <g class="replica" data-change="…"> with the replica's name as hover text.
std::string ReplicaMarks(const std::vector<TimelineEntry>& timeline, const Frame& f, double y, double lane);

// Per-shard rates over `nbins` equal time bins of [t0, t1], from the timelines' cumulative counters (each sample
// interval's rows and output tokens spread evenly over it; resumed rows excluded).
struct Binned {
  double t0 = 0, width = 1;
  std::vector<std::vector<double>> rows, tokens;  // [shard index][bin], per second
};
Binned BinThroughput(const RunReport& run, double t0, double t1, size_t nbins);

// Stacked areas of `series` (one per run.shards entry) with a hover strip per bin listing the largest shares.
std::string StackedChart(const RunReport& run, const Binned& b, const std::vector<std::vector<double>>& series,
                         const std::string& unit, const std::string& label);

// One line per shard of the samples' GPU (gpu = true) or CPU utilisation, averaged per bin; a hole longer than
// 3 sample periods breaks the line. The y axis reaches at least ymax_floor.
std::string LineChart(const RunReport& run, double t0, double t1, bool gpu, double ymax_floor, const std::string& unit,
                      const std::string& label);
// The same for any value of the samples (nullopt: no value in that sample).
using SampleValue = std::function<std::optional<double>(const TimelineEntry&)>;
std::string SeriesLineChart(const RunReport& run, double t0, double t1, const SampleValue& value, double ymax_floor,
                            const std::string& unit, const std::string& label);

}  // namespace mmirage::report_svg
