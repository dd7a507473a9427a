// gpucts journal-to-junit: the step that always runs (reliability rule 4). GoogleTest writes no XML
// on a crash or a signal and CTest writes no JUnit when interrupted; the journals survive both.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "results/journal_report.hpp"
#include "results/output_file.hpp"
#include "results/terminal_text.hpp"

namespace cts::cli {

const CommandSpec kJournalToJunitSpec = {
    {{"journal-dir", "DIR", "the folder of the journals (GPUCTS_JOURNAL_DIR of the run)", Kind::dir},
     {"output", "FILE", "the JUnit XML to write, whole or not at all"}},
    {},
    "usage: gpucts journal-to-junit --journal-dir DIR --output FILE\n"
    "Reads every <test>[.rank<r>].jsonl journal and <test>[.rank<r>].premature file in DIR and\n"
    "writes JUnit XML to FILE: every finished case with each rank's result, the case a rank was\n"
    "running when it went as <error message=\"interrupted by SIGTERM|killed|timeout ...\">, and\n"
    "per test the first cause (rank, host, signal or error, time; the others as peer lost).\n"
    "A process that went between cases or after its last one is an error case \"process_end\"; a rank\n"
    "the launcher counted that left no journal, a result other than passed/failed/skipped, a case\n"
    "end without a case name and a journal file whose rank is beyond any rank are error cases too.\n"
    "Prints the first cause of every test that did not end normally. Exit status: 0 written and the\n"
    "journals complete (the JUnit carries the failures and errors), 1 written but the journals are\n"
    "incomplete or there is none (each named on stderr), 2 bad input (unreadable directory, an output\n"
    "that cannot be written or is a symbolic link)."};

int cmd_journal_to_junit(const Args& a) {
  if (!a.positional().empty())
    throw UsageError("unexpected argument '" + terminal_safe(a.positional().front()) + "'");
  auto dir = a.value("journal-dir");
  auto out = a.value("output");
  if (!dir) throw UsageError("--journal-dir DIR is required");
  if (!out) throw UsageError("--output FILE is required");
  std::vector<TestRun> runs;
  try {
    runs = read_journal_dir(*dir);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  const JournalJunit j = journals_to_cases(runs);
  std::string xml = junit::write(j.cases, "gpucts journals", {}, j.run_properties);
  try {
    write_file_atomic(*out, xml);  // whole or not at all, never through a symbolic link
  } catch (const OutputError& e) {
    throw UsageError(e.what());
  }
  size_t cases = 0;
  for (const auto& r : runs) {
    Cause c = first_cause(r);
    bool abnormal = false;
    for (const auto& rank : r.ranks) abnormal |= !rank.abnormal_end().empty();
    if (c.found && (abnormal || !r.premature_files.empty()))
      std::cout << terminal_safe(r.test + ": first cause: " + c.summary(), 4096) << "\n";
    for (const auto& rank : r.ranks) cases += rank.cases.size();
  }
  std::cout << "gpucts journal-to-junit: " << runs.size() << " test(s), " << cases
            << " finished case result(s) -> " << terminal_safe(*out) << "\n";
  for (const auto& p : j.problems)
    std::cerr << terminal_safe("gpucts journal-to-junit: " + *dir + ": " + p, 4096) << "\n";
  return j.problems.empty() ? 0 : 1;
}

}  // namespace cts::cli
