// The run report as one self-contained HTML page (`mmirage stats --html FILE`, `--format html`): inline CSS and
// SVG only — no script, no external font, image or style sheet — so it opens offline and can be mailed around.
// Sections (listed in report_html.cc): key figures, advice, shard timeline, throughput and utilisation over time,
// per-shard tokens/s/GPU, the skew check and every aggregate value (`<td class="val" data-key="KEY">`, null "—").
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
