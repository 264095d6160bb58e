// A small SVG line-chart writer: axes with ticks, one polyline per series, a legend.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "predictor/internal.h"
#include "predictor/predictor.h"

namespace octet {
namespace predictor {
namespace {

constexpr double kW = 720, kH = 440, kLeft = 70, kRight = 170, kTop = 40, kBottom = 60;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Round tick steps (1, 2, 5 x 10^k) over [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : 5 * mag;
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(t);
  return out;
}

}  // namespace

std::string render_svg(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_x) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y1 = 0;
  for (const auto& s : series) {
    if (s.x.size() != s.y.size()) fail("render_svg", "series '" + s.label + "': x and y differ");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (log_x && !(s.x[i] > 0)) fail("render_svg", "log x axis needs positive x");
      const double x = log_x ? std::log10(s.x[i]) : s.x[i];
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      if (std::isfinite(s.y[i])) y1 = std::max(y1, s.y[i]);
    }
  }
  if (!(x1 >= x0)) fail("render_svg", "no points to plot");
  if (x1 == x0) x1 = x0 + 1;
  if (y1 <= 0) y1 = 1;
  y1 *= 1.08;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) { return kLeft + ((log_x ? std::log10(x) : x) - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + ph - y / y1 * ph; };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kW / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << escape(title) << "</text>\n";
  // Axes, grid and ticks.
  o << "<g stroke=\"#888\" fill=\"none\"><rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\""
    << pw << "\" height=\"" << ph << "\"/></g>\n";
  for (double t : ticks(0, y1)) {
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << py(t) << "\" y2=\""
      << py(t) << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\"" << py(t) + 4
      << "\" text-anchor=\"end\">" << num(t) << "</text>\n";
  }
  std::vector<double> xt;
  for (double t : ticks(x0, x1)) xt.push_back(log_x ? std::pow(10.0, t) : t);
  if (log_x && xt.size() < 2) xt = {std::pow(10.0, x0), std::pow(10.0, x1)};
  for (double t : xt) {
    o << "<line x1=\"" << px(t) << "\" x2=\"" << px(t) << "\" y1=\"" << kTop + ph << "\" y2=\""
      << kTop + ph + 5 << "\" stroke=\"#888\"/><text x=\"" << px(t) << "\" y=\"" << kTop + ph + 18
      << "\" text-anchor=\"middle\">" << num(t) << "</text>\n";
  }
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 15 << "\" text-anchor=\"middle\">"
    << escape(x_label) << (log_x ? " (log scale)" : "") << "</text>\n"
    << "<text transform=\"translate(18," << kTop + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << escape(y_label) << "</text>\n";
  // One polyline per series, then the legend.
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << escape(s.color)
      << "\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) o << px(s.x[i]) << "," << py(s.y[i]) << " ";
    o << "\"/>\n";
    const double ly = kTop + 14 + 20 * k;
    o << "<line x1=\"" << kW - kRight + 12 << "\" x2=\"" << kW - kRight + 36 << "\" y1=\"" << ly
      << "\" y2=\"" << ly << "\" stroke-width=\"2\" stroke=\"" << escape(s.color)
      << "\"/><text x=\"" << kW - kRight + 42 << "\" y=\"" << ly + 4 << "\">" << escape(s.label)
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace predictor
}  // namespace octet
