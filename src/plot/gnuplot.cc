#include "zeus/plot/gnuplot.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sys/wait.h>

#include "zeus/util/env.h"
#include "zeus/util/file.h"

namespace zeus {
namespace {

// A gnuplot single-quoted string: only '' is special; newlines become spaces.
std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "'";
}

const char* WithStyle(PlotStyle style) {
  switch (style) {
    case PlotStyle::kLines:
      return "lines";
    case PlotStyle::kPoints:
      return "points";
    case PlotStyle::kLinesPoints:
      break;
  }
  return "linespoints";
}

// The script lines drawing `figure` into `svg_path`.
StatusOr<std::string> FigureScript(const PlotFigure& figure, const std::string& svg_path,
                                   int figure_index) {
  std::string script = "reset\nset output " + Quote(svg_path) + "\n";
  // Title lines joined with gnuplot's string concatenation: Quote() flattens
  // newlines.
  std::string title;
  size_t start = 0;
  while (true) {
    const size_t end = figure.title.find('\n', start);
    title +=
        (title.empty() ? "" : " . \"\\n\" . ") + Quote(figure.title.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  script += "set title " + title + "\n";
  // Below a legend below the plot, the x label is lifted clear of it.
  script +=
      "set xlabel " + Quote(figure.x_label) + (figure.legend_below ? " offset 0,0.5" : "") + "\n";
  script += "set ylabel " + Quote(figure.y_label) + "\n";
  script += figure.legend_below
                ? "set grid\nset key outside below center horizontal box height 0.5\n"
                : "set grid\nset key outside right top box\n";
  if (figure.log_x) script += "set logscale x\n";
  if (figure.log_y) script += "set logscale y\n";
  if (figure.y_min.has_value() || figure.y_max.has_value()) {
    const double low = figure.y_min.value_or(0.0), high = figure.y_max.value_or(0.0);
    if (!std::isfinite(low) || !std::isfinite(high) ||
        (figure.y_min.has_value() && figure.y_max.has_value() && !(low < high))) {
      return InvalidArgumentError(
          fmt::format("figure '{}': bad y range [{}, {}]", figure.title, low, high));
    }
    script += fmt::format("set yrange [{}:{}]\n",
                          figure.y_min.has_value() ? fmt::format("{:.10g}", low) : "*",
                          figure.y_max.has_value() ? fmt::format("{:.10g}", high) : "*");
  }
  bool any_right = false;
  std::string plot;
  for (size_t i = 0; i < figure.series.size(); ++i) {
    const PlotSeries& series = figure.series[i];
    if (series.points.empty()) continue;
    const std::string block = fmt::format("$f{}s{}", figure_index, i);
    script += block + " << EOD\n";
    for (const auto& [x, y] : series.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) {
        return InvalidArgumentError(
            fmt::format("figure '{}', series '{}': point ({}, {}) is not "
                        "finite",
                        figure.title, series.title, x, y));
      }
      script += fmt::format("{:.10g} {:.10g}\n", x, y);
    }
    script += "EOD\n";
    any_right = any_right || series.right_axis;
    plot += plot.empty() ? "plot " : ", \\\n     ";
    std::string look;
    if (!series.color.empty()) {
      const bool rgb =
          series.color.size() == 7 && series.color[0] == '#' &&
          series.color.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos;
      if (!rgb) {
        return InvalidArgumentError(
            fmt::format("figure '{}', series '{}': colour '{}' is not "
                        "#rrggbb",
                        figure.title, series.title, series.color));
      }
      look += " linecolor rgb " + Quote(series.color);
    }
    if (series.dashed) look += " dashtype 2";
    plot += fmt::format("{} using 1:2 axes {} with {} linewidth {:.3g} pointsize {:.3g}{} title {}",
                        block, series.right_axis ? "x1y2" : "x1y1", WithStyle(series.style),
                        series.weight, series.weight, look, Quote(series.title));
  }
  if (plot.empty()) {
    return InvalidArgumentError("figure '" + figure.title + "': no point to draw");
  }
  if (any_right)
    script += "set y2label " + Quote(figure.y2_label) + "\nset y2tics\nset ytics nomirror\n";
  if (figure.marker_x.has_value()) {
    if (!std::isfinite(*figure.marker_x)) {
      return InvalidArgumentError("figure '" + figure.title + "': marker is not finite");
    }
    const std::string x = fmt::format("{:.10g}", *figure.marker_x);
    script += "set arrow from " + x + ", graph 0 to " + x +
              ", graph 1 nohead dashtype 2 linewidth 2 linecolor rgb 'black'\n";
    script +=
        "set label " + Quote(figure.marker_label) + " at " + x + ", graph 1 offset 0.5,-1 front\n";
  }
  return script + plot + "\n";
}

// Runs `gnuplot script` with its output in `log`. kNotFound when it cannot be
// executed.
Status RunGnuplot(const std::string& gnuplot, const std::string& script, const std::string& log) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return InternalError(std::string("pipe2: ") + strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) return InternalError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(report[0]);
    const int null = open("/dev/null", O_RDONLY);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null >= 0) dup2(null, STDIN_FILENO);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    execlp(gnuplot.c_str(), gnuplot.c_str(), script.c_str(), static_cast<char*>(nullptr));
    const int e = errno;
    (void)!write(report[1], &e, sizeof(e));
    _exit(127);
  }
  close(report[1]);
  int exec_errno = 0;
  const ssize_t n = read(report[0], &exec_errno, sizeof(exec_errno));
  close(report[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    if (exec_errno == ENOENT) {
      return NotFoundError("cannot draw figures: '" + gnuplot +
                           "' not found (install Debian package gnuplot-nox)");
    }
    return NotFoundError("cannot run '" + gnuplot + "': " + strerror(exec_errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string message = ReadFileToString(log).value_or("");
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    return InternalError("gnuplot failed (" +
                         (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                            : "signal " + std::to_string(WTERMSIG(status))) +
                         "): " + message);
  }
  return Status::Ok();
}

// A temporary directory removed on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = GetEnv("TMPDIR").value_or("/tmp") + "/zeus_plot_XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

Status RenderSvgFigures(const std::vector<std::pair<PlotFigure, std::string>>& figures,
                        const PlotOptions& options) {
  if (figures.empty()) return Status::Ok();
  ScratchDir scratch;
  if (scratch.path().empty()) {
    return IoError(std::string("cannot create a temporary directory for gnuplot: ") +
                   strerror(errno));
  }
  std::string script = fmt::format(
      "set terminal svg size {},{} dynamic noenhanced font 'sans,12' background rgb 'white'\n"
      "set encoding utf8\n",
      options.width, options.height);
  std::vector<std::string> rendered;
  for (size_t i = 0; i < figures.size(); ++i) {
    rendered.push_back(scratch.path() + fmt::format("/figure{}.svg", i));
    ZEUS_ASSIGN_OR_RETURN(std::string lines,
                          FigureScript(figures[i].first, rendered.back(), static_cast<int>(i)));
    script += lines;
  }
  script += "unset output\n";
  const std::string script_path = scratch.path() + "/figures.gp";
  ZEUS_RETURN_IF_ERROR(WriteFileAtomically(script_path, script));
  ZEUS_RETURN_IF_ERROR(RunGnuplot(options.gnuplot, script_path, scratch.path() + "/gnuplot.log"));
  for (size_t i = 0; i < figures.size(); ++i) {
    StatusOr<std::string> svg = ReadFileToString(rendered[i]);
    if (!svg.ok()) {
      return InternalError("gnuplot wrote no figure for '" + figures[i].first.title +
                           "': " + svg.status().message());
    }
    Status written = WriteFileAtomically(figures[i].second, *svg);
    if (!written.ok()) {
      return Status(written.code(),
                    "cannot write figure " + figures[i].second + ": " + written.message());
    }
  }
  return Status::Ok();
}

}  // namespace zeus
