#include "report/prometheus.hpp"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "report/verdict.hpp"
#include "results/output_file.hpp"

namespace cts {
namespace {

const char* const kStatusWords[] = {"pass", "waived", "fail", "no_gpu", "not_run"};

// A label value as the text format wants it: backslash, double quote and newline escaped.
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += std::string("\\") + c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void family(std::ostringstream& o, const char* name, const char* help) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
}

}  // namespace

std::string node_status_word(const std::string& verdict_kind) {
  for (const char* w : kStatusWords)
    if (verdict_kind == w) return w;
  throw std::invalid_argument("unknown verdict kind '" + verdict_kind +
                              "' (known: pass, waived, fail, no_gpu, not_run)");
}

void write_node_status(const std::string& path, const std::string& verdict_kind) {
  write_file_atomic(path, node_status_word(verdict_kind) + "\n");
}

std::string prometheus_text(const bundle::Bundle& b, const std::string& verdict_kind) {
  const std::string kind = node_status_word(verdict_kind);
  std::ostringstream o;
  family(o, "gpucts_verdict", "The verdict of the last gpucts qualify of this node: 1 for its kind.");
  for (const char* w : kStatusWords)
    o << "gpucts_verdict{kind=\"" << w << "\"} " << (kind == w ? 1 : 0) << "\n";
  family(o, "gpucts_cases", "Cases of the last qualification by result.");
  // What each case means (verdict::decide); a waived failure counts as skipped, as junit.xml shows it.
  const verdict::Tally n = verdict::decide(b).tally();
  o << "gpucts_cases{result=\"passed\"} " << n.passed << "\n"
    << "gpucts_cases{result=\"failed\"} " << n.failed << "\n"
    << "gpucts_cases{result=\"error\"} " << n.errors << "\n"
    << "gpucts_cases{result=\"skipped\"} " << n.skipped + n.waived << "\n";
  family(o, "gpucts_suites", "Suite entries of the last qualification by how they ended.");
  std::map<std::string, int> suites;
  for (const auto& s : b.manifest.suites) ++suites[bundle::suite_status_name(s.status)];
  for (const auto& [status, count] : suites)
    o << "gpucts_suites{status=\"" << status << "\"} " << count << "\n";
  family(o, "gpucts_elapsed_seconds", "How long the last qualification took.");
  o << "gpucts_elapsed_seconds " << number(b.manifest.elapsed_s) << "\n";
  // One series per (collective, dtype, op, ranks): the first run that measured it wins.
  using Key = std::tuple<std::string, std::string, std::string, int>;
  std::map<Key, double> latency, bandwidth;
  for (const auto& [test, run] : b.bandwidth)
    for (const auto& p : run.points) {
      if (p.in_place || p.graph || p.comm != bw::kBlocking) continue;
      const Key k{p.collective, p.dtype, p.op, p.ranks};
      if (p.bytes == 8 && p.time_us.n > 0) latency.emplace(k, p.time_us.median / 1e6);
      if (p.bytes == (std::uint64_t{1} << 30))
        bandwidth.emplace(k, p.busbw_gbps.value_or(p.algbw_gbps) * 1e9);
    }
  auto labels = [](const Key& k) {
    return "{collective=\"" + label_value(std::get<0>(k)) + "\",dtype=\"" + label_value(std::get<1>(k)) +
           "\",op=\"" + label_value(std::get<2>(k)) + "\",ranks=\"" + std::to_string(std::get<3>(k)) + "\"}";
  };
  if (!latency.empty()) {
    family(o, "gpucts_latency_8b_seconds", "Median time of one 8-byte call of the collective.");
    for (const auto& [k, v] : latency)
      o << "gpucts_latency_8b_seconds" << labels(k) << " " << number(v) << "\n";
  }
  if (!bandwidth.empty()) {
    family(o, "gpucts_busbw_1gib_bytes_per_second",
           "Bus bandwidth of the collective at 1 GiB (algorithm bandwidth for one rank).");
    for (const auto& [k, v] : bandwidth)
      o << "gpucts_busbw_1gib_bytes_per_second" << labels(k) << " " << number(v) << "\n";
  }
  return o.str();
}

}  // namespace cts
