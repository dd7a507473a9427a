// The `gpucts` command line on CLI11: the command table, every command's options declared from
// its CommandSpec with the CLI11 check of its kind, the command list and each command's --help.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace cts::cli {

struct Command {
  const char* name;
  const char* summary;  // the command's CLI11 description: one sentence, wrapped by the list
  const CommandSpec* spec;
  int (*run)(const Args&);
};

// Every command, in the order `gpucts --help` lists them.
const std::vector<Command>& commands();

// `text` broken at blanks into lines of at most `width` columns (a longer word stays whole);
// newlines already in it are kept.
std::string wrap(const std::string& text, std::size_t width);
// A command's usage text for its --help at `width` columns: each synopsis ("usage: gpucts report
// ..." or "gpucts report ...", with its indented "[...]" lines) wrapped under its first option;
// the prose lines joined into paragraphs (one ends at a line ending in '.' or ':') and wrapped.
std::string reflow(const std::string& text, std::size_t width);

class Cli {
 public:
  Cli();
  const CLI::App& app() const { return app_; }
  // What `gpucts --help` (and `gpucts` alone, on standard error) prints: the commands from their
  // CLI11 descriptions, wrapped to 80 columns.
  // (The formatter itself: CLI::App::help would describe a parsed subcommand, "help" included.)
  std::string command_list() const {
    return app_.get_formatter()->make_help(&app_, "gpucts", CLI::AppFormatMode::Normal);
  }
  // Parses argv, runs the command it names and returns the exit status (2 for bad usage).
  int run(int argc, char** argv);

 private:
  CLI::App app_;
  CLI::App* help_ = nullptr;
  std::vector<std::vector<std::string>> positional_;
  std::vector<CLI::App*> subs_;
};

}  // namespace cts::cli
