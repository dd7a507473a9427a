// The subcommands of `gpucts`. Adding one is a spec, a body and one row of the command table
// (cli/app.cpp).
#pragma once
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "fixtures/probe/probe.hpp"

namespace cts::cli {

// What an option's value must be. Each kind is a CLI11 check (cli/app.cpp), so a bad value is
// refused naming the option, exit 2, before the command runs or writes anything; what CLI11
// cannot say (an upper bound that depends on the machine, two options that exclude each other)
// the command still checks itself.
enum class Kind {
  text,      // any text; the command reads it
  count,     // a whole number >= 0
  positive,  // a whole number >= 1
  seconds,   // a finite number of seconds >= 0
  number,    // a finite number
  file,      // an existing, readable file (not a folder)
  dir,       // an existing folder
  choice,    // one of `choices`
};

// One option as CLI11 declares it: its name without "--", what its value is ("DIR"; empty for a
// switch), one line for --help (never empty: every option says what it does) and its kind.
struct Opt {
  std::string name, value, help;
  Kind kind = Kind::text;
  std::vector<std::string> choices;
  bool repeatable = false;                                 // see repeatable() below
  Opt(const char* n, const char* h) : name(n), help(h) {}  // a switch
  Opt(const char* n, const char* v, const char* h, Kind k = Kind::text)
      : name(n), value(v), help(h), kind(k) {}
  Opt(const char* n, const char* v, const char* h, std::vector<std::string> one_of)
      : name(n), value(v), help(h), kind(Kind::choice), choices(std::move(one_of)) {}
};

// `o` given more than once keeps every value (Args::values); any other option given twice is
// refused naming it, before the command runs (it would silently keep one of the values).
inline Opt repeatable(Opt o) {
  o.repeatable = true;
  return o;
}

// Why `value` is no value of `o`'s kind ("" when it is one): the text CLI11 prints after the option.
std::string refusal(const Opt& o, const std::string& value);

// What a subcommand accepts (CLI11 parses it; -h/--help and --version come with every one):
// options that take a value (those marked repeatable() may be given more than once), and switches; `usage`
// opens --help, and CLI11 lists every option below it from these definitions.
struct CommandSpec {
  std::vector<Opt> valued;
  std::vector<Opt> flags;
  const char* usage;
};

// --python EXE and --no-python, as fingerprint, check and qualify take them.
inline constexpr const char* kPythonHelp =
    "the python that probes torch and Lightning (default $GPUCTS_PYTHON, else python3: the one the "
    "Python suites run)";
// The probe options they ask for. They exclude each other; an EXE with a '/' is made absolute
// (probe_python_choice: the suites it is handed to run in other folders).
ProbeOptions python_probe_options(const Args& a);

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
