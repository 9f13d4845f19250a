#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string_view>
#include <vector>

namespace bulkhead::load {
namespace {

using nlohmann::json;

std::string Fixed(double v, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
  return buffer;
}

// 12345 → "12,345", as the seed writes counts.
}  // namespace

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string FormatFixed(double v, int decimals) { return Fixed(v, decimals); }

double RoundTo(double v, double unit) { return std::round(v / unit) * unit; }

std::string FormatMs(double ms) {
  return (ms >= 1000 ? Thousands(std::llround(ms)) : Fixed(ms, ms < 100 ? 1 : 0)) + " ms";
}

namespace {

std::string Ms(const json& v) { return v.is_null() ? "–" : FormatMs(v.get<double>()); }

std::string Seconds(const json& v) {
  return v.is_null() ? "never" : Fixed(v.get<double>(), 2) + " s";
}

std::string Markdown(const Table& table) {
  std::string out;
  for (size_t r = 0; r < table.size(); ++r) {
    out += "|";
    for (const auto& cell : table[r]) out += " " + cell + " |";
    out += "\n";
    if (r == 0) {
      out += "|";
      for (size_t c = 0; c < table[r].size(); ++c) out += c == 0 ? "---|" : "---:|";
      out += "\n";
    }
  }
  return out;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Html(const Table& table) {
  std::string out = "<table>\n";
  for (size_t r = 0; r < table.size(); ++r) {
    out += "<tr>";
    for (size_t c = 0; c < table[r].size(); ++c) {
      std::string tag = r == 0 ? "th" : "td";
      out += "<" + tag + (c > 0 ? " class=num" : "") + ">" + Escape(table[r][c]) + "</" + tag + ">";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

Table PhaseTable(const json& r) {
  const json& b = r["phases"]["baseline"];
  const json& d = r["phases"]["dead"];
  const json& g = r["gate"];
  std::string mode = r["tier_mode"] == "shared" ? "shared tier" : "separate tiers";
  Table t = {{"Healthy tenant, send → provider", "Baseline", "Dead channel (" + mode + ")"}};
  t.push_back({"Dead tenant's tier", "–", r["tiers"]["dead"].get<std::string>()});
  auto row = [&](const std::string& name, const std::function<std::string(const json&)>& f) {
    t.push_back({name, f(b), f(d)});
  };
  row("Messages delivered / sent",
      [](const json& p) { return Thousands(p["delivered"]) + " / " + Thousands(p["sent"]); });
  row("Duplicates / lost", [](const json& p) {
    return std::to_string(p["duplicates"].get<int>()) + " / " +
           std::to_string(p["lost"].get<int>());
  });
  row("Deliveries/s", [](const json& p) { return Fixed(p["deliveries_per_s"], 1); });
  row("p50", [](const json& p) { return Ms(p["p50_ms"]); });
  row("p95", [](const json& p) { return Ms(p["p95_ms"]); });
  row("p99", [](const json& p) { return Ms(p["p99_ms"]); });
  row("max", [](const json& p) { return Ms(p["max_ms"]); });
  t.push_back({"p95 limit (20 % or 50 ms)", "",
               Ms(g["limit_ms"]) + ": " + (g["p95_within_limit"].get<bool>() ? "pass" : "fail")});
  const json& over = g["over_limit"];
  t.push_back({"Messages over the limit", "",
               over["messages"] == 0
                   ? "0"
                   : Thousands(over["messages"]) + ", sent from " + Fixed(over["first_sent_s"], 1) +
                         " s to " + Fixed(over["last_sent_s"], 1) + " s"});
  const json& k = r["breaker"];
  t.push_back({"p95 of messages sent before / after the backlog was parked", "",
               Ms(k["p95_sent_before_parked_ms"]) + " (" +
                   Thousands(k["messages_sent_before_parked"]) + ") / " +
                   Ms(k["p95_sent_after_parked_ms"]) + " (" +
                   Thousands(k["messages_sent_after_parked"]) + ")"});
  return t;
}

Table BreakerTable(const json& r) {
  const json& k = r["breaker"];
  std::string mode = r["tier_mode"] == "shared" ? "Shared tier" : "Separate tiers";
  return {{"Dead channel", mode},
          {"Breaker opened after (from the backlog's start)", Seconds(k["opened_after_s"])},
          {"Whole backlog parked after", Seconds(k["parked_after_s"]) + " (the backlog took " +
                                             Seconds(k["backlog_created_s"]) + " to create)"},
          {"Deliveries in flight to the dead provider, max", Thousands(k["max_inflight_dead"])},
          {"Requests that reached the dead provider (" + Thousands(k["backlog"]) + " deliveries)",
           Thousands(k["dead_requests"])},
          {"Healthy messages lost or duplicated",
           std::to_string(r["phases"]["baseline"]["lost"].get<int>() +
                          r["phases"]["dead"]["lost"].get<int>() +
                          r["phases"]["baseline"]["duplicates"].get<int>() +
                          r["phases"]["dead"]["duplicates"].get<int>())}};
}

Table TimelineTable(const json& r) {
  Table t = {{"t", "Breaker", "Dead executing", "Dead waiting", "Dead parked",
              "In flight at the dead provider", "Healthy waiting"}};
  for (const json& row : r["timeline"]["dead"]) {
    t.push_back({Fixed(row["t_s"], 0) + " s", row["breaker"], Thousands(row["executing"]),
                 Thousands(row["waiting"]), Thousands(row["parked"]),
                 Thousands(row["dead_in_flight"]), Thousands(row["healthy_waiting"])});
  }
  return t;
}

std::string Verdict(const json& r) {
  const json& g = r["gate"];
  std::string why;
  if (!g["p95_within_limit"].get<bool>()) why += " dead-phase p95 over the limit;";
  if (!g["exactly_once"].get<bool>()) why += " a healthy message was lost or duplicated;";
  if (!g["breaker_opened"].get<bool>()) why += " the breaker never opened;";
  if (!g["signatures_valid"].get<bool>()) why += " a signature did not verify;";
  if (!why.empty()) why.pop_back();
  return g["pass"].get<bool>() ? "gate: PASS" : "gate: FAIL —" + why;
}

// ---- SVG ----------------------------------------------------------------------------------

// A plot area with a linear x axis and a log-like y axis (log10(1 + y)), so that 20 ms and
// 10 s, or 3 executing jobs and 10,000 parked ones, are both readable on one chart.
class Plot {
 public:
  Plot(double x_max, double y_max) : x_max_(std::max(x_max, 1.0)), y_max_(std::max(y_max, 1.0)) {}

  double X(double x) const { return kLeft + (kWidth - kLeft - kRight) * x / x_max_; }
  double Y(double y) const {
    double top = std::log10(1 + y_max_);
    return kHeight - kBottom - (kHeight - kTop - kBottom) * std::log10(1 + std::max(y, 0.0)) / top;
  }

  std::string Open(const std::string& title, const std::string& x_label,
                   const std::string& y_label) const {
    std::ostringstream s;
    s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kWidth << "' height='" << kHeight
      << "' font-family='sans-serif' font-size='11'>\n"
      << "<text x='" << kLeft << "' y='16' font-size='13' font-weight='bold'>" << Escape(title)
      << "</text>\n";
    // Axes, x ticks every nice step, y ticks at 1, 10, 100, … (and 2, 5 ×).
    s << "<line x1='" << kLeft << "' y1='" << Y(0) << "' x2='" << X(x_max_) << "' y2='" << Y(0)
      << "' stroke='#333'/>\n<line x1='" << kLeft << "' y1='" << Y(0) << "' x2='" << kLeft
      << "' y2='" << Y(y_max_) << "' stroke='#333'/>\n";
    double step = x_max_ <= 30 ? 5 : x_max_ <= 120 ? 10 : 30;
    for (double x = 0; x <= x_max_ + 1e-9; x += step) {
      s << "<text x='" << X(x) << "' y='" << Y(0) + 14 << "' text-anchor='middle'>" << x
        << "</text>\n";
    }
    for (double decade = 1; decade <= y_max_ * 1.0001; decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        double y = decade * m;
        if (y > y_max_) break;
        s << "<line x1='" << kLeft << "' y1='" << Y(y) << "' x2='" << X(x_max_) << "' y2='" << Y(y)
          << "' stroke='#eee'/>\n<text x='" << kLeft - 4 << "' y='" << Y(y) + 4
          << "' text-anchor='end'>" << (y >= 1000 ? Thousands(std::llround(y)) : Fixed(y, 0))
          << "</text>\n";
      }
    }
    s << "<text x='" << (kLeft + kWidth - kRight) / 2 << "' y='" << kHeight - 4
      << "' text-anchor='middle'>" << Escape(x_label) << "</text>\n"
      << "<text transform='translate(12," << (kHeight - kBottom + kTop) / 2
      << ") rotate(-90)' text-anchor='middle'>" << Escape(y_label) << "</text>\n";
    return s.str();
  }

  std::string Line(const std::vector<std::pair<double, double>>& points, const std::string& color,
                   double width, const std::string& dash = "") const {
    if (points.empty()) return "";
    std::ostringstream s;
    s << "<polyline fill='none' stroke='" << color << "' stroke-width='" << width << "'"
      << (dash.empty() ? "" : " stroke-dasharray='" + dash + "'") << " points='";
    for (const auto& [x, y] : points) s << Fixed(X(x), 1) << "," << Fixed(Y(y), 1) << " ";
    s << "'/>\n";
    return s.str();
  }

  std::string Dots(const std::vector<std::pair<double, double>>& points,
                   const std::string& color) const {
    std::ostringstream s;
    for (const auto& [x, y] : points) {
      s << "<circle cx='" << Fixed(X(x), 1) << "' cy='" << Fixed(Y(y), 1) << "' r='2' fill='"
        << color << "' fill-opacity='0.6'/>\n";
    }
    return s.str();
  }

  std::string Legend(const std::vector<std::pair<std::string, std::string>>& entries) const {
    std::ostringstream s;
    double x = kLeft + 10;
    for (const auto& [label, color] : entries) {
      s << "<rect x='" << x << "' y='26' width='12' height='4' fill='" << color << "'/><text x='"
        << x + 16 << "' y='31'>" << Escape(label) << "</text>\n";
      x += 26 + 6.6 * static_cast<double>(label.size());
    }
    return s.str();
  }

  // The breaker bands' key, on a second legend line.
  std::string StateLegend() const {
    std::ostringstream s;
    double x = kLeft + 10;
    for (const auto& [label, color] :
         {std::pair{"breaker closed", "#2ca02c"}, {"open", "#d62728"}, {"half_open", "#ff7f0e"}}) {
      s << "<rect x='" << x << "' y='" << kTop - 16 << "' width='12' height='8' fill='" << color
        << "' fill-opacity='0.25'/><text x='" << x + 16 << "' y='" << kTop - 9 << "'>" << label
        << "</text>\n";
      x += 26 + 6.6 * static_cast<double>(std::string_view(label).size());
    }
    return s.str();
  }

  std::string VerticalMark(double x, const std::string& label, const std::string& color) const {
    std::ostringstream s;
    s << "<line x1='" << X(x) << "' y1='" << Y(0) << "' x2='" << X(x) << "' y2='" << Y(y_max_)
      << "' stroke='" << color << "' stroke-dasharray='3,3'/>\n<text x='" << X(x) + 3 << "' y='"
      << Y(y_max_) + 12 << "' fill='" << color << "'>" << Escape(label) << "</text>\n";
    return s.str();
  }

  std::string Band(double x0, double x1, const std::string& color) const {
    std::ostringstream s;
    s << "<rect x='" << X(x0) << "' y='" << Y(y_max_) << "' width='" << std::max(0.0, X(x1) - X(x0))
      << "' height='" << Y(0) - Y(y_max_) << "' fill='" << color << "' fill-opacity='0.12'/>\n";
    return s.str();
  }

  static constexpr double kWidth = 900, kHeight = 340;
  static constexpr double kLeft = 60, kRight = 20, kTop = 50, kBottom = 36;

 private:
  double x_max_, y_max_;
};

double MaxOf(const json& rows, const std::string& key) {
  double m = 0;
  for (const json& r : rows) m = std::max(m, r[key].get<double>());
  return m;
}

std::vector<std::pair<double, double>> Series(const json& rows, const std::string& key) {
  std::vector<std::pair<double, double>> out;
  for (const json& r : rows) out.emplace_back(r["t_s"].get<double>(), r[key].get<double>());
  return out;
}

std::string LatencyChart(const json& r) {
  const json& b = r["latency_by_second"]["baseline"];
  const json& d = r["latency_by_second"]["dead"];
  double limit = r["gate"]["limit_ms"].get<double>();
  double x_max = std::max(MaxOf(b, "t_s"), MaxOf(d, "t_s")) + 1;
  double y_max = std::max({MaxOf(b, "max_ms"), MaxOf(d, "max_ms"), limit}) * 1.2;
  Plot plot(x_max, y_max);
  std::string s = plot.Open("Healthy tenant: send → provider latency per second of sending",
                            "seconds after the phase start", "ms (log scale)");
  s += plot.Line({{0, limit}, {x_max, limit}}, "#d62728", 1.5, "6,4");
  s += plot.Line(Series(b, "p50_ms"), "#1f77b4", 1, "2,2");
  s += plot.Line(Series(b, "p95_ms"), "#1f77b4", 2);
  s += plot.Dots(Series(b, "max_ms"), "#1f77b4");
  s += plot.Line(Series(d, "p50_ms"), "#ff7f0e", 1, "2,2");
  s += plot.Line(Series(d, "p95_ms"), "#ff7f0e", 2);
  s += plot.Dots(Series(d, "max_ms"), "#ff7f0e");
  const json& k = r["breaker"];
  if (!k["opened_after_s"].is_null()) {
    s += plot.VerticalMark(k["opened_after_s"].get<double>(), "breaker open", "#d62728");
  }
  s += plot.Legend({{"baseline p95 (dashed p50, dots max)", "#1f77b4"},
                    {"dead phase p95 (dashed p50, dots max)", "#ff7f0e"},
                    {"gate limit " + Ms(limit), "#d62728"}});
  return s + "</svg>\n";
}

std::string BreakerChart(const json& r) {
  const json& rows = r["timeline"]["dead"];
  double x_max = MaxOf(rows, "t_s") + 1;
  double y_max = std::max({MaxOf(rows, "parked"), MaxOf(rows, "waiting"), MaxOf(rows, "executing"),
                           MaxOf(rows, "healthy_waiting"), 10.0}) *
                 1.2;
  Plot plot(x_max, y_max);
  std::string s = plot.Open("Dead channel: breaker state and jobs (dead phase)",
                            "seconds after the backlog started", "jobs (log scale)");
  // The breaker's state as background bands.
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string state = rows[i]["breaker"];
    double x0 = rows[i]["t_s"], x1 = i + 1 < rows.size() ? rows[i + 1]["t_s"].get<double>() : x_max;
    s += plot.Band(x0, x1, state == "closed" ? "#2ca02c" : state == "open" ? "#d62728" : "#ff7f0e");
  }
  s += plot.Line(Series(rows, "executing"), "#9467bd", 2);
  s += plot.Line(Series(rows, "waiting"), "#ff7f0e", 2);
  s += plot.Line(Series(rows, "parked"), "#7f7f7f", 2);
  s += plot.Line(Series(rows, "dead_in_flight"), "#e377c2", 1, "2,2");
  s += plot.Line(Series(rows, "healthy_waiting"), "#1f77b4", 2);
  s += plot.Legend({{"executing", "#9467bd"},
                    {"waiting", "#ff7f0e"},
                    {"parked", "#7f7f7f"},
                    {"in flight at the provider", "#e377c2"},
                    {"healthy waiting", "#1f77b4"}});
  s += plot.StateLegend();
  return s + "</svg>\n";
}

std::string Title(const json& r) {
  return "dead_channel — " + r["profile"].get<std::string>() + " profile, " +
         (r["tier_mode"] == "shared" ? "shared tier" : "separate tiers") + ", " +
         r["started_at"].get<std::string>() +
         (r.contains("commit") ? " at " + r["commit"].get<std::string>() : "");
}

}  // namespace

std::string TextReport(const json& r) {
  std::string out = Title(r) + "\n\n" + Markdown(PhaseTable(r)) + "\n" + Verdict(r) + "\n\n" +
                    Markdown(BreakerTable(r)) + "\nTimeline of the dead phase (every second):\n\n" +
                    Markdown(TimelineTable(r));
  return out;
}

std::string HtmlReport(const json& r) {
  std::string title = Title(r);
  std::string out =
      "<!doctype html>\n<html><head><meta charset='utf-8'><title>" + Escape(title) +
      "</title>\n<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}"
      "th{background:#f4f4f4}.num{text-align:right}.pass{color:#2ca02c}.fail{color:#d62728}"
      "</style></head><body>\n<h1>" +
      Escape(title) + "</h1>\n";
  bool pass = r["gate"]["pass"].get<bool>();
  out +=
      "<h2 class='" + std::string(pass ? "pass" : "fail") + "'>" + Escape(Verdict(r)) + "</h2>\n";
  out +=
      "<p>Pass criterion (seed 003): the healthy tenant's p95 in the dead phase is at most "
      "max(baseline p95 × 1.2, baseline p95 + 50 ms); every healthy message is delivered "
      "exactly once (by webhook-id); the dead channel's breaker opens.</p>\n";
  out += Html(PhaseTable(r));
  out += LatencyChart(r);
  out += "<h2>Dead channel</h2>\n" + Html(BreakerTable(r));
  out += BreakerChart(r);
  out += "<h2>Timeline of the dead phase</h2>\n" + Html(TimelineTable(r));
  out += "<h2>Knobs</h2>\n<pre>" + Escape(r["knobs"].dump(2)) + "</pre>\n</body></html>\n";
  return out;
}

std::string MarkdownTable(const Table& table) { return Markdown(table); }

std::string SeriesTable(const std::vector<json>& results, const std::vector<std::string>& names) {
  Table table = {{"Run", "Tier", "Baseline p50 / p95 / p99 / max",
                  "Dead phase p50 / p95 / p99 / max", "p95 limit", "Gate", "Breaker open",
                  "Backlog parked", "Dead requests", "Lost / dup"}};
  auto phase = [](const json& p) {
    return Ms(p["p50_ms"]) + " / " + Ms(p["p95_ms"]) + " / " + Ms(p["p99_ms"]) + " / " +
           Ms(p["max_ms"]);
  };
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    const json& d = r["phases"]["dead"];
    const json& b = r["phases"]["baseline"];
    table.push_back(
        {names[i], r.value("tier_mode", "?"), phase(b), phase(d), Ms(r["gate"]["limit_ms"]),
         r["gate"]["pass"].get<bool>() ? "pass" : "FAIL", Seconds(r["breaker"]["opened_after_s"]),
         Seconds(r["breaker"]["parked_after_s"]),
         std::to_string(r["breaker"]["dead_requests"].get<int64_t>()),
         std::to_string(b["lost"].get<int64_t>() + d["lost"].get<int64_t>()) + " / " +
             std::to_string(b["duplicates"].get<int64_t>() + d["duplicates"].get<int64_t>())});
  }
  return Markdown(table);
}

std::string SvgChart(const Chart& chart) {
  double x_max = 1, y_max = 1;
  for (const Chart::Line& line : chart.lines) {
    for (const auto& [x, y] : line.points) {
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  }
  for (const auto& [x, label] : chart.marks) x_max = std::max(x_max, x);
  Plot plot(x_max + 1, y_max * 1.2);
  std::string s = plot.Open(chart.title, chart.x_label, chart.y_label);
  std::vector<std::pair<std::string, std::string>> legend;
  for (const Chart::Line& line : chart.lines) {
    s += plot.Line(line.points, line.color, 2);
    legend.emplace_back(line.label, line.color);
  }
  for (const auto& [x, label] : chart.marks) s += plot.VerticalMark(x, label, "#d62728");
  s += plot.Legend(legend);
  return s + "</svg>\n";
}

std::string HtmlPage(const std::string& title, const std::string& verdict, bool pass,
                     const std::vector<Table>& tables, const nlohmann::json& knobs,
                     const std::vector<Chart>& charts) {
  std::string out =
      "<!doctype html>\n<html><head><meta charset='utf-8'><title>" + Escape(title) +
      "</title>\n<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}"
      "th{background:#f4f4f4}.num{text-align:right}.pass{color:#2ca02c}.fail{color:#d62728}"
      "</style></head><body>\n<h1>" +
      Escape(title) + "</h1>\n<h2 class='" + (pass ? "pass" : "fail") + "'>" + Escape(verdict) +
      "</h2>\n";
  for (const Table& t : tables) out += Html(t);
  for (const Chart& c : charts) out += "<p>" + SvgChart(c) + "</p>\n";
  out += "<h2>Knobs</h2>\n<pre>" + Escape(knobs.dump(2)) + "</pre>\n</body></html>\n";
  return out;
}

}  // namespace bulkhead::load
