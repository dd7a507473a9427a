// libFuzzer target: the JUnit reader (report/xml.hpp, report/junit.hpp) over gtest's and CTest's XML.
// What reads is written back as the merged junit.xml, which must read again with the same cases;
// the summary's message cleaning runs over every message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "results/junit.hpp"
#include "results/xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<cts::junit::Case> cases;
  try {
    cases = cts::junit::read(cts::xml::parse(text, "fuzz.xml"), "fuzz.xml", "gpucts_fuzz");
  } catch (const cts::xml::XmlError&) {
    return 0;
  }
  for (const auto& c : cases)
    (void)cts::junit::message_key(cts::junit::clean_message(c.detail + "\n" + c.message));
  const std::string merged = cts::junit::write(cases, "fuzz");
  std::vector<cts::junit::Case> again;
  try {
    again = cts::junit::read(cts::xml::parse(merged, "merged.xml"), "merged.xml", "");
  } catch (const cts::xml::XmlError&) {
    __builtin_trap();  // what gpucts writes, gpucts must read
  }
  // The merged file groups cases by binary and suite: the same cases, with the same outcomes.
  auto a = cts::junit::count(cases), b = cts::junit::count(again);
  if (a.passed != b.passed || a.failed != b.failed || a.errors != b.errors || a.skipped != b.skipped)
    __builtin_trap();
  return 0;
}
