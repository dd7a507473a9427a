// The subcommands of `gpucts`. Adding one is a spec, a body and one row of kCommands (main.cpp).
#pragma once
#include <string>
#include <vector>

#include "cli/args.hpp"

namespace cts::cli {

// What a subcommand accepts (CLI11 parses it in main.cpp; -h/--help and --version come with every
// one): options that take a value, each of which may be given more than once, and switches, all
// without their "--"; `usage` is what --help prints.
struct CommandSpec {
  std::vector<std::string> valued;
  std::vector<std::string> flags;
  const char* usage;
};

// Each body takes what was given and returns the exit status.
// Exit status convention: 0 success, 1 the checked thing failed, 2 bad input or usage.
extern const CommandSpec kFingerprintSpec, kGpusSpec, kCheckSpec, kJournalToJunitSpec, kQualifySpec,
    kReportSpec, kCampaignSpec;
int cmd_fingerprint(const Args& a);
int cmd_gpus(const Args& a);
int cmd_check(const Args& a);
int cmd_journal_to_junit(const Args& a);
int cmd_qualify(const Args& a);
int cmd_report(const Args& a);
int cmd_campaign(const Args& a);

}  // namespace cts::cli
