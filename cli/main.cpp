// gpucts: the command-line entry point (check, fingerprint, qualify, report, ...). CLI11 parses
// every subcommand's options from its CommandSpec (commands.hpp) and the command gets Args.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "fixtures/probe/command_line.hpp"

namespace {

struct Command {
  const char* name;
  const char* summary;
  const cts::cli::CommandSpec* spec;
  int (*run)(const cts::cli::Args&);
};

const Command kCommands[] = {
    {"fingerprint", "write this process's environment fingerprint (JSON)", &cts::cli::kFingerprintSpec,
     cts::cli::cmd_fingerprint},
    {"gpus", "count the visible GPUs; --resource-spec FILE writes CTest's resource spec",
     &cts::cli::kGpusSpec, cts::cli::cmd_gpus},
    {"check", "check fingerprints (default: this machine) against the compatibility matrix",
     &cts::cli::kCheckSpec, cts::cli::cmd_check},
    {"journal-to-junit", "turn test journals (also of crashed or interrupted runs) into JUnit",
     &cts::cli::kJournalToJunitSpec, cts::cli::cmd_journal_to_junit},
    {"qualify", "run every suite and write the qualification bundle (--output DIR)", &cts::cli::kQualifySpec,
     cts::cli::cmd_qualify},
    {"report", "compare bundles: --baseline DIR --candidate DIR...", &cts::cli::kReportSpec,
     cts::cli::cmd_report},
    {"campaign", "the suites against several NCCL releases, one report: --nccl V,V... --output DIR",
     &cts::cli::kCampaignSpec, cts::cli::cmd_campaign},
};

std::string usage() {
  std::string u = "usage: gpucts <command> [options]\n\ncommands:\n";
  for (const auto& c : kCommands) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-12s %s\n", c.name, c.summary);
    u += line;
  }
  return u + "\n'gpucts <command> --help' describes a command's options.\n";
}

std::string command_names() {
  std::string names;
  for (const auto& c : kCommands) names += (names.empty() ? "" : " ") + std::string(c.name);
  return names;
}

// A subcommand's --help: its usage text, then CLI11's list of the options it declares.
class CommandFormatter : public CLI::Formatter {
 public:
  explicit CommandFormatter(std::string usage) : usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App*, std::string) const override { return ""; }
  std::string make_description(const CLI::App*) const override { return usage_ + "\n"; }

 private:
  std::string usage_;
};

// One subcommand on CLI11: its options, --version, and its help; positional arguments go to
// `positional` (the commands refuse them with their own message).
CLI::App* add_command(CLI::App& app, const Command& c, std::vector<std::string>& positional) {
  CLI::App* sub = app.add_subcommand(c.name, c.summary);
  sub->set_help_flag("-h,--help", "print this help and exit");
  sub->set_version_flag("--version", cts::version_line(),
                        "print the version, git revision and build's CUDA/NCCL");
  auto fmt = std::make_shared<CommandFormatter>(c.spec->usage);
  fmt->column_width(34);
  sub->formatter(fmt);
  for (const auto& v : c.spec->valued)
    sub->add_option("--" + v.name, v.help)
        ->take_all()
        ->expected(1)
        ->allow_extra_args(false)
        ->type_name(v.value.empty() ? "VALUE" : v.value);
  for (const auto& f : c.spec->flags) sub->add_flag("--" + f.name, f.help)->disable_flag_override();
  sub->add_option("args", positional)->group("");
  return sub;
}

// The command's view of what its subcommand took.
cts::cli::Args parsed(const CLI::App& sub, const cts::cli::CommandSpec& spec,
                      std::vector<std::string> positional) {
  std::map<std::string, std::vector<std::string>> values;
  std::set<std::string> flags;
  for (const auto& v : spec.valued)
    if (const CLI::Option* o = sub.get_option("--" + v.name); o->count() > 0) values[v.name] = o->results();
  for (const auto& f : spec.flags)
    if (sub.get_option("--" + f.name)->count() > 0) flags.insert(f.name);
  return cts::cli::Args(std::move(values), std::move(flags), std::move(positional));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usage().c_str(), stderr);
    return 2;
  }
  CLI::App app("", "gpucts");
  app.set_help_flag("-h,--help");
  // --version anywhere, as CMake, ctest and mpirun answer it.
  app.set_version_flag("--version", cts::version_line());
  app.allow_extras();  // unknown options and commands are reported below, with the known ones
  app.formatter_fn([](const CLI::App*, const std::string&, CLI::AppFormatMode) { return usage(); });
  const CLI::App* help = app.add_subcommand("help")->group("");
  std::vector<std::vector<std::string>> positional(std::size(kCommands));
  std::vector<const CLI::App*> subs;
  for (std::size_t i = 0; i < std::size(kCommands); ++i)
    subs.push_back(add_command(app, kCommands[i], positional[i]));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& v) {
    std::printf("%s\n", v.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    const auto chosen = app.get_subcommands();
    std::fprintf(stderr, "gpucts%s: %s\n", chosen.empty() ? "" : (" " + chosen.front()->get_name()).c_str(),
                 e.what());
    return 2;
  }
  if (auto a = cts::first_unknown(app)) {
    if (a->rfind('-', 0) == 0)
      std::fprintf(stderr, "gpucts: unknown option %s (known: %s)\n", a->c_str(),
                   cts::known_flags(app).c_str());
    else
      std::fprintf(stderr, "gpucts: unknown command '%s' (known: %s)\n", a->c_str(), command_names().c_str());
    return 2;
  }
  if (help->parsed()) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  for (std::size_t i = 0; i < subs.size(); ++i) {
    const Command& c = kCommands[i];
    if (!subs[i]->parsed()) continue;
    if (auto a = cts::first_unknown(*subs[i])) {
      std::fprintf(stderr, "gpucts %s: unknown option %s (known: %s)\n", c.name, a->c_str(),
                   cts::known_flags(*subs[i]).c_str());
      return 2;
    }
    try {
      const int rc = c.run(parsed(*subs[i], *c.spec, positional[i]));
      // A result that did not reach standard output (a full disk, a closed pipe) is no success:
      // a cut JSON file must not read as one written whole.
      std::cout.flush();
      if ((std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) && rc == 0) {
        std::fprintf(stderr, "gpucts %s: cannot write standard output: %s\n", c.name, std::strerror(errno));
        return 1;
      }
      return rc;
    } catch (const cts::cli::UsageError& e) {
      std::fprintf(stderr, "gpucts %s: %s\n", c.name, e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpucts %s: %s\n", c.name, e.what());
      return 2;
    }
  }
  std::fputs(usage().c_str(), stderr);  // options but no command
  return 2;
}
