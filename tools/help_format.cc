#include "tools/help_format.h"

#include <map>
#include <string>

namespace zeus::cli {
namespace {

// Value names of options whose values are paths, addresses or lists, by long
// name; each applies only where CLI11 would print TEXT.
const std::map<std::string, std::string>& ValueNames() {
  static const auto* const names = new std::map<std::string, std::string>{
      {"chartjs", "FILE"},       {"cpus", "LIST"},
      {"csv", "FILE"},           {"db", "URL"},
      {"gpus", "LIST"},          {"groups", "FILE"},
      {"history-csv", "FILE"},   {"listen", "HOST:PORT"},
      {"out", "FILE"},           {"output", "FILE"},
      {"plot", "DIR"},           {"powercap-root", "DIR"},
      {"profile", "FILE"},       {"signing-key-path", "FILE"},
      {"socket", "PATH"},        {"state-file", "FILE"},
      {"tcp", "[HOST:]PORT"},    {"token-file", "FILE"},
      {"traces", "DIR"},         {"seeds", "RANGE"},
      {"socket-group", "GROUP"}, {"group", "GROUP"},
      {"socket-mode", "MODE"},   {"dataset", "NAME"},
      {"gpu", "NAME"},           {"selector", "NAME"},
      {"enable", "LIST"},
  };
  return *names;
}

void TidyOption(CLI::Option* option) {
  const std::string full = option->get_type_name();
  if (full.empty()) return;  // A flag.
  const std::string base = full.substr(0, full.find(':'));
  std::string ranges;
  for (int i = 0;; ++i) {
    CLI::Validator* validator = nullptr;
    try {
      validator = option->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    std::string text = validator->get_description();
    if (text.empty() || text.front() == '{') continue;  // Choices stay: {a,b}.
    if (text.rfind(base + " ", 0) == 0) text = text.substr(base.size() + 1);  // "INT in [..]"
    ranges += (ranges.empty() ? "" : "; ") + text;
    validator->description("");
  }
  if (!ranges.empty()) {
    const std::string description = option->get_description();
    option->description(description + (description.empty() ? "" : " ") + "(" + ranges + ")");
  }
  if (base == "TEXT" && !option->get_lnames().empty()) {
    auto it = ValueNames().find(option->get_lnames().front());
    if (it != ValueNames().end()) option->type_name(it->second);
  }
}

}  // namespace

void TidyHelp(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    TidyOption(option);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) TidyHelp(*sub);
}

}  // namespace zeus::cli
