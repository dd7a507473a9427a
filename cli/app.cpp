#include "cli/app.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "fixtures/probe/command_line.hpp"
#include "results/terminal_text.hpp"

namespace cts::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"fingerprint", "write this process's environment fingerprint (JSON)", &kFingerprintSpec,
       cmd_fingerprint},
      {"gpus", "count the visible GPUs; --resource-spec FILE also writes CTest's resource spec", &kGpusSpec,
       cmd_gpus},
      {"check", "check fingerprints (default: this machine) against the compatibility matrix", &kCheckSpec,
       cmd_check},
      {"journal-to-junit", "turn test journals (also of crashed or interrupted runs) into JUnit",
       &kJournalToJunitSpec, cmd_journal_to_junit},
      {"qualify", "run every suite this machine can run and write the qualification bundle (--output DIR)",
       &kQualifySpec, cmd_qualify},
      {"report", "compare bundles: a baseline against candidates, or a campaign's runs", &kReportSpec,
       cmd_report},
      {"campaign", "the suites against several NCCL releases, one report (or --bisect: where a case changed)",
       &kCampaignSpec, cmd_campaign},
  };
  return kCommands;
}

constexpr std::size_t kColumns = 80;

std::string wrap(const std::string& text, std::size_t width) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!out.empty()) out += '\n';
    std::size_t used = 0;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (used > 0 && used + 1 + w.size() > width) {
        out += '\n';
        used = 0;
      } else if (used > 0) {
        out += ' ';
        ++used;
      }
      out += w;
      used += w.size();
    }
  }
  return out;
}

std::string reflow(const std::string& text, std::size_t width) {
  std::string out, paragraph, synopsis;
  auto flush = [&] {
    if (!paragraph.empty()) out += wrap(paragraph, width) + "\n";
    paragraph.clear();
    if (synopsis.empty()) return;
    // Continuations start under the command's first option ("usage: gpucts report ").
    const std::size_t lead = synopsis.find_first_not_of(' ');
    std::size_t indent = lead;
    for (int words = 0;
         words < (synopsis.compare(lead, 6, "usage:") == 0 ? 3 : 2) && indent != std::string::npos; ++words)
      indent = synopsis.find_first_not_of(' ', synopsis.find(' ', indent));
    if (indent == std::string::npos || indent > width / 2)
      indent = std::min<std::size_t>(lead + 4, width / 2);
    const std::string head = synopsis.substr(0, indent);
    // "[--label REGEX]" stays on one line: its blanks are no break points.
    std::string options = synopsis.substr(indent);
    int depth = 0;
    for (char& c : options) {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      if (c == ' ' && depth > 0) c = '\x01';
    }
    options = wrap(options, width - indent);
    std::replace(options.begin(), options.end(), '\x01', ' ');
    std::istringstream parts(options);
    bool first = true;
    for (std::string part; std::getline(parts, part); first = false)
      out += (first ? head : std::string(indent, ' ')) + part + "\n";
    synopsis.clear();
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t lead = line.find_first_not_of(' ');
    const std::string body = lead == std::string::npos ? "" : line.substr(lead);
    if (body.rfind("usage:", 0) == 0 || body.rfind("gpucts ", 0) == 0) {
      flush();
      synopsis = line;
    } else if (!synopsis.empty() && lead > 0 && !body.empty() && body[0] == '[') {
      synopsis += " " + body;
    } else if (body.empty()) {
      flush();
      out += "\n";
    } else {
      if (!synopsis.empty()) flush();
      paragraph += (paragraph.empty() ? "" : " ") + body;
      if (body.back() == '.' || body.back() == ':') flush();
    }
  }
  flush();
  return out;
}

namespace {

std::string quoted(const std::string& v) { return "'" + terminal_safe(v, 200) + "'"; }

// A whole number of at most nine digits, or nothing.
std::optional<long> whole_number(const std::string& v) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::strtol(v.c_str(), nullptr, 10);
}

// A finite number, or nothing (nan and inf are numbers to strtod, but no option means them: every
// comparison with nan is false, so a nan limit would turn a gate off).
std::optional<double> finite_number(const std::string& v) {
  if (v.empty() || std::isspace(static_cast<unsigned char>(v[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(v.c_str(), &end);
  if (*end != '\0' || !std::isfinite(d) || errno == ERANGE) return std::nullopt;
  return d;
}

}  // namespace

std::string refusal(const Opt& o, const std::string& v) {
  struct stat st {};
  switch (o.kind) {
    case Kind::text:
      return "";
    case Kind::count:
      return whole_number(v) ? "" : quoted(v) + " is not a whole number >= 0";
    case Kind::positive: {
      auto n = whole_number(v);
      return n && *n >= 1 ? "" : quoted(v) + " is not a whole number >= 1";
    }
    case Kind::seconds: {
      auto d = finite_number(v);
      return d && *d >= 0 ? "" : quoted(v) + " is not a number of seconds >= 0";
    }
    case Kind::number:
      return finite_number(v) ? "" : quoted(v) + " is not a finite number";
    case Kind::file:
      if (v.empty()) return "'' names no file";
      if (::stat(v.c_str(), &st) != 0 || ::access(v.c_str(), R_OK) != 0)
        return terminal_safe(v, 200) + ": cannot open for reading: " + std::strerror(errno);
      return S_ISDIR(st.st_mode) ? terminal_safe(v, 200) + ": is a directory, not a file" : "";
    case Kind::dir:
      if (v.empty()) return "'' names no folder";
      if (::stat(v.c_str(), &st) != 0) return terminal_safe(v, 200) + ": " + std::strerror(errno);
      return S_ISDIR(st.st_mode) ? "" : terminal_safe(v, 200) + ": is not a folder";
    case Kind::choice: {
      std::string known;
      for (const auto& c : o.choices) {
        if (c == v) return "";
        known += (known.empty() ? "" : ", ") + c;
      }
      return quoted(v) + " is not one of " + known;
    }
  }
  return "";
}

namespace {

// The command list: CLI11's subcommands with their descriptions, wrapped beside the names.
class CommandListFormatter : public CLI::FormatterBase {
 public:
  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    constexpr std::size_t kNameColumn = 20;
    std::ostringstream out;
    out << "usage: gpucts <command> [options]\n\ncommands:\n";
    for (const CLI::App* sub :
         app->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
      CLI::detail::format_help(out, sub->get_name(), wrap(sub->get_description(), kColumns - kNameColumn),
                               kNameColumn);
    out << "\n"
        << wrap("'gpucts <command> --help' describes a command's options; --version prints the version.",
                kColumns)
        << "\nExit status: 0 success, 1 the checked thing failed, 2 bad input or usage.\n";
    return out.str();
  }
};

// A subcommand's --help: its usage text, then CLI11's list of the options it declares, each
// description wrapped beside the option's name.
class CommandFormatter : public CLI::Formatter {
 public:
  static constexpr std::size_t kNameColumn = 26;
  explicit CommandFormatter(std::string usage) : usage_(std::move(usage)) { column_width(kNameColumn); }
  std::string make_usage(const CLI::App*, std::string) const override { return ""; }
  std::string make_description(const CLI::App*) const override { return reflow(usage_, kColumns) + "\n"; }
  std::string make_option_desc(const CLI::Option* o) const override {
    return wrap(o->get_description(), kColumns - kNameColumn);
  }

 private:
  std::string usage_;
};

// One subcommand on CLI11: its typed options, --version, and its help; positional arguments go
// to `positional` (the commands refuse them with their own message).
CLI::App* add_command(CLI::App& app, const Command& c, std::vector<std::string>& positional) {
  CLI::App* sub = app.add_subcommand(c.name, c.summary);
  sub->set_help_flag("-h,--help", "print this help and exit");
  sub->set_version_flag("--version", cts::version_line(),
                        "print the version, git revision and build's CUDA/NCCL");
  sub->formatter(std::make_shared<CommandFormatter>(c.spec->usage));
  for (const Opt& v : c.spec->valued) {
    CLI::Option* o = sub->add_option("--" + v.name, v.help)
                         ->take_all()
                         ->expected(1)
                         ->allow_extra_args(false)
                         ->type_name(v.value.empty() ? "VALUE" : v.value);
    if (v.kind != Kind::text) o->check(CLI::Validator([v](std::string& s) { return refusal(v, s); }, ""));
  }
  for (const Opt& f : c.spec->flags) sub->add_flag("--" + f.name, f.help)->disable_flag_override();
  sub->add_option("args", positional)->group("");
  return sub;
}

// The command's view of what its subcommand took.
Args parsed(const CLI::App& sub, const CommandSpec& spec, std::vector<std::string> positional) {
  std::map<std::string, std::vector<std::string>> values;
  std::set<std::string> flags;
  for (const auto& v : spec.valued)
    if (const CLI::Option* o = sub.get_option("--" + v.name); o->count() > 0) values[v.name] = o->results();
  for (const auto& f : spec.flags)
    if (sub.get_option("--" + f.name)->count() > 0) flags.insert(f.name);
  return Args(std::move(values), std::move(flags), std::move(positional));
}

// A refusal as printed: what it quotes from the command line or a file (a path with a newline, an
// escape sequence) cannot start a line of its own or act on the terminal.
std::string one_line(const std::string& text) { return terminal_safe(text, 4096); }

std::string command_names() {
  std::string names;
  for (const auto& c : commands()) names += (names.empty() ? "" : " ") + std::string(c.name);
  return names;
}

}  // namespace

Cli::Cli() : app_("", "gpucts") {
  app_.set_help_flag("-h,--help", "print the command list and exit");
  // --version anywhere, as CMake, ctest and mpirun answer it.
  app_.set_version_flag("--version", cts::version_line(),
                        "print the version, git revision and build's CUDA/NCCL");
  app_.allow_extras();  // unknown options and commands are reported in run(), with the known ones
  app_.formatter(std::make_shared<CommandListFormatter>());
  help_ = app_.add_subcommand("help", "print the command list")->group("");
  positional_.resize(commands().size());
  for (std::size_t i = 0; i < commands().size(); ++i)
    subs_.push_back(add_command(app_, commands()[i], positional_[i]));
}

int Cli::run(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(command_list().c_str(), stderr);
    return 2;
  }
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app_.help().c_str(), stdout);  // the chosen command's help, or the command list
    return 0;
  } catch (const CLI::CallForVersion& v) {
    std::printf("%s\n", v.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    const auto chosen = app_.get_subcommands();
    std::fprintf(stderr, "gpucts%s: %s\n", chosen.empty() ? "" : (" " + chosen.front()->get_name()).c_str(),
                 one_line(e.what()).c_str());
    return 2;
  }
  if (auto a = cts::first_unknown(app_)) {
    if (a->rfind('-', 0) == 0)
      std::fprintf(stderr, "gpucts: unknown option %s (known: %s)\n", one_line(*a).c_str(),
                   cts::known_flags(app_).c_str());
    else
      std::fprintf(stderr, "gpucts: unknown command '%s' (known: %s)\n", one_line(*a).c_str(),
                   command_names().c_str());
    return 2;
  }
  if (help_->parsed()) {
    std::fputs(command_list().c_str(), stdout);
    return 0;
  }
  for (std::size_t i = 0; i < subs_.size(); ++i) {
    const Command& c = commands()[i];
    if (!subs_[i]->parsed()) continue;
    if (auto a = cts::first_unknown(*subs_[i])) {
      std::fprintf(stderr, "gpucts %s: unknown option %s (known: %s)\n", c.name, one_line(*a).c_str(),
                   cts::known_flags(*subs_[i]).c_str());
      return 2;
    }
    for (const Opt& v : c.spec->valued)
      if (const std::size_t n = subs_[i]->get_option("--" + v.name)->count(); n > 1 && !v.repeatable) {
        std::fprintf(stderr, "gpucts %s: --%s given %zu times: give it once\n", c.name, v.name.c_str(), n);
        return 2;
      }
    try {
      const int rc = c.run(parsed(*subs_[i], *c.spec, positional_[i]));
      // A result that did not reach standard output (a full disk, a closed pipe) is no success:
      // a cut JSON file must not read as one written whole.
      std::cout.flush();
      if ((std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) && rc == 0) {
        std::fprintf(stderr, "gpucts %s: cannot write standard output: %s\n", c.name, std::strerror(errno));
        return 1;
      }
      return rc;
    } catch (const std::exception& e) {  // UsageError and every other refusal: one line, exit 2
      std::fprintf(stderr, "gpucts %s: %s\n", c.name, one_line(e.what()).c_str());
      return 2;
    }
  }
  std::fputs(command_list().c_str(), stderr);  // options but no command
  return 2;
}

}  // namespace cts::cli
