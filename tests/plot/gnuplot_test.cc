// RenderSvgFigures with Debian's gnuplot: well-formed SVG with the titles
// and series asked for, and clear errors (gnuplot missing, a path that
// cannot be written, nothing to draw).

#include "zeus/plot/gnuplot.h"

#include <unistd.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "zeus/util/file.h"

#include "tests/testing/svg_document.h"
#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using zeus::testing::ParseSvg;
using zeus::testing::SvgDocument;
using zeus::testing::TempDir;

PlotFigure TwoAxisFigure() {
  PlotFigure figure;
  figure.title = "Profile of 'resnet' (energy_and_time)";
  figure.x_label = "power limit (W)";
  figure.y_label = "energy per step (J)";
  figure.y2_label = "time per step (s)";
  figure.series.push_back({"energy", {{100, 5.0}, {200, 4.0}, {300, 4.5}}});
  figure.series.push_back({"time", {{100, 0.9}, {200, 0.5}, {300, 0.45}}, PlotStyle::kLines, true});
  figure.series.push_back({"empty series is left out", {}});
  figure.marker_x = 200;
  figure.marker_label = "chosen: 200 W";
  return figure;
}

TEST(GnuplotTest, WritesWellFormedSvgsWithTheirTitlesSeriesAndMarker) {
  TempDir dir;
  PlotFigure second;
  second.title = "cumulative cost";
  second.x_label = "recurrence";
  second.y_label = "cost";
  second.series.push_back({"zeus", {{1, 1}, {2, 3}}, PlotStyle::kPoints});
  ZEUS_ASSERT_OK(
      RenderSvgFigures({{TwoAxisFigure(), dir.File("a.svg")}, {second, dir.File("b.svg")}}));

  ZEUS_ASSERT_OK_AND_ASSIGN(std::string a, ReadFileToString(dir.File("a.svg")));
  ZEUS_ASSERT_OK_AND_ASSIGN(SvgDocument svg, ParseSvg(a));
  EXPECT_EQ(svg.root, "svg");
  EXPECT_TRUE(svg.HasText("energy")) << a;
  EXPECT_TRUE(svg.HasText("time")) << a;
  EXPECT_FALSE(svg.HasText("empty series is left out"));
  EXPECT_TRUE(svg.HasTitle("gnuplot_plot_2"));
  EXPECT_FALSE(svg.HasTitle("gnuplot_plot_3"));
  // Quotes and underscores come through verbatim (noenhanced text).
  EXPECT_TRUE(svg.HasText("Profile of 'resnet' (energy_and_time)")) << a;
  EXPECT_TRUE(svg.HasText("time per step (s)"));
  EXPECT_TRUE(svg.HasText("chosen: 200 W"));
  EXPECT_GT(svg.paths, 3);

  ZEUS_ASSERT_OK_AND_ASSIGN(std::string b, ReadFileToString(dir.File("b.svg")));
  ZEUS_ASSERT_OK_AND_ASSIGN(svg, ParseSvg(b));
  EXPECT_TRUE(svg.HasText("zeus"));
  EXPECT_TRUE(svg.HasText("cumulative cost"));
}

TEST(GnuplotTest, SeriesColoursDashesTheYRangeAndTitleLinesAreDrawn) {
  TempDir dir;
  PlotFigure figure;
  figure.title = "first line\nsecond line";
  figure.x_label = "recurrence";
  figure.y_label = "ratio";
  figure.legend_below = true;
  figure.y_min = 0.25;
  figure.y_max = 1.75;
  PlotSeries blue{"blue", {{1, 0.5}, {2, 0.6}}, PlotStyle::kLines};
  blue.color = "#1f77b4";
  PlotSeries black{"black dashed", {{1, 1.0}, {2, 1.0}}, PlotStyle::kLines};
  black.color = "#000000";
  black.dashed = true;
  PlotSeries high{"clipped", {{1, 40.0}, {2, 30.0}}, PlotStyle::kLines};
  figure.series = {blue, black, high};
  ZEUS_ASSERT_OK(RenderSvgFigures({{figure, dir.File("c.svg")}}));
  ZEUS_ASSERT_OK_AND_ASSIGN(std::string text, ReadFileToString(dir.File("c.svg")));
  ZEUS_ASSERT_OK_AND_ASSIGN(SvgDocument svg, ParseSvg(text));
  EXPECT_TRUE(svg.HasText("first line"));
  EXPECT_TRUE(svg.HasText("second line"));
  EXPECT_FALSE(svg.HasText("first line second line"));
  EXPECT_NE(text.find("stroke='rgb( 31, 119, 180)'"), std::string::npos) << text;
  EXPECT_NE(text.find("stroke='rgb(  0,   0,   0)'"), std::string::npos);
  EXPECT_NE(text.find("stroke-dasharray"), std::string::npos);
  // The y axis spans the range asked for, not the clipped series' 40.
  EXPECT_TRUE(svg.HasText("1.6"));
  EXPECT_FALSE(svg.HasText("40"));

  PlotFigure bad = figure;
  bad.series[0].color = "blue";
  Status status = RenderSvgFigures({{bad, dir.File("bad.svg")}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("series 'blue': colour 'blue' is not #rrggbb"), std::string::npos)
      << status.ToString();
  bad = figure;
  bad.y_min = 2.0;
  status = RenderSvgFigures({{bad, dir.File("bad.svg")}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("bad y range [2, 1.75]"), std::string::npos) << status.ToString();
}

TEST(GnuplotTest, MissingGnuplotNamesTheDebianPackage) {
  TempDir dir;
  PlotOptions options;
  options.gnuplot = dir.File("no-such-gnuplot");
  Status status = RenderSvgFigures({{TwoAxisFigure(), dir.File("a.svg")}}, options);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("gnuplot-nox"), std::string::npos) << status.ToString();
  EXPECT_NE(access(dir.File("a.svg").c_str(), F_OK), 0);
}

TEST(GnuplotTest, AnUnwritablePathIsAnErrorNamingIt) {
  TempDir dir;
  const std::string missing_dir = dir.File("no/such/dir/a.svg");
  Status status = RenderSvgFigures({{TwoAxisFigure(), missing_dir}});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(missing_dir), std::string::npos) << status.ToString();
}

TEST(GnuplotTest, AFigureWithNothingToDrawOrANonFiniteValueIsRefused) {
  TempDir dir;
  PlotFigure empty;
  empty.title = "nothing";
  empty.series.push_back({"none", {}});
  Status status = RenderSvgFigures({{empty, dir.File("e.svg")}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("figure 'nothing': no point to draw"), std::string::npos)
      << status.ToString();
  PlotFigure nan = TwoAxisFigure();
  nan.series[0].points.push_back({400, std::nan("")});
  status = RenderSvgFigures({{nan, dir.File("n.svg")}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("series 'energy'"), std::string::npos) << status.ToString();
}

TEST(GnuplotTest, GnuplotsOwnFailureIsReportedWithItsMessage) {
  TempDir dir;
  // A stand-in "gnuplot" that fails like gnuplot does on a script error.
  const std::string fake =
      dir.WriteFile("gnuplot", "#!/bin/sh\necho 'line 3: bad thing' >&2\nexit 1\n");
  ASSERT_EQ(chmod(fake.c_str(), 0755), 0);
  PlotOptions options;
  options.gnuplot = fake;
  Status status = RenderSvgFigures({{TwoAxisFigure(), dir.File("a.svg")}}, options);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("gnuplot failed (exit 1): line 3: bad thing"), std::string::npos)
      << status.ToString();
}

}  // namespace
}  // namespace zeus
