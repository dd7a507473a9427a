// The subcommands of `gpucts`. Adding one is one function and one row of kCommands (main.cpp).
#pragma once
#include <string>
#include <vector>

namespace cts::cli {

// Each takes the arguments after the subcommand name and returns the exit status.
// Exit status convention: 0 success, 1 the checked thing failed, 2 bad input or usage.
int cmd_fingerprint(const std::vector<std::string>& args);
int cmd_gpus(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_journal_to_junit(const std::vector<std::string>& args);
int cmd_qualify(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_campaign(const std::vector<std::string>& args);

}  // namespace cts::cli
