// Reading the journals of a run back (fixtures/gtest/journal.hpp, watchdog.hpp lines): every finished
// case, the case that was running when a rank went, the first cause across ranks, and JUnit.
// This is the "step that always runs" of reliability rule 4: it needs nothing but the journal
// directory, so a crash, SIGKILL, SIGTERM or CTest timeout still gives a complete report.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/junit.hpp"

namespace cts {

struct JournalCase {
  std::string name;     // "Suite.Name"
  std::string result;   // passed | failed | skipped; "" while it was running
  std::string message;  // first failure or skip reason
  double start_ms = 0, end_ms = 0;
};

// A line that is not a case start/end: fault, interrupted, watchdog, peer_lost, bootstrap, ...
struct JournalEvent {
  std::string event;
  std::string kind;  // fault: signal | exit
  std::string reason;
  std::string signal;  // "SIGSEGV", "SIGTERM"
  std::string case_name;
  double time_ms = 0;
  int exit_code = -1;
  std::vector<int> blamed;  // peer_lost: the ranks that did not answer
};

struct RankJournal {
  std::string path;
  int rank = -1;                       // -1: a single-process binary
  std::string host;                    // from the rank_info line, if any
  int planned_cases = -1;              // program_start "cases"
  int world_size = 0;                  // from rank_info (the launcher's count, written before MPI_Init)
  std::vector<JournalCase> cases;      // finished cases, in order
  std::optional<JournalCase> running;  // started, never ended
  std::vector<JournalEvent> events;
  bool program_ended = false;
  double first_ms = 0, last_ms = 0;
  int bad_lines = 0;  // lines that were not JSON (a torn write)
  // Case ends the reader cannot take: no case name, or a name that is not a string.
  std::vector<std::string> invalid;
  // Why this rank went, "" when it ended normally.
  std::string abnormal_end() const;
};

struct TestRun {
  std::string test;                          // gpucts_<suite>[_<suffix>]
  std::vector<RankJournal> ranks;            // sorted by rank
  std::vector<std::string> premature_files;  // TEST_PREMATURE_EXIT_FILE left behind
  std::vector<std::string> unreadable;       // journal files named but not taken, with why
};

struct Cause {
  bool found = false;
  int rank = -1;
  std::string host;
  std::string what;    // "SIGSEGV", "exit", "failed", "did not answer", "vanished", "watchdog", "SIGTERM"
  std::string detail;  // one line
  std::string case_name;
  double time_ms = 0;
  std::vector<int> peers_lost;  // every other rank that ended abnormally
  std::string summary() const;  // "rank 1 (node-a): SIGSEGV during X at <iso time>; peer lost: rank 0"
};

// Reads <dir>/*.jsonl and <dir>/*.premature. Throws std::runtime_error if dir cannot be read.
// Only the last program run in each file counts (reruns append to the same journal).
std::vector<TestRun> read_journal_dir(const std::string& dir);
RankJournal parse_journal(const std::string& path, int rank, const std::string& text);

// The first failure, not the loudest: the earliest crash, exit or failed case; else a rank that a
// peer named as not answering; else a rank whose journal just stops; else the first watchdog or
// signal. Every other rank that ended abnormally is a "peer lost".
Cause first_cause(const TestRun& run);

// The journals as JUnit cases: one per case with every rank's result as a property
// (gpucts.rank<r> = "passed", "failed: why", "did not finish: why"); the interrupted case as an
// error "interrupted by SIGTERM|killed|timeout ..."; an error case for a process that ended
// abnormally between cases (process_end), before its first case (startup), a rank the launcher
// counted that left no journal (rank<r>_journal), and a journal the reader could not take
// (journal); a result other than passed/failed/skipped is an error. `problems` names what makes
// the journals incomplete (also when there is no journal at all): a green report needs none.
struct JournalJunit {
  std::vector<junit::Case> cases;
  std::map<std::string, junit::PropertyMap> run_properties;  // per test: ranks, first cause, ends
  std::vector<std::string> problems;
};
JournalJunit journals_to_cases(const std::vector<TestRun>& runs);

// journals_to_cases written by the one JUnit writer (junit::write).
std::string journals_to_junit(const std::vector<TestRun>& runs);

std::string iso_time_ms(double unix_ms);

// Each case's time from the journal's own clock (microseconds; gtest's XML rounds to milliseconds,
// so most fast cases read 0 there): the cases of `cases` that `j` finished get its duration.
void set_journal_times(std::vector<junit::Case>& cases, const RankJournal& j);

}  // namespace cts
