#include "stats/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "stats/report_html.h"

namespace mmirage::report_svg {
namespace {
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
void Spread(std::vector<double>* bins, double t0, double width, double a, double b, double amount) {
  if (amount <= 0 || bins->empty()) return;
  if (b <= a) {
    size_t i = std::min(bins->size() - 1, static_cast<size_t>(std::max(0.0, (a - t0) / width)));
    (*bins)[i] += amount / width;
    return;
  }
  double rate = amount / (b - a);
  for (size_t i = 0; i < bins->size(); ++i) {
    double lo = t0 + width * static_cast<double>(i), hi = lo + width;
    double o = std::min(hi, b) - std::max(lo, a);
    if (o > 0) (*bins)[i] += rate * o / width;
  }
}

}  // namespace

std::string ReplicaMarks(const std::vector<TimelineEntry>& timeline, const Frame& f, double y, double lane) {
  std::string s;
  for (const TimelineEntry& e : timeline) {
    if (e.event != "replica" || !e.change) continue;
    bool down = *e.change == "out" || *e.change == "gave_up";
    double x = f.X(e.t), tip_y = down ? y + lane - 3 : y + 3, base_y = down ? y + 3 : y + lane - 3;
    std::string name = e.replica_name.value_or("replica " + std::to_string(e.replica.value_or(0)));
    s += "<g class=\"replica\" data-change=\"" + HtmlEscape(*e.change) + "\">" +
         Title(name + ": " + *e.change + " at +" + Offset(e.t - f.t0)) + "<path d=\"M" + C(x - 4) + " " + C(base_y) +
         " L" + C(x + 4) + " " + C(base_y) + " L" + C(x) + " " + C(tip_y) + " Z\" fill=\"" +
         (down ? "#c0392b" : "#2e8b57") + "\" fill-opacity=\"0.85\"/></g>";
  }
  return s;
}

std::string ShardColor(int64_t id) { return kPalette[static_cast<size_t>(id) % 10]; }

std::string OutcomeColor(const std::string& outcome) {
  if (outcome == "success") return "#59a14f";
  if (outcome == "interrupted") return "#f28e2b";
  if (outcome == "killed") return "#9c755f";
  if (outcome == "running") return "#4e79a7";
  return "#e15759";  // failed
}

std::string F(double x, int nd) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", nd, x);
  return buf;
}
// Coordinates: 1 decimal is plenty.
std::string C(double x) { return F(x, 1); }

// "+1h02m", "+3m05s", "+12s"
std::string Offset(double secs) {
  int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, secs)));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  }
  return buf;
}

std::string Short(double x) {
  double a = std::fabs(x);
  if (a >= 1e9) return F(x / 1e9, 1) + "G";
  if (a >= 1e6) return F(x / 1e6, 1) + "M";
  if (a >= 1e4) return F(x / 1e3, 1) + "k";
  if (a >= 100 || x == std::floor(x)) return F(x, 0);
  return F(x, a >= 10 ? 1 : 2);
}

// Axis ticks at 1/2/5 × 10^k covering [0, hi].
std::vector<double> Ticks(double hi, int target) {
  if (!(hi > 0)) hi = 1;
  double raw = hi / target;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  }
  std::vector<double> t;
  for (double v = 0; t.size() < 25; v += step) {
    t.push_back(v);
    if (v >= hi * 0.9999) break;
  }
  return t;
}
double TicksTop(double hi) { return Ticks(hi).back(); }
std::vector<double> TimeTicks(double span) {
  static const double steps[] = {1,   2,   5,    10,   15,   30,    60,    120,   300,
                                 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400};
  double step = steps[0];
  for (double s : steps) {
    step = s;
    if (span / s <= 8) break;
  }
  std::vector<double> t;
  for (double v = 0; v <= span + 1e-9 && t.size() < 40; v += step) t.push_back(v);
  return t;
}

// Axes, grid and labels of a time chart.
std::string Axes(const Frame& f, const std::string& y_unit) {
  std::string s;
  for (double v : Ticks(f.ymax)) {
    double y = f.Y(v);
    s += "<line class=\"grid\" x1=\"" + C(kLeft) + "\" y1=\"" + C(y) + "\" x2=\"" + C(kW - kRight) + "\" y2=\"" + C(y) +
         "\"/>";
    s += "<text class=\"ylab\" x=\"" + C(kLeft - 6) + "\" y=\"" + C(y + 4) + "\">" + HtmlEscape(Short(v)) + "</text>";
  }
  for (double v : TimeTicks(f.span)) {
    double x = f.X(f.t0 + v);
    s += "<line class=\"tick\" x1=\"" + C(x) + "\" y1=\"" + C(f.height - kBottom) + "\" x2=\"" + C(x) + "\" y2=\"" +
         C(f.height - kBottom + 4) + "\"/>";
    s += "<text class=\"xlab\" x=\"" + C(x) + "\" y=\"" + C(f.height - kBottom + 16) + "\">+" + Offset(v) + "</text>";
  }
  s += "<line class=\"axis\" x1=\"" + C(kLeft) + "\" y1=\"" + C(f.height - kBottom) + "\" x2=\"" + C(kW - kRight) +
       "\" y2=\"" + C(f.height - kBottom) + "\"/>";
  s += "<text class=\"unit\" x=\"4\" y=\"" + C(kTop - 2) + "\">" + HtmlEscape(y_unit) + "</text>";
  return s;
}

std::string SvgOpen(double h, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + C(kW) + " " + C(h) + "\" width=\"" + C(kW) +
         "\" height=\"" + C(h) + "\" role=\"img\" aria-label=\"" + HtmlEscape(label) + "\">";
}

std::string Title(const std::string& t) { return "<title>" + HtmlEscape(t) + "</title>"; }

Binned BinThroughput(const RunReport& run, double t0, double t1, size_t nbins) {
  Binned b;
  b.t0 = t0;
  b.width = (t1 - t0) / static_cast<double>(nbins);
  for (const ShardReport& s : run.shards) {
    std::vector<double> r(nbins, 0), k(nbins, 0);
    int64_t attempt = -1;
    double pt = 0;
    int64_t prow = 0, ptok = 0;
    for (const TimelineEntry& e : s.timeline) {
      if (e.attempt != attempt || e.event == "start") {
        attempt = e.attempt;
        pt = e.t;
        prow = ptok = 0;
      }
      if (!e.is_sample()) {
        if (e.event == "loaded") pt = e.t;
        continue;
      }
      int64_t nrow = e.rows - e.resumed;
      Spread(&r, t0, b.width, pt, e.t, static_cast<double>(nrow - prow));
      Spread(&k, t0, b.width, pt, e.t, static_cast<double>(e.out_tok - ptok));
      pt = e.t;
      prow = nrow;
      ptok = e.out_tok;
    }
    b.rows.push_back(std::move(r));
    b.tokens.push_back(std::move(k));
  }
  return b;
}

std::string StackedChart(const RunReport& run, const Binned& b, const std::vector<std::vector<double>>& series,
                         const std::string& unit, const std::string& label) {
  size_t nb = series.empty() ? 0 : series[0].size();
  std::vector<double> total(nb, 0);
  for (const auto& s : series)
    for (size_t i = 0; i < nb; ++i) total[i] += s[i];
  double peak = 0;
  for (double v : total) peak = std::max(peak, v);
  Frame f;
  f.t0 = b.t0;
  f.span = b.width * static_cast<double>(nb);
  f.ymax = TicksTop(peak > 0 ? peak : 1);
  f.height = 220;
  std::string s = SvgOpen(f.height, label) + Axes(f, unit);
  std::vector<double> base(nb, 0);
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& v = series[k];
    double sum = 0, mx = 0;
    for (double x : v) sum += x, mx = std::max(mx, x);
    // One point per bin centre (and the chart's edges): upper boundary forward, lower boundary back.
    auto xc = [&](size_t i) { return f.X(b.t0 + b.width * (static_cast<double>(i) + 0.5)); };
    std::string d = "M" + C(f.X(b.t0)) + " " + C(f.Y(base[0] + v[0]));
    for (size_t i = 0; i < nb; ++i) d += "L" + C(xc(i)) + " " + C(f.Y(base[i] + v[i]));
    d += "L" + C(f.X(b.t0 + b.width * static_cast<double>(nb))) + " " + C(f.Y(base[nb - 1] + v[nb - 1]));
    d += "L" + C(f.X(b.t0 + b.width * static_cast<double>(nb))) + " " + C(f.Y(base[nb - 1]));
    for (size_t i = nb; i-- > 0;) d += "L" + C(xc(i)) + " " + C(f.Y(base[i]));
    d += "L" + C(f.X(b.t0)) + " " + C(f.Y(base[0])) + "Z";
    int64_t id = run.shards[k].shard_id;
    s += "<path class=\"area\" data-shard=\"" + std::to_string(id) + "\" d=\"" + d + "\" fill=\"" + ShardColor(id) +
         "\">" +
         Title("shard " + std::to_string(id) + ": peak " + Short(mx) + " " + unit + ", mean " +
               Short(nb ? sum / static_cast<double>(nb) : 0) + " " + unit + " over the run") +
         "</path>";
    for (size_t i = 0; i < nb; ++i) base[i] += v[i];
  }
  // Hover strips: the bin's total and every shard's share.
  for (size_t i = 0; i < nb; ++i) {
    if (total[i] <= 0) continue;
    double xa = f.X(b.t0 + b.width * static_cast<double>(i)), xb = f.X(b.t0 + b.width * static_cast<double>(i + 1));
    std::string tip = "+" + Offset(b.width * static_cast<double>(i)) + " to +" +
                      Offset(b.width * static_cast<double>(i + 1)) + ": " + Short(total[i]) + " " + unit;
    std::vector<size_t> order;  // the largest shares first, at most 12
    for (size_t k = 0; k < series.size(); ++k)
      if (series[k][i] > 0) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t c) { return series[a][i] > series[c][i]; });
    for (size_t j = 0; j < order.size() && j < 12; ++j)
      tip += "; shard " + std::to_string(run.shards[order[j]].shard_id) + " " + Short(series[order[j]][i]);
    if (order.size() > 12) tip += "; " + std::to_string(order.size() - 12) + " more shards";
    s += "<rect class=\"hover\" x=\"" + C(xa) + "\" y=\"" + C(kTop) + "\" width=\"" + C(std::max(0.5, xb - xa)) +
         "\" height=\"" + C(f.height - kTop - kBottom) + "\">" + Title(tip) + "</rect>";
  }
  return s + "</svg>";
}

std::string LineChart(const RunReport& run, double t0, double t1, bool gpu, double ymax_floor, const std::string& unit,
                      const std::string& label) {
  return SeriesLineChart(
      run, t0, t1, [gpu](const TimelineEntry& e) { return gpu ? e.gpu : e.cpu; }, ymax_floor, unit, label);
}

std::string SeriesLineChart(const RunReport& run, double t0, double t1, const SampleValue& value, double ymax_floor,
                            const std::string& unit, const std::string& label) {
  double peak = ymax_floor;
  for (const auto& sh : run.shards)
    for (const auto& e : sh.timeline) {
      auto v = value(e);
      if (e.is_sample() && v) peak = std::max(peak, *v);
    }
  Frame f;
  f.t0 = t0;
  f.span = t1 - t0;
  f.ymax = TicksTop(peak);
  f.height = 200;
  std::string s = SvgOpen(f.height, label) + Axes(f, unit);
  // At most 200 points per shard: the samples are averaged per time bin (a 4,000-line timeline stays small).
  const size_t nbins = 200;
  const double width = f.span / static_cast<double>(nbins);
  for (const auto& sh : run.shards) {
    std::vector<double> bin_sum(nbins, 0);
    std::vector<int> bin_n(nbins, 0);
    double sum = 0, mn = 1e300, mx = 0;
    int n = 0;
    for (const auto& e : sh.timeline) {
      auto v = value(e);
      if (!e.is_sample() || !v) continue;
      double b = std::floor((e.t - t0) / width);
      size_t i = static_cast<size_t>(std::clamp(b, 0.0, static_cast<double>(nbins - 1)));
      bin_sum[i] += *v, ++bin_n[i];
      sum += *v, mn = std::min(mn, *v), mx = std::max(mx, *v), ++n;
    }
    if (n == 0) continue;
    std::string pts;
    int points = 0;
    double prev_t = -1e300;
    // A hole longer than 3 sample periods (another attempt, a stall of the sampler) breaks the line.
    const double max_gap = 3 * std::max(run.timeline_interval_seconds, 0.5) + width;
    for (size_t i = 0; i < nbins; ++i) {
      if (bin_n[i] == 0) continue;
      double t = t0 + width * (static_cast<double>(i) + 0.5);
      pts += (pts.empty() ? "M" : t - prev_t > max_gap ? " M" : " L") + C(f.X(t)) + " " + C(f.Y(bin_sum[i] / bin_n[i]));
      prev_t = t;
      ++points;
    }
    if (points == 1) pts += " l2 0";
    s += "<path class=\"line\" data-shard=\"" + std::to_string(sh.shard_id) + "\" d=\"" + pts + "\" stroke=\"" +
         ShardColor(sh.shard_id) + "\">" +
         Title("shard " + std::to_string(sh.shard_id) + ": mean " + F(sum / n, 1) + ", min " + F(mn, 1) + ", max " +
               F(mx, 1) + " " + unit + " over " + std::to_string(n) + " samples") +
         "</path>";
  }
  return s + "</svg>";
}

}  // namespace mmirage::report_svg
