// Reports of a dead_channel result (the JSON that RunDeadChannel writes): the seed-style text
// tables for the terminal and a self-contained HTML page with inline SVG charts. Both are
// pure functions of the JSON, so a report can be rebuilt from a kept results file. Any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace bulkhead::load {

// The phases side by side, the gate, the breaker table and the per-second timeline of the dead
// phase, as Markdown tables (readable in a terminal, pasteable into docs/).
std::string TextReport(const nlohmann::json& result);

// The same tables, plus two charts: the healthy tenant's latency per second in both phases
// with the gate's limit, and the dead channel's breaker state and job counts over time.
std::string HtmlReport(const nlohmann::json& result);

// One row per dead_channel result, side by side: the runs of a series (docs/load-results.md),
// as a Markdown table. `names` label the rows (the files' names).
std::string SeriesTable(const std::vector<nlohmann::json>& results,
                        const std::vector<std::string>& names);

// For the smaller scenarios (throughput, latency, webhook_burst): a table (first row the
// header) as Markdown, and a self-contained HTML page of a title, a verdict and tables.
using Table = std::vector<std::vector<std::string>>;
std::string MarkdownTable(const Table& table);

// A chart of lines over time for HtmlPage, drawn like the dead_channel report's: a linear x
// axis, a log-like y axis, and dashed vertical marks for events (a kill, a restart).
struct Chart {
  struct Line {
    std::string label;
    std::string color;  // "#1f77b4"
    std::vector<std::pair<double, double>> points;
  };
  std::string title, x_label, y_label;
  std::vector<Line> lines;
  std::vector<std::pair<double, std::string>> marks;  // x, label
};
std::string SvgChart(const Chart& chart);

std::string HtmlPage(const std::string& title, const std::string& verdict, bool pass,
                     const std::vector<Table>& tables, const nlohmann::json& knobs,
                     const std::vector<Chart>& charts = {});

// v rounded to a multiple of `unit` (0.01, 0.1, 1), for the results JSON.
double RoundTo(double v, double unit);

// 12345 → "12,345"; a latency in ms as "3.2 ms" or "1,234 ms"; v with `decimals` decimals.
std::string Thousands(int64_t v);
std::string FormatMs(double ms);
std::string FormatFixed(double v, int decimals);

}  // namespace bulkhead::load
