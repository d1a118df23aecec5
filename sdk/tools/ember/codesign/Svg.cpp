#include "Svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace ember::codesign {
namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string xmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
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

std::string shortNumber(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  double a = std::fabs(v);
  static const std::pair<double, const char*> kSuffixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (auto [scale, suffix] : kSuffixes) {
    if (a >= scale) {
      std::snprintf(buf, sizeof buf, "%.3g%s", v / scale, suffix);
      return buf;
    }
  }
  if (a != 0 && a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2g", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string truncate(const std::string& text, size_t maxChars) {
  if (text.size() <= maxChars) return text;
  size_t cut = maxChars - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
  return text.substr(0, cut) + "…";
}

const std::vector<std::string>& palette() {
  static const std::vector<std::string> kColours = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColours;
}

SvgCanvas::SvgCanvas(double width, double height) : width_(width), height_(height) {}

void SvgCanvas::line(double x1, double y1, double x2, double y2, const std::string& stroke,
                     double strokeWidth, const std::string& dash) {
  body_ += "<line x1=\"" + fmt(x1) + "\" y1=\"" + fmt(y1) + "\" x2=\"" + fmt(x2) + "\" y2=\"" + fmt(y2) +
           "\" stroke=\"" + stroke + "\" stroke-width=\"" + fmt(strokeWidth) + "\"" +
           (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
}

void SvgCanvas::polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                         double strokeWidth, const std::string& dash) {
  if (points.size() < 2) return;
  std::string list;
  for (auto [x, y] : points) list += fmt(x) + "," + fmt(y) + " ";
  body_ += "<polyline fill=\"none\" points=\"" + list + "\" stroke=\"" + stroke + "\" stroke-width=\"" +
           fmt(strokeWidth) + "\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
}

void SvgCanvas::circle(double cx, double cy, double r, const std::string& fill, const std::string& title,
                       const std::string& stroke) {
  body_ += "<circle cx=\"" + fmt(cx) + "\" cy=\"" + fmt(cy) + "\" r=\"" + fmt(r) + "\" fill=\"" + fill +
           "\"" + (stroke.empty() ? "" : " stroke=\"" + stroke + "\" stroke-width=\"1.5\"") + ">" +
           (title.empty() ? "" : "<title>" + xmlEscape(title) + "</title>") + "</circle>\n";
}

void SvgCanvas::rect(double x, double y, double w, double h, const std::string& fill,
                     const std::string& title) {
  if (w <= 0 || h <= 0) return;
  body_ += "<rect x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" width=\"" + fmt(w) + "\" height=\"" + fmt(h) +
           "\" fill=\"" + fill + "\">" + (title.empty() ? "" : "<title>" + xmlEscape(title) + "</title>") +
           "</rect>\n";
}

void SvgCanvas::text(double x, double y, const std::string& text, double size, const std::string& anchor,
                     const std::string& fill, double rotate, bool bold) {
  body_ += "<text x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" font-size=\"" + fmt(size) + "\" text-anchor=\"" +
           anchor + "\" fill=\"" + fill + "\"" + (bold ? " font-weight=\"bold\"" : "") +
           (rotate != 0 ? " transform=\"rotate(" + fmt(rotate) + " " + fmt(x) + " " + fmt(y) + ")\"" : "") +
           ">" + xmlEscape(text) + "</text>\n";
}

void SvgCanvas::beginClip(double x, double y, double w, double h) {
  // Ids must be unique across the SVGs inlined in one HTML page, and the same
  // for the same chart whichever process draws it (a sweep's report.html is
  // byte-identical on the local pool and on Slurm): a hash of the chart so far.
  uint64_t hash = 1469598103934665603ull;
  for (char c : body_ + fmt(x) + fmt(y) + fmt(w) + fmt(h)) hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  std::string id = std::string("ember-clip-") + hex;
  body_ += "<clipPath id=\"" + id + "\"><rect x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" width=\"" + fmt(w) +
           "\" height=\"" + fmt(h) + "\"/></clipPath>\n<g clip-path=\"url(#" + id + ")\">\n";
}

void SvgCanvas::endClip() { body_ += "</g>\n"; }

std::string SvgCanvas::str() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(width_) + "\" height=\"" + fmt(height_) +
         "\" viewBox=\"0 0 " + fmt(width_) + " " + fmt(height_) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" "
         "height=\"100%\" "
         "fill=\"#ffffff\"/>\n" +
         body_ + "</svg>\n";
}

Chart::Chart(std::string title, AxisSpec xAxis, AxisSpec yAxis, double width, double height, int legendRows)
    : title_(std::move(title)),
      xAxis_(std::move(xAxis)),
      yAxis_(std::move(yAxis)),
      canvas_(width, height),
      legendRows_(std::max(1, legendRows)) {
  left_ = 78;
  right_ = width - 20;
  top_ = 50 + 15 * (legendRows_ - 1);  // the title, then the rows of legend entries
  bottom_ = height - 52;
  for (AxisSpec* axis : {&xAxis_, &yAxis_}) {
    if (axis->log || axis->log2) {
      double base = axis->log2 ? 2 : 10;
      // Whole decades (or octaves) around the data.
      double lo = axis->lo > 0 ? axis->lo : 1, hi = axis->hi > 0 ? axis->hi : lo;
      axis->lo = std::pow(base, std::floor(std::log(lo) / std::log(base) + 1e-9));
      axis->hi = std::pow(base, std::ceil(std::log(hi) / std::log(base) - 1e-9));
      if (axis->hi <= axis->lo) axis->hi = axis->lo * base;
    } else {
      if (!(axis->hi > axis->lo)) axis->hi = axis->lo + 1;
      double pad = (axis->hi - axis->lo) * 0.05;
      if (axis->lo != 0) axis->lo -= pad;
      axis->hi += pad;
    }
  }
  drawFrame();
}

void Chart::drawFrame() {
  // Grid and axes first, so that the series drawn afterwards sit on top.
  SvgCanvas& c = canvas_;
  for (double t : ticks(xAxis_)) {
    double px = x(t);
    c.line(px, top_, px, bottom_, "#e4e4e4");
    c.line(px, bottom_, px, bottom_ + 4, "#444");
    c.text(px, bottom_ + 17, tickLabel(xAxis_, t), 11, "middle", "#333");
  }
  for (double t : ticks(yAxis_)) {
    double py = y(t);
    c.line(left_, py, right_, py, "#e4e4e4");
    c.line(left_ - 4, py, left_, py, "#444");
    c.text(left_ - 7, py + 4, tickLabel(yAxis_, t), 11, "end", "#333");
  }
  c.line(left_, bottom_, right_, bottom_, "#444");
  c.line(left_, top_, left_, bottom_, "#444");
}

double Chart::map(const AxisSpec& axis, double value, double pixLo, double pixHi) const {
  double t;
  if (axis.log || axis.log2) {
    value = std::max(value, axis.lo * 1e-3);
    t = (std::log(value) - std::log(axis.lo)) / (std::log(axis.hi) - std::log(axis.lo));
  } else {
    t = (value - axis.lo) / (axis.hi - axis.lo);
  }
  return pixLo + t * (pixHi - pixLo);
}

double Chart::x(double value) const { return map(xAxis_, value, left_, right_); }
double Chart::y(double value) const { return map(yAxis_, value, bottom_, top_); }

std::vector<double> Chart::ticks(const AxisSpec& axis) const {
  std::vector<double> out;
  if (axis.log || axis.log2) {
    double base = axis.log2 ? 2 : 10;
    double steps = std::round(std::log(axis.hi / axis.lo) / std::log(base));
    double stride = std::max(1.0, std::ceil(steps / 8));
    for (double e = 0; e <= steps + 1e-9; e += stride) out.push_back(axis.lo * std::pow(base, e));
    return out;
  }
  double span = axis.hi - axis.lo;
  double step = std::pow(10, std::floor(std::log10(span / 5)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (span / (step * m) <= 7) {
      step *= m;
      break;
    }
  for (double v = std::ceil(axis.lo / step) * step; v <= axis.hi + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return out;
}

std::string Chart::tickLabel(const AxisSpec& axis, double value) const {
  if (axis.percent) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", value * 100);
    return buf;
  }
  return shortNumber(value);
}

void Chart::legend(const std::string& label, const std::string& colour, bool isLine) {
  legend_.emplace_back(label, colour, isLine);
}

void Chart::note(const std::string& text) {
  canvas_.text((left_ + right_) / 2, (top_ + bottom_) / 2, text, 14, "middle", "#888");
}

std::string Chart::finish() {
  SvgCanvas& c = canvas_;
  c.text(left_, 22, truncate(title_, size_t((canvas_.width() - left_) / 8.6)), 15, "start", "#111", 0, true);
  c.text((left_ + right_) / 2, bottom_ + 38, xAxis_.label, 12, "middle", "#222");
  c.text(18, (top_ + bottom_) / 2, yAxis_.label, 12, "middle", "#222", -90);
  // Legend: one row between the title and the plot, so that it hides no data.
  double lx = left_;
  double ly = 40;
  for (const auto& [label, colour, isLine] : legend_) {
    if (legendRows_ > 1 && lx > left_ && lx + legendEntryWidth(label) - 20 > right_) {
      lx = left_;
      ly += 15;
    }
    if (isLine)
      c.line(lx, ly - 4, lx + 16, ly - 4, colour, 2.5);
    else
      c.circle(lx + 8, ly - 4, 5, colour);
    c.text(lx + 22, ly, label, 11, "start", "#222");
    lx += legendEntryWidth(label);
  }
  return c.str();
}

}  // namespace ember::codesign
