// SVG figures drawn by gnuplot (Debian `gnuplot-nox`), run as a child
// process: the caller describes figures as data (series of points, axis
// titles, a marker), gnuplot lays them out and renders them with its svg
// terminal. No SVG geometry is written here.
//
// Thread-safety: RenderSvgFigures is reentrant (each call has its own
// temporary directory and gnuplot process).

#ifndef ZEUS_PLOT_GNUPLOT_H_
#define ZEUS_PLOT_GNUPLOT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zeus/status.h"

namespace zeus {

enum class PlotStyle { kLines, kPoints, kLinesPoints };

// One legend entry: points joined or not.
struct PlotSeries {
  PlotSeries() = default;
  PlotSeries(std::string title_, std::vector<std::pair<double, double>> points_,
             PlotStyle style_ = PlotStyle::kLinesPoints, bool right_axis_ = false,
             double weight_ = 1.0)
      : title(std::move(title_)),
        points(std::move(points_)),
        style(style_),
        right_axis(right_axis_),
        weight(weight_) {}

  // The legend entry.
  std::string title;
  // (x, y) in plot units, drawn in order. A series without points is left out.
  std::vector<std::pair<double, double>> points;
  // Default: lines with points.
  PlotStyle style = PlotStyle::kLinesPoints;
  // Plot against the right-hand y axis (y2_label). Default: left.
  bool right_axis = false;
  // Line width and point size, relative to gnuplot's. Default: 1.
  double weight = 1.0;
  // "#rrggbb". Default (empty): gnuplot's colour for the series' position.
  std::string color;
  // A dashed line. Default: solid.
  bool dashed = false;
};

struct PlotFigure {
  // Lines separated by '\n'.
  std::string title;
  std::string x_label;
  std::string y_label;
  // Right-hand axis title; used when a series has right_axis.
  std::string y2_label;
  std::vector<PlotSeries> series;
  // Logarithmic axes (every value must then be > 0). Default: linear.
  bool log_x = false;
  bool log_y = false;
  // The legend below the plot, in rows (for many series or long titles,
  // which a legend on the right would squeeze the plot for). Default: right.
  bool legend_below = false;
  // The left y axis's range; lines beyond it are clipped at its edge.
  // Default: gnuplot's autoscale. REQUIRES: y_min < y_max when both are set.
  std::optional<double> y_min;
  std::optional<double> y_max;
  // A vertical line at this x, labelled `marker_label` (e.g. the chosen
  // power limit). Default: none.
  std::optional<double> marker_x;
  std::string marker_label;
};

struct PlotOptions {
  // The gnuplot executable, a path or a name looked up in PATH.
  // Default: gnuplot.
  std::string gnuplot = "gnuplot";
  // Figure size in SVG pixels. Default: 900 x 560.
  int width = 900;
  int height = 560;
};

// Renders every (figure, path) to an SVG file at `path` with one gnuplot run.
// Each file is written atomically, and only after gnuplot rendered them all.
// kNotFound naming the package when gnuplot is not installed;
// kInvalidArgument naming the figure when it has no point to draw or a
// number is not finite (or not positive on a logarithmic axis); kInternal with gnuplot's own
// message when it fails; kIoError / kPermissionDenied naming the path when a file cannot be written
// (the files before it are written).
Status RenderSvgFigures(const std::vector<std::pair<PlotFigure, std::string>>& figures,
                        const PlotOptions& options = {});

}  // namespace zeus

#endif  // ZEUS_PLOT_GNUPLOT_H_
