// The subcommands of `gpucts`. Adding one is a spec, a body and one row of kCommands (main.cpp).
#pragma once
#include <string>
#include <vector>

#include "cli/args.hpp"

namespace cts::cli {

// One option as CLI11 declares it: its name without "--", what its value is ("DIR"; empty for a
// switch) and one line for --help.
struct Opt {
  std::string name, value, help;
  Opt(const char* n) : name(n) {}  // NOLINT: a bare name reads as an undescribed option
  Opt(const char* n, const char* h) : name(n), help(h) {}
  Opt(const char* n, const char* v, const char* h) : name(n), value(v), help(h) {}
};

// What a subcommand accepts (CLI11 parses it in main.cpp; -h/--help and --version come with every
// one): options that take a value, each of which may be given more than once, and switches;
// `usage` opens --help, and CLI11 lists every option below it from these definitions.
struct CommandSpec {
  std::vector<Opt> valued;
  std::vector<Opt> flags;
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
