// A fixture that runs the `zeus` binary under test and keeps what it printed.

#ifndef ZEUS_TESTS_TOOLS_COMMAND_TEST_BASE_H_
#define ZEUS_TESTS_TOOLS_COMMAND_TEST_BASE_H_

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "zeus/util/file.h"

#include "tests/testing/temp_dir.h"

namespace zeus::testing {

class CommandTestBase : public ::testing::Test {
 protected:
  // Runs `zeus <args>`; returns its exit code (-1 when it did not exit) and
  // leaves its stdout and stderr in out_ and err_.
  int RunZeus(const std::string& args) {
    const std::string cmd =
        std::string(ZEUS_BINARY) + " " + args + " >" + dir_.File("out") + " 2>" + dir_.File("err");
    const int status = std::system(cmd.c_str());
    out_ = ReadFileToString(dir_.File("out")).value_or("");
    err_ = ReadFileToString(dir_.File("err")).value_or("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  TempDir dir_;
  std::string out_;
  std::string err_;
};

}  // namespace zeus::testing

#endif  // ZEUS_TESTS_TOOLS_COMMAND_TEST_BASE_H_
