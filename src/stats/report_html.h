// The run report as one self-contained HTML page (`mmirage stats --html FILE`, `--format html`): inline CSS and
// SVG only — no script, no external font, image or style sheet — so it opens offline and can be mailed around.
//
// Sections: key figures; advice (advice.h); shard timeline (a lane per shard, attempts as bars with the model
// load shaded, failures/interruptions/kills marked, SLURM job ids); throughput over time (rows/s and output tok/s,
// stacked over shards, per-shard values in each bin's hover title); GPU and CPU utilisation over time (when
// sampled); per-shard tokens/s/GPU bars with the mean (output tok/s without GPUs, rows/s without a model); the skew
// check (coefficient of variation, slowest shard vs median, its rows' prompt/output lengths, correlations); every
// aggregate value with its unit and formula (cell `<td class="val" data-key="KEY">`, null as "—").
//
// The SVG is well-formed XML (each <svg> parses on its own). Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "stats/advice.h"
#include "stats/report_data.h"

namespace mmirage {

std::string RenderHtmlReport(const RunReport& run, const std::vector<Advice>& advice);

// Text for HTML content and attribute values (& < > " ').
std::string HtmlEscape(const std::string& s);

}  // namespace mmirage
