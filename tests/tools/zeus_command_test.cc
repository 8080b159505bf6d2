// Runs the built `zeus` binary: usage errors exit 2 and name the option and
// the value, every command fails when its output cannot be written, and
// `zeus simulate` refuses a history file of gigabytes without confirmation.

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using zeus::testing::TempDir;

class ZeusCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("ZEUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1); }

  // Runs `<prefix>zeus <args>` through the shell with stdout to
  // `stdout_path` (default: a file read into out_) and stderr into err_;
  // returns the exit code.
  int Run(const std::string& args, const std::string& stdout_path = "",
          const std::string& prefix = "") {
    const std::string out_file = stdout_path.empty() ? dir_.File("out") : stdout_path;
    std::string cmd = prefix + std::string(ZEUS_BINARY) + " " + args + " >" + out_file + " 2>" +
                      dir_.File("err") + " </dev/null";
    int status = std::system(cmd.c_str());
    out_ = stdout_path.empty() ? ReadFileToString(out_file).value_or("") : "";
    err_ = ReadFileToString(dir_.File("err")).value_or("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string Traces() const { return zeus::testing::DataDir() + "/traces/zeus-nsdi23"; }
  std::string Profile() const {
    return "'" + zeus::testing::DataDir() + "/profiles/A40+resnet18+gpu0.csv'";
  }
  std::string Simulate() const {
    return "simulate --quiet --traces '" + Traces() + "' --gpu a40 --dataset cifar100 ";
  }

  TempDir dir_;
  std::string out_;
  std::string err_;
};

TEST_F(ZeusCommandTest, EverySubcommandAnswersVersion) {
  for (const char* command : {"daemon", "exporter", "monitor", "power-limit", "power-limit select",
                              "serve", "show-env", "simulate"}) {
    EXPECT_EQ(Run(std::string(command) + " --version"), 0) << command << ": " << err_;
    EXPECT_THAT(out_, ::testing::StartsWith("zeus ")) << command;
  }
}

TEST_F(ZeusCommandTest, HelpNamesWhatEachValueIsAndKeepsRangesOutOfTheValueName) {
  EXPECT_EQ(Run("simulate --help"), 0);
  EXPECT_THAT(out_, HasSubstr("--traces DIR"));
  EXPECT_THAT(out_, HasSubstr("--history-csv FILE"));
  EXPECT_THAT(out_, HasSubstr("--plot DIR"));
  EXPECT_THAT(out_, HasSubstr("(a number in [0, 1])"));  // --eta's range, in its description.
  EXPECT_EQ(Run("serve --help"), 0);
  EXPECT_THAT(out_, HasSubstr("--db URL"));
  EXPECT_THAT(out_, HasSubstr("--token-file FILE"));
  EXPECT_THAT(out_, HasSubstr("--listen HOST:PORT"));
  for (const char* command : {"daemon", "exporter", "monitor", "power-limit select",
                              "power-limit plot", "serve", "show-env", "simulate"}) {
    EXPECT_EQ(Run(std::string(command) + " --help"), 0) << command;
    EXPECT_THAT(out_, Not(HasSubstr("INT:"))) << command;
    EXPECT_THAT(out_, Not(HasSubstr("FLOAT:"))) << command;
  }
}

TEST_F(ZeusCommandTest, ZeusLogLevelSetsTheLevelOfTheLogsOnStderr) {
  // A CPU socket but no GPU library: `zeus monitor` logs a warning.
  dir_.WriteFile("powercap/intel-rapl:0/name", "package-0\n");
  dir_.WriteFile("powercap/intel-rapl:0/energy_uj", "1000000\n");
  dir_.WriteFile("powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
  const std::string monitor = "monitor --powercap-root " + dir_.path() + "/powercap -- true";
  EXPECT_EQ(Run(monitor), 0);
  EXPECT_THAT(err_, HasSubstr("zeus monitor: not measuring GPUs"));
  EXPECT_EQ(Run(monitor, "", "ZEUS_LOG_LEVEL=ERROR "), 0);
  EXPECT_THAT(err_, Not(HasSubstr("not measuring GPUs")));
  EXPECT_EQ(Run("show-env", "", "ZEUS_LOG_LEVEL=loud "), 2);
  EXPECT_THAT(err_, HasSubstr("ZEUS_LOG_LEVEL='loud': expected trace, debug, info"));
}

TEST_F(ZeusCommandTest, MissingSubcommandIsAUsageErrorListingTheChoices) {
  EXPECT_EQ(Run(""), 2);
  EXPECT_THAT(err_,
              HasSubstr("zeus: missing subcommand (one of: daemon, exporter, frequency, monitor, "
                        "power-limit, serve, show-env, simulate)"));
  EXPECT_EQ(Run("power-limit"), 2);
  EXPECT_THAT(err_, HasSubstr("zeus power-limit: missing subcommand (one of: select, plot)"));
  EXPECT_EQ(Run("frobnicate"), 2);
  EXPECT_THAT(err_, HasSubstr("zeus: unknown subcommand 'frobnicate' (one of: daemon,"));
  EXPECT_EQ(Run("--help"), 0);
  EXPECT_THAT(out_, HasSubstr("Exit status: 0 on success, 2 for a usage error"));
}

TEST_F(ZeusCommandTest, UnknownOptionsAreUsageErrorsInEverySubcommand) {
  for (const char* command :
       {"monitor", "power-limit select --profile x", "power-limit plot --profile x --out y",
        "frequency select --profile x", "show-env", "simulate", "serve", "exporter"}) {
    EXPECT_EQ(Run(std::string(command) + " --no-such-flag"), 2) << command << ": " << err_;
    EXPECT_THAT(err_, HasSubstr("--no-such-flag")) << command;
    EXPECT_THAT(err_, HasSubstr("Run 'zeus ")) << command;
  }
}

TEST_F(ZeusCommandTest, SimulateFlagErrorsNameTheOptionAndTheValue) {
  EXPECT_EQ(Run(Simulate() + "--seeds -5"), 2);
  EXPECT_THAT(err_, HasSubstr("--seeds '-5': '-5' is not a seed or a range"));
  EXPECT_EQ(Run(Simulate() + "--seeds 9-3"), 2);
  EXPECT_THAT(err_, HasSubstr("--seeds '9-3': bad range '9-3'"));
  EXPECT_EQ(Run(Simulate() + "--generate-groups -1"), 2);
  EXPECT_THAT(err_, HasSubstr("--generate-groups: expected a whole number of groups >= 1, got "
                              "'-1'"));
  // An explicit 0 would silently mean "no groups": refused as well.
  EXPECT_EQ(Run(Simulate() + "--generate-groups 0"), 2);
  EXPECT_THAT(err_, HasSubstr("got '0'"));
  EXPECT_EQ(Run(Simulate() + "--eta 1.5"), 2);
  EXPECT_THAT(err_, HasSubstr("--eta: expected a number in [0, 1], got '1.5'"));
  EXPECT_EQ(Run(Simulate() + "--beta 0"), 2);
  EXPECT_THAT(err_, HasSubstr("--beta '0': expected a number > 0, or 'none'"));
  EXPECT_EQ(Run(Simulate() + "--recurrences -3"), 2);
  EXPECT_THAT(err_, HasSubstr("--recurrences: expected a whole number of recurrences >= 0, "
                              "got '-3'"));
  EXPECT_EQ(Run(Simulate() + "--policy fastest"), 2);
  EXPECT_THAT(err_, HasSubstr("--policy: fastest not in"));
}

TEST_F(ZeusCommandTest, SimulateByDefaultPrintsItsSettingsAHeadlineAndAFewPolicies) {
  const std::string a40 = "simulate --quiet --traces '" + Traces() + "' --gpu a40 --seeds 1-2 ";
  ASSERT_EQ(Run(a40), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("eta 0.5: a run's cost = 0.5 x energy (J) + 0.5 x max power"));
  EXPECT_THAT(out_, HasSubstr("beta 2: a policy stops a run once it has cost 2x"));
  EXPECT_THAT(out_, HasSubstr("seeds: 1-2 (every number below is the mean over 2 seeds)"));
  EXPECT_THAT(out_, HasSubstr("policies: zeus, frugal, default, oracle (every policy: --policy "
                              "all)\n"));
  EXPECT_THAT(out_, HasSubstr("\n  a40  zeus (the paper's policy)  "));
  EXPECT_THAT(out_, HasSubstr("\n       frugal (ours)  "));
  EXPECT_THAT(out_, HasSubstr("oracle                6        0.00%       0.00%"));
  EXPECT_THAT(out_, Not(HasSubstr("grid-search")));

  // Every policy with --policy all, and the outlier explained.
  ASSERT_EQ(Run(a40 + "--policy all"), 0) << err_;
  for (const char* policy : {"swarm", "walk-floor", "jump-floor", "grid-search", "power-limit-only",
                             "batch-size-only"}) {
    EXPECT_THAT(out_, HasSubstr("\n" + std::string(policy) + " ")) << policy;
  }
  EXPECT_THAT(out_, HasSubstr("(ours, the better here)"));
  EXPECT_THAT(out_, HasSubstr("Outliers (cost above 2x `default`):\n\n- grid-search on "
                              "a40/movielens-1m costs "));
  EXPECT_THAT(out_, HasSubstr("runs did not reach the target"));

  // Job groups: swarm, frugal with concurrency, instead of frugal.
  ASSERT_EQ(Run(Simulate() + "--seeds 1 --generate-groups 2"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("policies: zeus, swarm, default, oracle (every policy"));
}

TEST_F(ZeusCommandTest, SimulateTakesTheGroupArrivalModelAndReportsIt) {
  // Two groups of three submissions, 10 s apart on average, 40 s long: they
  // overlap. The JSON names the model it drew them from.
  ASSERT_EQ(Run(Simulate() + "--json --seeds 1 --policy default --generate-groups 2 "
                             "--group-submissions 3 --group-interarrival-s 10 "
                             "--group-duration-s 40 --group-runtime-sigma 0"),
            0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("\"submissions_per_group\": 3"));
  EXPECT_THAT(out_, HasSubstr("\"mean_interarrival_s\": 10.0"));
  EXPECT_THAT(out_, HasSubstr("\"mean_duration_s\": 40.0"));
  EXPECT_THAT(out_, HasSubstr("\"runtime_ratio_sigma\": 0.0"));
  EXPECT_THAT(out_, HasSubstr("\"recurrences\": 6"));
  EXPECT_THAT(out_, HasSubstr("\"group_run_time\": \"scaled\""));
  ASSERT_EQ(Run(Simulate() + "--json --seeds 1 --policy default --generate-groups 2 "
                             "--group-run-time submission"),
            0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("\"group_run_time\": \"submission\""));
  // The model's flags need job groups and are range-checked.
  EXPECT_EQ(Run(Simulate() + "--group-run-time submission"), 2);
  EXPECT_THAT(err_, HasSubstr("--group-run-time 'submission': applies to job groups only"));
  EXPECT_EQ(Run(Simulate() + "--generate-groups 2 --group-run-time fixed"), 2);
  EXPECT_THAT(err_, HasSubstr("--group-run-time: fixed not in {scaled,submission}"));
  EXPECT_EQ(Run(Simulate() + "--group-duration-s 40"), 2);
  EXPECT_THAT(err_, HasSubstr("--group-duration-s requires --generate-groups"));
  EXPECT_EQ(Run(Simulate() + "--generate-groups 2 --group-interarrival-s 0"), 2);
  EXPECT_THAT(err_, HasSubstr("--group-interarrival-s: expected a number in"));
  EXPECT_EQ(Run(Simulate() + "--generate-groups 2 --group-submissions 0"), 2);
  EXPECT_THAT(err_, HasSubstr("--group-submissions: expected a whole number of submissions >= 1"));
}

TEST_F(ZeusCommandTest, SimulateRefusesAHistoryOfGigabytesWithoutConfirmation) {
  // Every bundled workload and policy over 20000 seeds: about 10 GB. The
  // refusal comes before any simulation (timeout: a regression must not run
  // for hours).
  const std::string history = dir_.WriteFile("history.csv", "precious\n");
  EXPECT_EQ(
      Run("simulate --quiet --traces '" + Traces() + "' --seeds 1-20000 --history-csv " + history,
          "", "timeout 120 "),
      2);
  EXPECT_THAT(err_, HasSubstr("--history-csv '" + history + "': these runs would write about "));
  EXPECT_THAT(err_, HasSubstr("GB of history"));
  EXPECT_THAT(err_, HasSubstr("--allow-large-history"));
  // Refused before anything was written: the file is untouched.
  EXPECT_EQ(ReadFileToString(history).value_or(""), "precious\n");
  EXPECT_EQ(Run(Simulate() + "--allow-large-history"), 2);
  EXPECT_THAT(err_, HasSubstr("--allow-large-history requires --history-csv"));
}

// Issue 23, item 4: out-of-range trace values aborted `zeus simulate` (exit
// 134, "check failed") or gave an error naming no file. Now: exit 1, the
// file, line, column and range, for the bundled traces with one value changed.
TEST_F(ZeusCommandTest, SimulateRefusesOutOfRangeTraceValuesNamingFileAndLine) {
  const std::string power = ReadFileToString(Traces() + "/summary_power_a40.csv").value();
  const std::string row = "cifar100,shufflenetv2,1024,adadelta,100,27.130000000000003,";
  ASSERT_NE(power.find(row), std::string::npos);
  struct Case {
    std::string replace;
    std::string message;
  };
  const Case cases[] = {
      {"cifar100,shufflenetv2,1024,adadelta,100,1e307,",
       "summary_power_a40.csv:2:6: column 'time_per_epoch': expected a number in [1e-06, 1e+09] "
       "s, got '1e307'"},
      {"cifar100,shufflenetv2,1024,adadelta,100,1e150,", "summary_power_a40.csv:2:6:"},
      {"cifar100,shufflenetv2,1024,adadelta,5000000,27.13,",
       "summary_power_a40.csv:2:5: column 'power_limit': expected an integer in [1, 100000] W, "
       "got '5000000'"},
      {"cifar100,shufflenetv2,1024,adadelta,4294968,27.13,", "got '4294968'"},
  };
  for (const Case& c : cases) {
    TempDir traces;
    for (const char* file : {"jobs.csv", "summary_train.csv"}) {
      traces.WriteFile(file, ReadFileToString(Traces() + "/" + file).value());
    }
    std::string changed = power;
    changed.replace(changed.find(row), row.size(), c.replace);
    traces.WriteFile("summary_power_a40.csv", changed);
    EXPECT_EQ(Run("simulate --quiet --traces '" + traces.path() +
                      "' --gpu a40 --dataset cifar100 --seeds 1",
                  "", "timeout 120 "),
              1)
        << c.replace << ": " << err_;
    EXPECT_THAT(err_, HasSubstr(c.message)) << c.replace;
    EXPECT_THAT(err_, Not(HasSubstr("check failed"))) << c.replace;
  }
}

// Issue 23, item 9: binary garbage in a .json profile was called "truncated".
TEST_F(ZeusCommandTest, PowerLimitSelectCallsABinaryProfileBinary) {
  const std::string profile = dir_.WriteFile("p.json", std::string("\x89PNG\r\n\x1a\n\0\0", 10));
  EXPECT_EQ(Run("power-limit select --profile " + profile), 1);
  EXPECT_THAT(err_, HasSubstr(profile + ": not a power-limit profile: binary data"));
  EXPECT_THAT(err_, Not(HasSubstr("truncated")));
}

TEST_F(ZeusCommandTest, WriteFailuresOnStdoutFail) {
  EXPECT_EQ(Run(Simulate() + "--policy zeus --seeds 1 --json", "/dev/full"), 1);
  EXPECT_THAT(err_, HasSubstr("zeus simulate: cannot write the output to stdout: No space left"));
  EXPECT_EQ(Run("show-env --json", "/dev/full"), 1);
  EXPECT_THAT(err_, HasSubstr("zeus show-env: cannot write the output to stdout"));
  EXPECT_EQ(Run("show-env", "/dev/full"), 1);
  EXPECT_EQ(Run("power-limit select --profile " + Profile(), "/dev/full"), 1);
  EXPECT_THAT(err_, HasSubstr("zeus power-limit select: cannot write the output to stdout"));
  EXPECT_EQ(
      Run("power-limit plot --profile " + Profile() + " --out " + dir_.File("p.svg"), "/dev/full"),
      1);
  EXPECT_THAT(err_, HasSubstr("zeus power-limit plot: cannot write the output to stdout"));
  // The same commands succeed on a writable stdout.
  EXPECT_EQ(Run("power-limit select --profile " + Profile()), 0) << err_;
  EXPECT_THAT(err_, Not(HasSubstr("cannot write")));
}

TEST_F(ZeusCommandTest, PowerLimitSelectRefusesOptionsItsSelectorIgnores) {
  EXPECT_EQ(Run("power-limit select --profile " + Profile() + " --max-slowdown 1.2"), 2);
  EXPECT_THAT(err_, HasSubstr("--max-slowdown 1.2: applies only to --selector slowdown, not "
                              "--selector cost"));
  EXPECT_EQ(Run("power-limit select --profile " + Profile() + " --selector time --eta 0.3"), 2);
  EXPECT_THAT(err_, HasSubstr("--eta 0.3: applies only to --selector cost, not --selector time"));
  EXPECT_EQ(
      Run("power-limit select --profile " + Profile() + " --selector slowdown --max-slowdown 0.5"),
      2);
  EXPECT_THAT(err_, HasSubstr("--max-slowdown: expected a number in [1, 1000000], got '0.5'"));
  EXPECT_EQ(
      Run("power-limit select --profile " + Profile() + " --selector slowdown --max-slowdown 1.2"),
      0)
      << err_;
  EXPECT_EQ(Run("power-limit select --profile " + Profile() + " --eta 0.3"), 0) << err_;
}

}  // namespace
}  // namespace zeus
