// libFuzzer target: the journal reader (report/journal_report.hpp). The input is one rank's
// journal; it is read as rank 0 and as an unranked process beside a fixed second rank, the first
// cause is named, and the JUnit written from it must read back with the strict XML reader.
#include <cstddef>
#include <cstdint>
#include <string>

#include "results/journal_report.hpp"
#include "results/junit.hpp"
#include "results/xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cts::TestRun run;
  run.test = "gpucts_fuzz";
  run.ranks.push_back(cts::parse_journal("fuzz.rank0.jsonl", 0, text));
  run.ranks.push_back(cts::parse_journal("fuzz.rank1.jsonl", 1,
                                         "{\"event\":\"program_start\",\"cases\":1,\"time_ms\":5}\n{"
                                         "\"event\":\"start\",\"case\":\"S.a\",\"time_ms\":6}\n"));
  cts::TestRun single;
  single.test = "gpucts_fuzz_single";
  single.ranks.push_back(cts::parse_journal("fuzz.jsonl", -1, text));
  for (const auto* r : {&run, &single}) {
    cts::Cause c = cts::first_cause(*r);
    (void)c.summary();
    for (const auto& rank : r->ranks) (void)rank.abnormal_end();
  }
  const std::string xml = cts::journals_to_junit({run, single});
  try {
    auto cases = cts::junit::read(cts::xml::parse(xml, "journals.xml"), "journals.xml", "");
    (void)cases;
  } catch (const cts::xml::XmlError&) {
    __builtin_trap();  // what gpucts writes, gpucts must read
  }
  return 0;
}
