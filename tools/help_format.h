// The help of every `zeus` command, tidied once for all of them after they
// are registered: value names that say what to give (FILE, DIR, URL,
// HOST:PORT, LIST) instead of TEXT, and a validator's range moved from the
// value name ("INT:INT in [1 - 4096]") to the end of the option's
// description.

#ifndef ZEUS_TOOLS_HELP_FORMAT_H_
#define ZEUS_TOOLS_HELP_FORMAT_H_

#include <CLI/CLI.hpp>

namespace zeus::cli {

// Applies the rules above to `app`'s options and its subcommands', recursively.
void TidyHelp(CLI::App& app);

}  // namespace zeus::cli

#endif  // ZEUS_TOOLS_HELP_FORMAT_H_
