// A minimal SVG writer and a 2-D chart frame (linear or log axes, ticks,
// labels, legend) for the co-design plots. Output is self-contained SVG text
// that browsers render inline in HTML; no scripts, no external resources.
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ember::codesign {

/// Escapes &, <, >, " for SVG/HTML text and attributes.
std::string xmlEscape(const std::string& text);
/// "1.5k", "2.0M", "0.25", "3e-05": short tick and table numbers.
std::string shortNumber(double value);
/// `text` cut to `maxChars` characters with an ellipsis.
std::string truncate(const std::string& text, size_t maxChars);

/// The categorical palette (colour-blind friendly order of the common "tab10").
const std::vector<std::string>& palette();

class SvgCanvas {
 public:
  SvgCanvas(double width, double height);
  double width() const { return width_; }
  double height() const { return height_; }

  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double strokeWidth = 1,
            const std::string& dash = "");
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                double strokeWidth = 1.5, const std::string& dash = "");
  /// `title` becomes a hover tooltip.
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& title = "",
              const std::string& stroke = "");
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "");
  /// anchor: "start", "middle" or "end"; rotate in degrees about (x, y).
  void text(double x, double y, const std::string& text, double size = 12,
            const std::string& anchor = "start", const std::string& fill = "#222", double rotate = 0,
            bool bold = false);
  /// Elements between beginClip and endClip are clipped to the rectangle.
  void beginClip(double x, double y, double w, double h);
  void endClip();
  std::string str() const;

 private:
  double width_, height_;
  std::string body_;
};

struct AxisSpec {
  std::string label;
  double lo = 0, hi = 1;  ///< data range (padded by the chart for linear axes)
  bool log = false;       ///< base-10 ticks (base-2 when log2)
  bool log2 = false;
  bool percent = false;  ///< tick labels as percentages of 1
};

/// A chart frame: maps data to pixels and draws the axes. Callers draw the
/// series through x()/y() on canvas().
class Chart {
 public:
  /// `legendRows` rows of legend entries between the title and the plot
  /// (entries wrap onto the next row when there is more than one).
  Chart(std::string title, AxisSpec xAxis, AxisSpec yAxis, double width = 640, double height = 420,
        int legendRows = 1);
  /// The width of a legend entry, to plan the rows.
  static double legendEntryWidth(const std::string& label) { return 40 + 6.2 * double(label.size()); }

  double x(double value) const;
  double y(double value) const;
  SvgCanvas& canvas() { return canvas_; }
  double plotLeft() const { return left_; }
  double plotRight() const { return right_; }
  double plotTop() const { return top_; }
  double plotBottom() const { return bottom_; }

  /// Adds a legend entry (drawn top-right inside the plot by finish()).
  void legend(const std::string& label, const std::string& colour, bool isLine = false);
  /// Clips what is drawn next to the plot area, until unclip().
  void clip() { canvas_.beginClip(left_, top_, right_ - left_, bottom_ - top_); }
  void unclip() { canvas_.endClip(); }
  /// A message in the middle of the plot (e.g. "no data").
  void note(const std::string& text);
  std::string finish();

 private:
  void drawFrame();
  double map(const AxisSpec& axis, double value, double pixLo, double pixHi) const;
  std::vector<double> ticks(const AxisSpec& axis) const;
  std::string tickLabel(const AxisSpec& axis, double value) const;

  std::string title_;
  AxisSpec xAxis_, yAxis_;
  SvgCanvas canvas_;
  double left_, right_, top_, bottom_;
  int legendRows_ = 1;
  std::vector<std::tuple<std::string, std::string, bool>> legend_;
};

}  // namespace ember::codesign
