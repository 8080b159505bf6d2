// Runs the built `zeus` binary's plots: `zeus simulate --plot DIR`,
// `zeus power-limit plot` and `zeus frequency plot` write well-formed SVGs (parsed with expat) with
// the expected titles and series; an unwritable directory or a missing
// gnuplot is a clear error that loses none of the printed results.

#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "zeus/core/frequency_profile.h"
#include "zeus/util/file.h"
#include "zeus/util/strings.h"

#include "tests/testing/svg_document.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/frequency_profiles.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;
using zeus::testing::ParseSvg;
using zeus::testing::SvgDocument;
using zeus::testing::TempDir;

class PlotCommandTest : public ::testing::Test {
 protected:
  // Runs `<prefix>zeus <args>` through the shell; stdout into out_, stderr
  // into err_; returns the exit code.
  int Run(const std::string& args, const std::string& prefix = "") {
    std::string cmd = prefix + std::string(ZEUS_BINARY) + " " + args + " >" + dir_.File("out") +
                      " 2>" + dir_.File("err") + " </dev/null";
    int status = std::system(cmd.c_str());
    out_ = ReadFileToString(dir_.File("out")).value_or("");
    err_ = ReadFileToString(dir_.File("err")).value_or("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // The SVG at `path`, parsed; fails the test when missing or malformed.
  static SvgDocument Svg(const std::string& path) {
    StatusOr<std::string> text = ReadFileToString(path);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    if (!text.ok()) return {};
    StatusOr<SvgDocument> svg = ParseSvg(*text);
    EXPECT_TRUE(svg.ok()) << path << ": " << svg.status().ToString();
    if (!svg.ok()) return {};
    EXPECT_EQ(svg->root, "svg") << path;
    return *svg;
  }

  std::string Simulate() const {
    return "simulate --quiet --traces '" + zeus::testing::DataDir() +
           "/traces/zeus-nsdi23' --gpu a40 --dataset cifar100 --policy zeus --policy default "
           "--seeds 1-2 --json ";
  }
  std::string Profile() const {
    return "'" + zeus::testing::DataDir() + "/profiles/A40+resnet18+gpu0.csv'";
  }

  // What a knob's figure names: the unit after the chosen value, the x axis
  // and the end of the title.
  struct FigureWords {
    std::string unit;
    std::string x_label;
    std::string title_end;
  };

  // `zeus <command> plot` prints what `select` prints for `selector` and
  // draws profile.svg marking it, in the knob's `words`.
  void ExpectPlotMarksWhatSelectChooses(const std::string& command, const std::string& profile,
                                        const std::string& selector, const FigureWords& words) {
    ASSERT_EQ(Run(command + " select --profile " + profile + " " + selector), 0) << err_;
    const std::string chosen(Trim(out_));
    ASSERT_FALSE(chosen.empty());
    const std::string svg_path = dir_.File("profile.svg");
    ASSERT_EQ(Run(command + " plot --profile " + profile + " --out '" + svg_path + "' " + selector),
              0)
        << err_;
    EXPECT_EQ(Trim(out_), chosen);
    SvgDocument svg = Svg(svg_path);
    EXPECT_TRUE(svg.HasText("chosen: " + chosen + " " + words.unit + " (")) << selector;
    EXPECT_TRUE(svg.HasText("energy per step (J)"));
    EXPECT_TRUE(svg.HasText("time per step (s)"));
    EXPECT_TRUE(svg.HasText(words.x_label));
    EXPECT_TRUE(svg.HasText(words.title_end));
  }

  // The results of `zeus simulate --json` in out_ are complete.
  void ExpectCompleteJson() const {
    nlohmann::json j = nlohmann::json::parse(out_, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out_;
    ASSERT_EQ(j["results"].size(), 2u) << out_;
    EXPECT_EQ(j["results"][0]["dataset"], "cifar100");
  }

  TempDir dir_;
  std::string out_;
  std::string err_;
};

TEST_F(PlotCommandTest, SimulatePlotWritesCostAndEnergyTimeFigures) {
  const std::string plots = dir_.File("plots/nested");  // Created when missing.
  ASSERT_EQ(Run(Simulate() + "--plot '" + plots + "'"), 0) << err_;
  ExpectCompleteJson();

  SvgDocument cost = Svg(plots + "/cost_a40_cifar100.svg");
  EXPECT_TRUE(
      cost.HasText("Cumulative cost relative to default: cifar100 on a40 (mean of 2 seeds, eta "
                   "0.5)"));
  EXPECT_TRUE(cost.HasText("cumulative cost / default's expected cost (1 = default)"));
  EXPECT_TRUE(cost.HasText("recurrence"));
  EXPECT_TRUE(cost.HasText("zeus"));
  EXPECT_TRUE(cost.HasText("default"));
  EXPECT_TRUE(cost.HasTitle("gnuplot_plot_2"));  // One series per policy.
  EXPECT_FALSE(cost.HasTitle("gnuplot_plot_3"));

  SvgDocument plane = Svg(plots + "/energy_time_a40_cifar100_zeus.svg");
  EXPECT_TRUE(plane.HasText("Energy-time plane: cifar100 on a40, path of zeus (seed 1)"));
  EXPECT_TRUE(plane.HasText("zeus's path"));
  EXPECT_TRUE(plane.HasText("batch size 128"));
  EXPECT_TRUE(plane.HasText("oracle ("));
  EXPECT_TRUE(plane.HasText("expected energy to target (J)"));
  SvgDocument default_plane = Svg(plots + "/energy_time_a40_cifar100_default.svg");
  EXPECT_TRUE(default_plane.HasText("default's path"));
  // Nothing else: one cost figure and one plane per policy.
  EXPECT_FALSE(ReadFileToString(plots + "/cost_a40_imagenet.svg").ok());

  // The index shows the cost figure and links every plane.
  StatusOr<std::string> index = ReadFileToString(plots + "/index.html");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_THAT(*index, HasSubstr("<img src=\"cost_a40_cifar100.svg\""));
  EXPECT_THAT(*index, HasSubstr("<a href=\"energy_time_a40_cifar100_zeus.svg\">zeus</a>"));
  EXPECT_THAT(*index, HasSubstr("<a href=\"energy_time_a40_cifar100_default.svg\">default</a>"));
  EXPECT_THAT(*index, HasSubstr("<a href=\"#a40_cifar100\">cifar100 on a40</a>"));
}

TEST_F(PlotCommandTest, SimulatePlotGivesEachPolicyItsColourAndKeepsAnOutlierOffTheScale) {
  const std::string plots = dir_.File("plots");
  ASSERT_EQ(Run("simulate --quiet --traces '" + zeus::testing::DataDir() +
                "/traces/zeus-nsdi23' --gpu a40 --dataset movielens-1m --policy all --seeds 1 "
                "--json --plot '" +
                plots + "'"),
            0)
      << err_;
  StatusOr<std::string> text = ReadFileToString(plots + "/cost_a40_movielens-1m.svg");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  // Ten policies, ten colours.
  std::set<std::string> colours;
  for (size_t at = text->find("stroke='rgb("); at != std::string::npos;
       at = text->find("stroke='rgb(", at + 1)) {
    colours.insert(text->substr(at, text->find(')', at) - at));
  }
  EXPECT_GE(colours.size(), 10u) << *text;
  // grid-search costs hundreds of times the default here: off the scale,
  // which keeps the other nine readable; its values are in the title.
  SvgDocument cost = Svg(plots + "/cost_a40_movielens-1m.svg");
  EXPECT_TRUE(cost.HasText("grid-search (off scale)"));
  EXPECT_TRUE(cost.HasText("off scale: grid-search, up to "));
  EXPECT_TRUE(cost.HasText("zeus"));
  EXPECT_FALSE(cost.HasText("zeus (off scale)"));
  EXPECT_TRUE(cost.HasText("1.2"));    // A tick within the readable range.
  EXPECT_FALSE(cost.HasText("1000"));  // Not stretched to the outlier.
}

TEST_F(PlotCommandTest, SimulateWithAnUnwritablePlotDirStillPrintsItsResults) {
  const std::string file = dir_.WriteFile("a-file", "not a directory\n");
  EXPECT_EQ(Run(Simulate() + "--plot '" + file + "/plots'"), 1);
  EXPECT_THAT(err_, HasSubstr("zeus simulate: --plot " + file + "/plots: cannot create directory"));
  EXPECT_THAT(err_, HasSubstr("the results above are complete"));
  ExpectCompleteJson();
  // The table too.
  EXPECT_EQ(
      Run("simulate --quiet --traces '" + zeus::testing::DataDir() +
          "/traces/zeus-nsdi23' --gpu a40 --dataset cifar100 --seeds 1 --plot '" + file + "'"),
      1);
  EXPECT_THAT(out_, HasSubstr("cifar100"));
  EXPECT_THAT(out_, HasSubstr("oracle"));
}

TEST_F(PlotCommandTest, SimulateWithoutGnuplotNamesThePackageAndKeepsTheResults) {
  EXPECT_EQ(Run(Simulate() + "--plot '" + dir_.File("plots") + "'", "PATH=/nonexistent "), 1);
  EXPECT_THAT(err_, HasSubstr("'gnuplot' not found (install Debian package gnuplot-nox)"));
  ExpectCompleteJson();
}

TEST_F(PlotCommandTest, PowerLimitPlotMarksTheLimitSelectWouldChoose) {
  for (const std::string selector : {"--selector cost --eta 0.8", "--selector energy"}) {
    ExpectPlotMarksWhatSelectChooses("power-limit", Profile(), selector,
                                     {"W", "power limit (W)", "A40+resnet18+gpu0.csv (1 GPU)"});
  }
  EXPECT_TRUE(Svg(dir_.File("profile.svg")).HasText("(energy selector)"));
}

TEST_F(PlotCommandTest, PowerLimitPlotErrorsNameWhatWentWrong) {
  EXPECT_EQ(Run("power-limit plot --profile " + Profile() + " --out '" +
                dir_.File("no/such/dir/p.svg") + "'"),
            1);
  EXPECT_THAT(err_, HasSubstr("zeus power-limit plot: cannot write figure " +
                              dir_.File("no/such/dir/p.svg")));
  EXPECT_EQ(Run("power-limit plot --profile " + Profile() + " --out '" + dir_.File("p.svg") + "'",
                "PATH=/nonexistent "),
            1);
  EXPECT_THAT(err_, HasSubstr("gnuplot-nox"));
  EXPECT_EQ(Run("power-limit plot --profile " + Profile()), 2);
  EXPECT_THAT(err_, HasSubstr("--out is required"));
  EXPECT_EQ(Run("power-limit plot --profile '" + dir_.File("missing.csv") + "' --out '" +
                dir_.File("p.svg") + "'"),
            1);
  EXPECT_THAT(err_, HasSubstr("missing.csv"));
  EXPECT_EQ(Run("power-limit plot --profile " + Profile() + " --selector time --eta 0.3 --out '" +
                dir_.File("p.svg") + "'"),
            2);
  EXPECT_THAT(err_, HasSubstr("--eta 0.3: applies only to --selector cost"));
  EXPECT_FALSE(ReadFileToString(dir_.File("p.svg")).ok());
}

TEST_F(PlotCommandTest, FrequencyPlotMarksTheClockSelectWouldChoose) {
  const std::string profile = dir_.File("clocks.json");
  ZEUS_ASSERT_OK(SaveFrequencyProfile(profile, zeus::testing::ThreeClockProfile(2)));
  for (const std::string selector : {"--selector cost --eta 0.8", "--selector energy"}) {
    ExpectPlotMarksWhatSelectChooses("frequency", "'" + profile + "'", selector,
                                     {"MHz", "SM clock (MHz)", "clocks.json (2 GPUs)"});
  }
  EXPECT_TRUE(Svg(dir_.File("profile.svg")).HasText("chosen: 1080 MHz (energy selector)"));
  // The same errors as `zeus power-limit plot`, named for this command.
  EXPECT_EQ(Run("frequency plot --profile '" + profile + "' --out '" +
                dir_.File("no/such/dir/c.svg") + "'"),
            1);
  EXPECT_THAT(err_, HasSubstr("zeus frequency plot: cannot write figure"));
  EXPECT_EQ(Run("frequency plot --profile '" + profile + "'"), 2);
  EXPECT_THAT(err_, HasSubstr("--out is required"));
  EXPECT_EQ(Run("frequency plot --profile " + Profile() + " --out '" + dir_.File("c.svg") + "'"),
            1);
  EXPECT_THAT(err_, HasSubstr("zeus frequency plot: "));
  EXPECT_FALSE(ReadFileToString(dir_.File("c.svg")).ok());
}

}  // namespace
}  // namespace zeus
