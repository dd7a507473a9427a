// JUnit results as the bundle sees them: gtest's per-binary XML and CTest's --output-junit in,
// one merged JUnit file out. A case is identified across runs by "<binary>/<suite>.<name>".
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/xml.hpp"

namespace cts::junit {

// A case's outcome. The strings of the JSON and XML formats stay as they are ("passed", "failed",
// "error", "skipped"): status_name() writes them and parse_status() reads them, nothing else does.
enum class Status { passed, failed, error, skipped };
const char* status_name(Status s);
// "passed" -> Status::passed ...; nullopt for any other text.
std::optional<Status> parse_status(const std::string& text);
// failed or error: the case did not pass.
inline bool failing(Status s) { return s == Status::failed || s == Status::error; }

struct Case {
  std::string binary;  // CTest entry / gpucts_* test name that produced it
  std::string suite;   // gtest test suite ("AllReduce"), JUnit classname
  std::string name;    // gtest case name ("f32_sum_1024_inplace")
  Status status = Status::passed;
  std::string message;  // first line(s) of the failure / skip reason
  std::string detail;   // full failure text
  double time_s = 0;
  // The case's own <properties> (RecordProperty): gpucts.known_defect, gpucts.waived, ...
  std::map<std::string, std::string> properties{};
  std::string property(const std::string& k) const {
    auto it = properties.find(k);
    return it == properties.end() ? std::string() : it->second;
  }
  std::string key() const { return binary + "/" + suite + "." + name; }
};

// Reads a gtest or CTest JUnit document; `binary` labels the cases when the file does not (a
// merged file carries it as each testsuite's package, older ones as its "gpucts.binary" property).
// Throws xml::XmlError for malformed XML and for a document that is not JUnit.
std::vector<Case> read(const xml::Element& root, const std::string& origin, const std::string& binary);
std::vector<Case> read_file(const std::string& path, const std::string& binary);

// The testsuites-level properties of a gtest file (gpucts.nccl_runtime = ...), first file wins.
std::map<std::string, std::string> properties(const xml::Element& root);

// The <skipped type> of a failure waived with --accept-known.
inline constexpr const char* kWaivedType = "gpucts.waived";

// One JUnit document for all cases, a <testsuite> per (binary, suite), of the shape CI servers
// validate against (Jenkins xunit's junit-10.xsd, suites/data/junit/junit-10.xsd here): times in
// plain decimal (time_text); the binary as the testsuite's package; `suite_properties` (the stack's
// versions) once, in the first testsuite, since readers that gather every testsuite's properties
// into one table (xunitparser) refuse a name twice; a binary's `binary_properties`
// (gpucts.simulated_hosts of a simulated-hosts run) and a case's own properties as "name=value"
// lines in the <system-out> of its testsuite or testcase; a failure's `type` its class
// (failure_class) and its `message` the one-line cause (cause()), the full text in the body; a
// waived failure as <skipped type="gpucts.waived"> with its text.
using PropertyMap = std::map<std::string, std::string>;
std::string write(const std::vector<Case>& cases, const std::string& name,
                  const PropertyMap& suite_properties = {},
                  const std::map<std::string, PropertyMap>& binary_properties = {});

// A JUnit time: seconds in plain decimal ("0.000090"), never an exponent, which the xunit
// plugin's time pattern (digits, thousands commas, one decimal point) refuses; "0" for no time.
std::string time_text(double seconds);

// Why a failing case failed, one word for the failure's `type`: its gpucts.failure_class property
// where the harness recorded one, else read from its text: resource, timeout, corruption, crash,
// nccl, cuda; "assertion" (a failure) or "error" (an error) for anything else.
std::string failure_class(const Case& c);

struct Counts {
  int passed = 0, failed = 0, errors = 0, skipped = 0;
  int total() const { return passed + failed + errors + skipped; }
};
Counts count(const std::vector<Case>& cases);

// A short one-line form of a failure message: "file.cpp:12: Expected equality ..." (<= 300 chars).
std::string one_line(const std::string& text);

// What a person reads of a gtest failure or skip text, on one line: without gtest's leading
// "file:line" and its assertion boilerplate ("Expected equality of these values:" with the
// expressions under it, "Which is:", "Value of:", "Actual:", "Expected:", "Failed"), keeping the
// sentences the test itself wrote. Falls back to the text minus its location when nothing else is left.
std::string clean_message(const std::string& text);

// The one-line cause of a failure for a JUnit message: the known NCCL defect that explains it
// first ("known NCCL defect: nccl-1950 (...)"), then clean_message of the rest.
std::string cause(const std::string& text);

// A key that groups messages differing only in their numbers: every number that stands alone (and
// nan/inf) is '#'; digits inside a word (f8e4m3, sm_90, 64M, rank0) stay.
std::string message_key(const std::string& cleaned);

}  // namespace cts::junit
