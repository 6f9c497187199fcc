// porta bench --svg — a horizontal bar chart: for every op case, one bar per device (and
// variant) giving the fraction of that device's ceiling reached, with the ceiling's kind
// (C compute / M memory) and the time at the end of the bar.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "tools/cmd_bench.hpp"

namespace porta::cli::bench {
namespace {

constexpr int kLabelWidth = 300, kChartWidth = 520, kBarHeight = 13, kGap = 8, kTop = 86;
const char* kColors[] = {"#2b6cb0", "#dd6b20", "#2f855a", "#9b2c2c", "#6b46c1", "#b7791f"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string num(double v, int precision = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string time_str(double us) {
  if (us >= 1e6) return num(us / 1e6, 2) + " s";
  if (us >= 1e3) return num(us / 1e3, 2) + " ms";
  return num(us, 1) + " us";
}

}  // namespace

void write_svg(const std::string& path, const Report& rep) {
  // Rows: distinct (op, case, dtype) in report order; series: distinct device/variant labels.
  std::vector<std::string> rows, series;
  std::map<std::pair<std::string, std::string>, const Result*> cell;
  for (const Result& r : rep.results) {
    std::string row = r.op + "  " + r.case_name + (r.dtype == "f32" ? "" : " " + r.dtype);
    std::string s = r.device + (r.variant.empty() ? "" : "/" + r.variant);
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    cell[{row, s}] = &r;
  }
  // The axis reaches 100%, or further when a case exceeds its ceiling (a ceiling is a measured
  // copy/fma peak, not a law: a cache-resident case can beat it).
  double top = 1.0;
  for (const Result& r : rep.results) top = std::max(top, r.fraction);
  top = std::ceil(top * 4) / 4;
  int group = static_cast<int>(series.size()) * kBarHeight + kGap;
  int height = kTop + static_cast<int>(rows.size()) * group + 40;
  int width = kLabelWidth + kChartWidth + 150;
  auto x_of = [&](double f) { return kLabelWidth + kChartWidth * std::min(f, top) / top; };

  std::string o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                  std::to_string(height) + "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">porta bench: fraction of each device's "
       "ceiling reached</text>\n";
  std::string sub;
  for (auto& c : rep.ceilings) {
    sub += c.device + ": copy " + num(c.copy_gbps) + " GB/s, fma peak f32 " + num(c.peak_gflops("f32")) +
           " GFLOP/s;  ";
  }
  o += "<text x=\"10\" y=\"38\" fill=\"#444\">" + esc(sub) + "</text>\n";
  o += "<text x=\"10\" y=\"54\" fill=\"#444\">bar end: C = compute-bound (fma peak), M = memory-bound "
       "(copy ceiling); median time; ± = runs spread over 10%</text>\n";
  for (size_t s = 0; s < series.size(); ++s) {
    int lx = kLabelWidth + static_cast<int>(s) * 150;
    o += "<rect x=\"" + std::to_string(lx) + "\" y=\"62\" width=\"12\" height=\"12\" fill=\"" + kColors[s % 6] +
         "\"/><text x=\"" + std::to_string(lx + 16) + "\" y=\"72\">" + esc(series[s]) + "</text>\n";
  }
  // Grid every 25%.
  for (double f = 0; f <= top + 1e-9; f += 0.25) {
    double x = x_of(f);
    o += "<line x1=\"" + num(x) + "\" y1=\"" + std::to_string(kTop - 4) + "\" x2=\"" + num(x) + "\" y2=\"" +
         std::to_string(height - 30) + "\" stroke=\"" + (std::abs(f - 1) < 1e-9 ? "#999" : "#e2e2e2") + "\"/>\n";
    o += "<text x=\"" + num(x) + "\" y=\"" + std::to_string(height - 16) + "\" text-anchor=\"middle\">" +
         num(100 * f, 0) + "%</text>\n";
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    int y0 = kTop + static_cast<int>(i) * group;
    o += "<text x=\"" + std::to_string(kLabelWidth - 8) + "\" y=\"" +
         std::to_string(y0 + static_cast<int>(series.size()) * kBarHeight / 2 + 4) + "\" text-anchor=\"end\">" +
         esc(rows[i]) + "</text>\n";
    for (size_t s = 0; s < series.size(); ++s) {
      auto it = cell.find({rows[i], series[s]});
      int y = y0 + static_cast<int>(s) * kBarHeight;
      if (it == cell.end()) continue;
      const Result& r = *it->second;
      std::string tail;
      if (r.status != "ok") {
        tail = r.status;
      } else {
        double w = x_of(r.fraction) - kLabelWidth;
        o += "<rect x=\"" + std::to_string(kLabelWidth) + "\" y=\"" + std::to_string(y + 1) + "\" width=\"" +
             num(std::max(w, 1.0)) + "\" height=\"" + std::to_string(kBarHeight - 2) + "\" fill=\"" +
             kColors[s % 6] + "\"><title>" + esc(series[s] + " " + r.path) + "</title></rect>\n";
        tail = num(100 * r.fraction) + "% " + (r.bound == "compute" ? "C" : r.bound == "memory" ? "M" : "?") + "  " +
               time_str(r.time_us()) + (r.path == "native" ? "" : "  " + r.path) + (r.unstable ? "  ±" : "");
      }
      double tx = (r.status == "ok" ? x_of(r.fraction) : kLabelWidth) + 4;
      o += "<text x=\"" + num(tx) + "\" y=\"" + std::to_string(y + kBarHeight - 3) + "\" font-size=\"10\" fill=\"#333\">" +
           esc(tail) + "</text>\n";
    }
  }
  o += "</svg>\n";
  std::ofstream f(path);
  if (!f) throw InvalidArgument(str("[bench] cannot write '", path, "'"));
  f << o;
}

}  // namespace porta::cli::bench
