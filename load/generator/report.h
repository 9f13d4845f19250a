// Reports of a dead_channel result (the JSON that RunDeadChannel writes): the seed-style text
// tables for the terminal and a self-contained HTML page with inline SVG charts. Both are
// pure functions of the JSON, so a report can be rebuilt from a kept results file. Any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace bulkhead::load {

// The phases side by side, the gate, the breaker table and the per-second timeline of the dead
// phase, as Markdown tables (readable in a terminal, pasteable into docs/).
std::string TextReport(const nlohmann::json& result);

// The same tables, plus two charts: the healthy tenant's latency per second in both phases
// with the gate's limit, and the dead channel's breaker state and job counts over time.
std::string HtmlReport(const nlohmann::json& result);

}  // namespace bulkhead::load
