// Sections: key figures; advice (advice.h); shard timeline (a lane per shard, attempts as bars with the model
// load shaded, failures/interruptions/kills marked, SLURM job ids); throughput over time (rows/s and output tok/s,
// stacked over shards, per-shard values in each bin's hover title); GPU and CPU utilisation over time (when
// sampled); per-shard tokens/s/GPU bars with the mean (output tok/s without GPUs, rows/s without a model); the skew
// check (coefficient of variation, slowest shard vs median, its rows' prompt/output lengths, correlations); every
// aggregate value with its unit and formula (cell `<td class="val" data-key="KEY">`, null as "—").

#include "stats/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "data/json.h"
#include "stats/aggregate.h"
#include "stats/report_svg.h"

namespace mmirage {
namespace {

using namespace report_svg;  // NOLINT: the chart primitives are this file's vocabulary

std::string ValueText(const Value* v) {
  if (v == nullptr || v->is_null()) return "\xE2\x80\x94";  // em dash
  if (v->is_string()) return v->as_string();
  return ToJson(*v);
}

// Run time range over all attempts.
bool TimeRange(const RunReport& run, double* t0, double* t1) {
  bool any = false;
  for (const auto& s : run.shards) {
    for (const auto& a : s.attempts) {
      if (!any) *t0 = a.start, *t1 = a.end, any = true;
      *t0 = std::min(*t0, a.start);
      *t1 = std::max(*t1, a.end);
    }
  }
  if (any && *t1 <= *t0) *t1 = *t0 + 1;
  return any;
}

// ---- sections ---------------------------------------------------------------------------------------------------

std::string KeyFigures(const RunReport& run) {
  struct K {
    const char* key;
    const char* label;
    const char* unit;
  };
  const K keys[] = {{"tokens_per_sec_per_gpu", "tokens/s/GPU", "tok/s/GPU"},
                    {"gpu_days_per_billion_tokens", "GPU-days per 1e9 tokens", "GPU-days"},
                    {"mean_gpu_util_pct", "mean GPU utilisation", "%"},
                    {"overall_throughput_rows_per_sec", "throughput", "rows/s"},
                    {"total_tokens_per_sec", "output tokens/s", "tok/s"},
                    {"wall_clock_runtime_seconds", "wall clock", "s"},
                    {"sum_shard_runtime_seconds", "sum of shard runtimes", "s"},
                    {"total_rows_processed", "rows", "rows"}};
  std::string s = "<div class=\"cards\">";
  for (const K& k : keys) {
    const Value* v = run.aggregate.is_object() ? run.aggregate.Find(k.key) : nullptr;
    bool null = v == nullptr || v->is_null();
    s += std::string("<div class=\"card") + (null ? " null" : "") + "\"><div class=\"big\">" +
         HtmlEscape(ValueText(v)) + (null ? "" : std::string(" <small>") + k.unit + "</small>") +
         "</div><div class=\"lab\">" + k.label + "</div></div>";
  }
  return s + "</div>";
}

std::string AdviceSection(const std::vector<Advice>& advice) {
  std::string s = "<section id=\"advice\"><h2>Advice</h2>";
  if (advice.empty()) return s + "<p class=\"ok\">No rule of the tuning table fired.</p></section>";
  s += "<ul class=\"advice\">";
  for (const Advice& a : advice) {
    s += "<li class=\"" + HtmlEscape(a.level) + "\" data-rule=\"" + HtmlEscape(a.rule) + "\"><span class=\"lvl\">" +
         HtmlEscape(a.level) + "</span> " + HtmlEscape(a.message) +
         "<div class=\"ev\">evidence: " + HtmlEscape(a.evidence) + "</div></li>";
  }
  return s + "</ul></section>";
}

std::string TimelineSection(const RunReport& run, double t0, double t1) {
  const double lane = 30, head = 8;
  double h = head + lane * static_cast<double>(run.shards.size()) + kBottom + 4;
  Frame f;
  f.t0 = t0;
  f.span = t1 - t0;
  f.height = h;
  std::string s =
      "<section id=\"timeline\"><h2>Shard timeline</h2><p class=\"note\">One lane per shard, one bar per "
      "attempt (lighter part: model load). Hover a bar for host, pid, SLURM job and error.</p>";
  s += SvgOpen(h, "shard timeline");
  for (double v : TimeTicks(f.span)) {
    double x = f.X(t0 + v);
    s += "<line class=\"grid\" x1=\"" + C(x) + "\" y1=\"" + C(head) + "\" x2=\"" + C(x) + "\" y2=\"" + C(h - kBottom) +
         "\"/>";
    s += "<text class=\"xlab\" x=\"" + C(x) + "\" y=\"" + C(h - kBottom + 16) + "\">+" + Offset(v) + "</text>";
  }
  for (size_t i = 0; i < run.shards.size(); ++i) {
    const ShardReport& sh = run.shards[i];
    double y = head + lane * static_cast<double>(i);
    s += "<text class=\"lane\" x=\"" + C(kLeft - 6) + "\" y=\"" + C(y + lane / 2 + 4) + "\">shard " +
         std::to_string(sh.shard_id) + "</text>";
    if (sh.attempts.empty()) {
      s += "<text class=\"none\" x=\"" + C(kLeft + 6) + "\" y=\"" + C(y + lane / 2 + 4) + "\">" +
           HtmlEscape(ShardStatusName(sh.record.status)) + "</text>";
      continue;
    }
    for (const AttemptSpan& a : sh.attempts) {
      double x0 = f.X(a.start), x1 = std::max(f.X(a.end), x0 + 2);
      std::string tip = "shard " + std::to_string(sh.shard_id) + " attempt #" + std::to_string(a.attempt) + ": " +
                        a.outcome + ", " + F(a.end - a.start, 1) + " s (+" + Offset(a.start - t0) + " to +" +
                        Offset(a.end - t0) + ")";
      if (a.host) tip += "; host " + *a.host;
      if (a.pid) tip += " pid " + std::to_string(*a.pid);
      if (a.slurm_job_id)
        tip += "; SLURM job " + *a.slurm_job_id + (a.slurm_array_task_id ? "_" + *a.slurm_array_task_id : "");
      if (a.load_seconds) tip += "; model load " + F(*a.load_seconds, 1) + " s";
      if (a.capacity) tip += "; " + std::to_string(*a.capacity) + " engine slots";
      if (a.error) tip += "; error: " + *a.error;
      if (a.outcome == "killed") tip += " (the process ended without an end entry: killed or lost)";
      std::string col = OutcomeColor(a.outcome);
      s += "<g class=\"attempt\" data-shard=\"" + std::to_string(sh.shard_id) + "\" data-attempt=\"" +
           std::to_string(a.attempt) + "\" data-outcome=\"" + HtmlEscape(a.outcome) + "\">" + Title(tip);
      s += "<rect x=\"" + C(x0) + "\" y=\"" + C(y + 5) + "\" width=\"" + C(x1 - x0) + "\" height=\"" + C(lane - 10) +
           "\" rx=\"3\" fill=\"" + col + "\"/>";
      if (a.loaded && *a.loaded > a.start) {
        double xl = std::min(f.X(*a.loaded), x1);
        s += "<rect x=\"" + C(x0) + "\" y=\"" + C(y + 5) + "\" width=\"" + C(xl - x0) + "\" height=\"" + C(lane - 10) +
             "\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.55\"/>";
      }
      std::string label = "#" + std::to_string(a.attempt);
      if (a.slurm_job_id) label += " job " + *a.slurm_job_id;
      if (x1 - x0 > 7.0 * static_cast<double>(label.size()) + 8) {
        s += "<text class=\"barlab\" x=\"" + C(x0 + 4) + "\" y=\"" + C(y + lane / 2 + 4) + "\">" + HtmlEscape(label) +
             "</text>";
      }
      // Markers at the end of attempts that did not succeed.
      double cy = y + lane / 2;
      if (a.outcome == "failed" || a.outcome == "killed") {
        s += "<path class=\"mark\" d=\"M" + C(x1 - 5) + " " + C(cy - 5) + " L" + C(x1 + 5) + " " + C(cy + 5) + " M" +
             C(x1 + 5) + " " + C(cy - 5) + " L" + C(x1 - 5) + " " + C(cy + 5) + "\" stroke=\"#7a0000\"/>";
      } else if (a.outcome == "interrupted") {
        s += "<rect x=\"" + C(x1 - 4) + "\" y=\"" + C(cy - 6) + "\" width=\"3\" height=\"12\" fill=\"#7a3d00\"/>";
        s += "<rect x=\"" + C(x1 + 1) + "\" y=\"" + C(cy - 6) + "\" width=\"3\" height=\"12\" fill=\"#7a3d00\"/>";
      }
      s += "</g>";
    }
    s += ReplicaMarks(sh.timeline, f, y, lane);
  }
  s += "</svg><div class=\"legend\">";
  for (const char* o : {"success", "failed", "interrupted", "killed", "running"}) {
    s += "<span><i style=\"background:" + OutcomeColor(o) + "\"></i>" + o + "</span>";
  }
  return s + "<span><i style=\"background:#c8e0c0\"></i>model load</span></div></section>";
}

std::string ShardLegend(const RunReport& run) {
  std::string s = "<div class=\"legend\">";
  for (const auto& sh : run.shards)
    s += "<span><i style=\"background:" + ShardColor(sh.shard_id) + "\"></i>shard " + std::to_string(sh.shard_id) +
         "</span>";
  return s + "</div>";
}

struct BarMetric {
  std::string key, label, unit;
};

std::string PerShardBars(const RunReport& run) {
  // The best metric the data has: tokens/s/GPU, else output tokens/s, else rows/s.
  const BarMetric metrics[] = {{"tokens_per_sec_per_gpu", "tokens/s/GPU", "tok/s/GPU"},
                               {"tokens_per_sec", "output tokens/s (no GPU: per shard, not per GPU)", "tok/s"},
                               {"throughput_rows_per_sec", "rows/s (no model outputs)", "rows/s"}};
  const BarMetric* m = nullptr;
  std::vector<std::pair<int64_t, double>> vals;
  for (const BarMetric& cand : metrics) {
    vals.clear();
    for (const auto& sh : run.shards) {
      if (!sh.stats || sh.record.status != ShardStatus::kSuccess) continue;
      Value v = sh.stats->ToValue();
      const Value* x = v.Find(cand.key);
      if (x && x->is_number()) vals.emplace_back(sh.shard_id, x->as_number());
    }
    if (!vals.empty()) {
      m = &cand;
      break;
    }
  }
  std::string s = "<section id=\"per-shard\"><h2>Per-shard throughput</h2>";
  if (m == nullptr) return s + "<p class=\"note\">No successful shard with stats yet.</p></section>";
  double mean = 0, peak = 0;
  for (auto& [id, v] : vals) mean += v, peak = std::max(peak, v);
  mean /= static_cast<double>(vals.size());
  s += "<p class=\"note\">" + HtmlEscape(m->label) + " per successful shard; dashed line: the mean (" + Short(mean) +
       " " + HtmlEscape(m->unit) + ").</p>";
  const double row = 24, head = 6;
  double h = head + row * static_cast<double>(vals.size()) + 24;
  double ymax = TicksTop(peak > 0 ? peak : 1);
  auto X = [&](double v) { return kLeft + v / ymax * (kW - kLeft - kRight - 60); };
  s += SvgOpen(h, "per-shard " + m->label);
  for (double v : Ticks(ymax)) {
    s += "<line class=\"grid\" x1=\"" + C(X(v)) + "\" y1=\"" + C(head) + "\" x2=\"" + C(X(v)) + "\" y2=\"" + C(h - 22) +
         "\"/><text class=\"xlab\" x=\"" + C(X(v)) + "\" y=\"" + C(h - 8) + "\">" + Short(v) + "</text>";
  }
  for (size_t i = 0; i < vals.size(); ++i) {
    auto [id, v] = vals[i];
    double y = head + row * static_cast<double>(i);
    s += "<text class=\"lane\" x=\"" + C(kLeft - 6) + "\" y=\"" + C(y + row / 2 + 4) + "\">shard " +
         std::to_string(id) + "</text>";
    s += "<rect class=\"bar\" data-shard=\"" + std::to_string(id) + "\" x=\"" + C(kLeft) + "\" y=\"" + C(y + 4) +
         "\" width=\"" + C(std::max(1.0, X(v) - kLeft)) + "\" height=\"" + C(row - 8) + "\" fill=\"" + ShardColor(id) +
         "\">" + Title("shard " + std::to_string(id) + ": " + FormatDouble(v) + " " + m->unit) + "</rect>";
    s += "<text class=\"val\" x=\"" + C(X(v) + 4) + "\" y=\"" + C(y + row / 2 + 4) + "\">" + HtmlEscape(Short(v)) +
         "</text>";
  }
  s += "<line class=\"mean\" x1=\"" + C(X(mean)) + "\" y1=\"" + C(head) + "\" x2=\"" + C(X(mean)) + "\" y2=\"" +
       C(h - 22) + "\">" + Title("mean " + FormatDouble(RoundTo(mean, 2)) + " " + m->unit) + "</line>";
  return s + "</svg></section>";
}

std::string SkewSection(const RunReport& run) {
  SkewSummary k = ComputeSkew(run);
  std::string s = "<section id=\"skew\"><h2>Skew check</h2>";
  if (k.shards == 0) return s + "<p class=\"note\">No successful shard with an inference time yet.</p></section>";
  s += "<p>";
  if (k.shards < 2) s += "Only one successful shard so far: nothing to compare it with. ";
  s += "Working time (all attempts, model loads excluded) over " + std::to_string(k.shards) +
       " successful shard(s): coefficient of variation <b>" + (k.cv ? F(*k.cv, 2) : std::string("\xE2\x80\x94")) +
       "</b>; slowest shard <b>" + std::to_string(k.slowest_shard) + "</b> took " + F(k.slowest_seconds, 2) +
       " s, <b>" + (k.slowest_vs_median ? F(*k.slowest_vs_median, 2) + "\xC3\x97" : std::string("\xE2\x80\x94")) +
       "</b> the median (" + F(k.median_seconds.value_or(0), 2) + " s; 1.5\xC3\x97 or more means skew).";
  if (k.output_ratio || k.prompt_ratio) {
    s += " Its rows' mean output length is " + (k.output_ratio ? F(*k.output_ratio, 2) + "\xC3\x97" : "\xE2\x80\x94") +
         " and mean prompt length " + (k.prompt_ratio ? F(*k.prompt_ratio, 2) + "\xC3\x97" : "\xE2\x80\x94") +
         " the median shard's (usage.jsonl).";
  }
  if (k.rows_ratio) s += " Row count: " + F(*k.rows_ratio, 2) + "\xC3\x97 the median.";
  if (k.corr_time_output_tokens)
    s += " Correlation over shards of working time with output tokens: r = " + F(*k.corr_time_output_tokens, 2);
  if (k.corr_time_prompt_tokens) s += ", with prompt tokens: r = " + F(*k.corr_time_prompt_tokens, 2) + ".";
  s += "</p><table class=\"grid\"><thead><tr><th>shard</th><th>status</th><th>attempts</th><th>rows</th>"
       "<th>working s</th><th>\xC3\x97 median</th><th>rows/s</th><th>output tok/s</th><th>mean prompt tok/row</th>"
       "<th>mean output tok/row</th><th>host</th></tr></thead><tbody>";
  for (const auto& sh : run.shards) {
    double inf_s = ShardWorkSeconds(sh).value_or(-1);  // -1: none
    bool inf = inf_s >= 0;
    Value sv = sh.stats ? sh.stats->ToValue() : Value();
    auto cell = [&](const char* key) { return HtmlEscape(ValueText(sv.is_object() ? sv.Find(key) : nullptr)); };
    bool slow = sh.shard_id == k.slowest_shard && k.slowest_vs_median && *k.slowest_vs_median >= 1.5;
    s += std::string("<tr") + (slow ? " class=\"slow\"" : "") + "><td>" + std::to_string(sh.shard_id) + "</td><td>" +
         HtmlEscape(ShardStatusName(sh.record.status)) + "</td><td>" + std::to_string(sh.record.retry_count) +
         "</td><td>" + cell("rows_processed") + "</td><td>" + (inf ? F(inf_s, 3) : "\xE2\x80\x94") + "</td><td>" +
         (inf && k.median_seconds && *k.median_seconds > 0 ? F(inf_s / *k.median_seconds, 2) : "\xE2\x80\x94") +
         "</td><td>" + cell("throughput_rows_per_sec") + "</td><td>" + cell("tokens_per_sec") + "</td><td>" +
         (sh.usage && sh.usage->rows ? F(sh.usage->MeanPrompt(), 1) : "\xE2\x80\x94") + "</td><td>" +
         (sh.usage && sh.usage->rows ? F(sh.usage->MeanCompletion(), 1) : "\xE2\x80\x94") + "</td><td>" +
         HtmlEscape(sh.record.hostname.value_or("")) + "</td></tr>";
  }
  return s + "</tbody></table></section>";
}

// Hosted APIs: what the run cost (per successful shard, status.json's cost_usd, and the run's total_cost_usd) and,
// over time, the admission window and the rate limits in force (timeline.jsonl). Empty without a hosted API.
std::string HostedSection(const RunReport& run, double t0, double t1, bool have_time) {
  std::vector<std::pair<int64_t, double>> costs;
  for (const auto& sh : run.shards)
    if (sh.stats && sh.stats->cost_usd) costs.emplace_back(sh.shard_id, *sh.stats->cost_usd);
  bool window = false, rpm = false, tpm = false;
  for (const auto& sh : run.shards)
    for (const auto& e : sh.timeline)
      window |= e.window.has_value(), rpm |= e.rpm_limit.has_value(), tpm |= e.tpm_limit.has_value();
  if (costs.empty() && !window && !rpm && !tpm) return "";
  std::string s = "<section id=\"hosted\"><h2>Hosted API: cost and admission</h2>";
  if (!costs.empty()) {
    s += "<p class=\"note\">At the prices of <code>endpoint.pricing</code> or the built-in table; successful "
         "shards.</p><table class=\"grid cost\"><thead><tr><th>shard</th><th>cost (USD)</th></tr></thead><tbody>";
    for (auto [id, c] : costs)
      s += "<tr><td>shard " + std::to_string(id) + "</td><td class=\"val\">" + FormatDouble(RoundTo(c, 6)) +
           "</td></tr>";
    const Value* total = run.aggregate.is_object() ? run.aggregate.Find("total_cost_usd") : nullptr;
    s += "<tr><td><b>total</b></td><td class=\"val\" data-key=\"total_cost_usd\">" + HtmlEscape(ValueText(total)) +
         "</td></tr></tbody></table>";
  }
  if (have_time && (window || rpm || tpm)) {
    s += "<p class=\"note\">Sampled into <code>timeline.jsonl</code>: the limits each shard's admission "
         "controller held in force (configured, or learned from the provider's headers).</p>";
    auto chart = [&](const char* title, const SampleValue& v, const char* unit) {
      s += std::string("<h3>") + title + "</h3>" + SeriesLineChart(run, t0, t1, v, 1, unit, title);
    };
    if (window)
      chart(
          "concurrency window",
          [](const TimelineEntry& e) { return e.window ? std::optional<double>(*e.window) : std::nullopt; },
          "requests");
    if (rpm)
      chart(
          "requests/minute limit in force", [](const TimelineEntry& e) { return e.rpm_limit; }, "/min");
    if (tpm)
      chart(
          "tokens/minute limit in force", [](const TimelineEntry& e) { return e.tpm_limit; }, "/min");
    s += ShardLegend(run);
  }
  return s + "</section>";
}

struct MetricInfo {
  const char* unit;
  const char* formula;
};
const std::map<std::string, MetricInfo>& Metrics() {
  static const auto* m = new std::map<std::string, MetricInfo>{
      {"total_shards", {"shards", "num_shards of the config"}},
      {"completed_shards", {"shards", "shards whose status is success"}},
      {"total_rows_processed", {"rows", "\xCE\xA3 rows_processed of the successful shards"}},
      {"wall_clock_runtime_seconds", {"s", "latest finished_at \xE2\x88\x92 earliest started_at (successful shards)"}},
      {"wall_clock_runtime_human", {"", "wall clock, in words"}},
      {"sum_shard_runtime_seconds", {"s", "\xCE\xA3 runtime_seconds (mark running \xE2\x86\x92 mark success)"}},
      {"sum_shard_runtime_human", {"", "sum of shard runtimes, in words"}},
      {"min_shard_runtime_seconds", {"s", "min runtime_seconds"}},
      {"min_shard_runtime_human", {"", "shortest shard, in words"}},
      {"max_shard_runtime_seconds", {"s", "max runtime_seconds"}},
      {"max_shard_runtime_human", {"", "longest shard, in words"}},
      {"overall_throughput_rows_per_sec", {"rows/s", "total_rows_processed / wall_clock_runtime_seconds"}},
      {"mean_gpu_util_pct", {"%", "\xCE\xA3 (gpu_util_mean \xC3\x97 rows_processed) / \xCE\xA3 rows_processed"}},
      {"num_gpus", {"GPUs", "GPUs per shard: the first successful shard's engine"}},
      {"total_input_tokens", {"tokens", "\xCE\xA3 prompt tokens reported by the engines"}},
      {"total_output_tokens", {"tokens", "\xCE\xA3 completion tokens reported by the engines"}},
      {"sum_model_load_seconds", {"s", "\xCE\xA3 model_load_seconds"}},
      {"sum_inference_runtime_seconds",
       {"s", "max(0, \xCE\xA3 runtime_seconds \xE2\x88\x92 \xCE\xA3 model_load_seconds)"}},
      {"tokens_per_sec_per_gpu",
       {"tok/s/GPU", "total_output_tokens / (sum_inference_runtime_seconds \xC3\x97 num_gpus)"}},
      {"gpu_days_per_billion_tokens",
       {"GPU-days", "(sum_inference_runtime_seconds \xC3\x97 num_gpus / 86400) / (total_output_tokens / 1e9)"}},
      {"total_tokens_per_sec", {"tok/s", "total_output_tokens / sum_inference_runtime_seconds"}},
      {"mean_cpu_util_pct",
       {"% of a core", "\xCE\xA3 (cpu_util_mean \xC3\x97 rows_processed) / \xCE\xA3 rows_processed"}},
      {"total_cost_usd", {"USD", "\xCE\xA3 cost_usd of the successful shards (hosted API prices)"}},
      {"total_failed_rows", {"rows", "\xCE\xA3 failed_rows of the successful shards (errors.jsonl)"}},
  };
  return *m;
}

std::string MetricsSection(const RunReport& run) {
  std::string s =
      "<section id=\"metrics\"><h2>All aggregate metrics</h2><p class=\"note\">As <code>mmirage stats"
      "</code> computes them (\xE2\x80\x94: not measured).</p><table class=\"grid metrics\"><thead><tr>"
      "<th>metric</th><th>value</th><th>unit</th><th>formula</th></tr></thead><tbody>";
  if (run.aggregate.is_object()) {
    for (const auto& [key, v] : run.aggregate.as_object()) {
      auto it = Metrics().find(key);
      s += "<tr><td><code>" + HtmlEscape(key) + "</code></td><td class=\"val\" data-key=\"" + HtmlEscape(key) + "\">" +
           HtmlEscape(ValueText(&v)) + "</td><td>" + (it != Metrics().end() ? it->second.unit : "") + "</td><td>" +
           (it != Metrics().end() ? it->second.formula : "") + "</td></tr>";
    }
  }
  return s + "</tbody></table></section>";
}

const char* kCss = R"CSS(
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1040px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h3{font-size:14px;margin:12px 0 2px;color:#333}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub,.note{color:#666;font-size:13px;margin:4px 0 8px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin-top:14px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:110px}
.card .big{font-size:20px;font-weight:600}.card .big small{font-size:12px;font-weight:400;color:#555}
.card .lab{font-size:12px;color:#666}.card.null .big{color:#aaa}
ul.advice{list-style:none;padding:0;margin:0}
ul.advice li{border-left:4px solid #f28e2b;background:#fff8f0;padding:6px 10px;margin:6px 0;font-size:14px}
ul.advice li.info{border-color:#4e79a7;background:#f2f6fb}
.lvl{font-size:11px;text-transform:uppercase;font-weight:700;color:#555;margin-right:4px}
.ev{color:#555;font-size:12px;margin-top:2px}.ok{color:#3a7d2c}
svg{display:block;max-width:100%;height:auto;margin:4px 0}
svg text{font-size:11px;fill:#444}
svg .ylab{text-anchor:end}svg .xlab{text-anchor:middle}svg .lane{text-anchor:end;font-size:12px;fill:#222}
svg .barlab{fill:#fff;font-size:11px}svg .val{font-size:11px}
svg .grid{stroke:#eee}svg .axis,svg .tick{stroke:#999}svg .unit{font-size:11px;fill:#666}
svg .area{fill-opacity:0.8;stroke:#fff;stroke-width:0.5}svg .hover{fill:#000;fill-opacity:0}
svg .hover:hover{fill-opacity:0.06}svg .line{fill:none;stroke-width:1.8}
svg .mean{stroke:#222;stroke-dasharray:5 4;stroke-width:1.5}svg .mark{stroke-width:2.5}
svg .none{fill:#999;font-style:italic}
.legend{font-size:12px;color:#444;margin:2px 0 6px}.legend span{margin-right:14px;white-space:nowrap}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
table.grid{border-collapse:collapse;font-size:13px;width:100%}
table.grid th,table.grid td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left}
table.grid th{background:#f6f6f6}tr.slow td{background:#fff0f0}
table.metrics td.val{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;white-space:nowrap}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
)CSS";

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        // Control characters are not allowed in XML 1.0 (the SVG must parse).
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          o += ' ';
        } else {
          o += c;
        }
    }
  }
  return o;
}

std::string RenderHtmlReport(const RunReport& run, const std::vector<Advice>& advice) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mmirage run report: " +
                  HtmlEscape(run.config_path) + "</title><style>" + kCss + "</style></head><body>";
  int64_t done = 0;
  for (const auto& s : run.shards) done += s.record.status == ShardStatus::kSuccess;
  h += "<h1>mmirage run report</h1><p class=\"sub\">config <code>" + HtmlEscape(run.config_path) + "</code> \xC2\xB7 " +
       std::to_string(done) + " of " + std::to_string(run.num_shards) + " shards successful \xC2\xB7 generated " +
       HtmlEscape(LocalIsoTime(static_cast<uint64_t>(run.generated_at * 1e6)).substr(0, 19)) + "</p>";
  if (!run.tuned_by.empty()) h += "<p class=\"sub\">tuned config: <code>" + HtmlEscape(run.tuned_by) + "</code></p>";
  h += KeyFigures(run);
  h += AdviceSection(advice);
  double t0 = 0, t1 = 0;
  bool have_time = TimeRange(run, &t0, &t1);
  if (have_time) {
    h += TimelineSection(run, t0, t1);
    bool samples = false;
    for (const auto& s : run.shards)
      for (const auto& e : s.timeline) samples |= e.is_sample();
    h += "<section id=\"throughput\"><h2>Throughput over time</h2>";
    if (samples) {
      size_t nbins = static_cast<size_t>(
          std::clamp(std::ceil((t1 - t0) / std::max(0.5, run.timeline_interval_seconds)), 1.0, 120.0));
      Binned b = BinThroughput(run, t0, t1, nbins);
      h += "<p class=\"note\">Stacked over shards, from the " + Short(run.timeline_interval_seconds) +
           " s samples of <code>timeline.jsonl</code>; hover a column for each shard's value.</p>" + ShardLegend(run);
      h += "<h3>rows/s</h3>" + StackedChart(run, b, b.rows, "rows/s", "rows per second, stacked over shards");
      bool tokens = false;
      for (const auto& v : b.tokens)
        for (double x : v) tokens |= x > 0;
      if (tokens) {
        h += "<h3>output tokens/s</h3>" +
             StackedChart(run, b, b.tokens, "tok/s", "output tokens per second, stacked over shards");
      } else {
        h += "<p class=\"note\">No output tokens (no model outputs in this run).</p>";
      }
    } else {
      h += "<p class=\"note\">No samples in the shards' timeline.jsonl.</p>";
    }
    h += "</section><section id=\"utilisation\"><h2>Utilisation over time</h2>";
    bool gpu = false, cpu = false;
    for (const auto& s : run.shards)
      for (const auto& e : s.timeline)
        gpu |= e.is_sample() && e.gpu.has_value(), cpu |= e.is_sample() && e.cpu.has_value();
    if (gpu) {
      h += "<h3>GPU utilisation</h3>" + LineChart(run, t0, t1, true, 100, "%", "GPU utilisation per shard");
    } else {
      h += "<p class=\"note\">GPU utilisation was not sampled (run with <code>--stats</code> on NVIDIA GPUs).</p>";
    }
    if (cpu) {
      h += "<h3>mmirage CPU use (% of one core)</h3>" +
           LineChart(run, t0, t1, false, 100, "% core", "CPU use per shard");
    }
    h += ShardLegend(run) + "</section>";
  } else {
    h += "<section id=\"timeline\"><h2>Shard timeline</h2><p class=\"note\">No attempt recorded yet.</p></section>";
  }
  h += PerShardBars(run);
  h += HostedSection(run, t0, t1, have_time);
  h += SkewSection(run);
  h += MetricsSection(run);
  h += "<p class=\"note\">Made by <code>mmirage stats --html</code> from the state directory (status.json, "
       "timeline.jsonl) and the shards' usage.jsonl.</p></body></html>\n";
  return h;
}

}  // namespace mmirage
