#include "results/bandwidth.hpp"

#include "matrix/csv.hpp"
#include "matrix/input.hpp"
#include "results/json_fields.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

namespace cts::bw {

extern const char* const kBuiltinThresholdsCsv;  // generated from matrix/data/bandwidth_thresholds.csv

namespace {

// The lowest floor a thresholds row may set: 0.01 GB/s of bus bandwidth, or 1% of the copy rate.
constexpr double kMinFloor = 0.01;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

double parse_double(const std::string& text, const std::string& where) {
  char* end = nullptr;
  std::string t = trim(text);
  double d = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !std::isfinite(d))
    throw BandwidthError(where + ": '" + text + "' is not a number");
  return d;
}

}  // namespace

std::optional<double> bus_factor(BusFactor family, int nranks) {
  if (nranks < 1) throw BandwidthError("bus_factor: nranks must be >= 1");
  if (nranks == 1) return std::nullopt;
  double n = nranks;
  switch (family) {
    case BusFactor::all_reduce:
      return 2.0 * (n - 1) / n;
    case BusFactor::n_minus_one_over_n:
      return (n - 1) / n;
    case BusFactor::one:
      return 1.0;
  }
  return std::nullopt;
}

Stats summarize(std::vector<double> v) {
  if (v.empty()) throw BandwidthError("summarize: no samples");
  std::sort(v.begin(), v.end());
  Stats s;
  s.n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.spread_pct = s.median > 0 ? (s.max - s.min) / s.median * 100.0 : 0.0;
  return s;
}

std::uint64_t parse_bytes(const std::string& text) {
  std::string t = trim(text);
  size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == 0) throw BandwidthError("'" + text + "' is not a byte count (e.g. 8, 64K, 1G)");
  std::string unit = t.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, int> shifts = {
      {"", 0},     {"B", 0},  {"K", 10},  {"KB", 10},  {"KIB", 10}, {"M", 20},  {"MB", 20},
      {"MIB", 20}, {"G", 30}, {"GB", 30}, {"GIB", 30}, {"T", 40},   {"TIB", 40}};
  auto it = shifts.find(unit);
  if (it == shifts.end()) throw BandwidthError("'" + text + "': unknown unit '" + t.substr(i) + "'");
  if (i > 15) throw BandwidthError("'" + text + "' is too large");
  std::uint64_t n = std::stoull(t.substr(0, i));
  if (it->second && n > (std::uint64_t(1) << (63 - it->second)))
    throw BandwidthError("'" + text + "' is too large");
  return n << it->second;
}

std::string format_bytes(std::uint64_t b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::uint64_t v = b;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

std::vector<std::string> sweep_parts(const std::string& spec) {
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  return parts;
}

std::vector<std::uint64_t> parse_sweep(const std::string& spec) {
  if (spec.find(',') != std::string::npos) {
    std::vector<std::uint64_t> out;
    std::string item;
    std::istringstream in(spec);
    while (std::getline(in, item, ',')) {
      if (item.empty()) throw BandwidthError("sweep '" + spec + "': an empty size in the list");
      const std::uint64_t b = parse_bytes(item);
      if (b == 0) throw BandwidthError("sweep '" + spec + "': every size must be at least 1 byte");
      out.push_back(b);
    }
    if (spec.back() == ',') throw BandwidthError("sweep '" + spec + "': an empty size in the list");
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  const std::vector<std::string> parts = sweep_parts(spec);
  if (parts.size() != 3)
    throw BandwidthError("sweep '" + spec + "': expected MIN:MAX:FACTOR (8:1G:2) or a list (8,1M,1G)");
  std::uint64_t lo = parse_bytes(parts[0]), hi = parse_bytes(parts[1]);
  double f = parse_double(parts[2], "sweep '" + spec + "' factor");
  if (lo == 0) throw BandwidthError("sweep '" + spec + "': the minimum must be at least 1 byte");
  if (lo > hi) throw BandwidthError("sweep '" + spec + "': minimum above maximum");
  if (f < 2 || f != std::floor(f))
    throw BandwidthError("sweep '" + spec + "': the factor must be an integer >= 2");
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = lo; s <= hi; s *= static_cast<std::uint64_t>(f)) {
    out.push_back(s);
    if (s > hi / static_cast<std::uint64_t>(f)) break;
  }
  return out;
}

std::vector<Threshold> parse_thresholds(const std::string& csv, const std::string& origin) {
  CsvTable t;
  try {
    t = parse_csv(csv, origin,
                  {"gpu", "link", "nvls", "world_size", "collective", "placement", "min_bytes", "metric",
                   "expected", "tolerance_pct", "source"},
                  {"launch", "comm"});
  } catch (const MatrixError& e) {
    throw BandwidthError(e.what());
  }
  std::vector<Threshold> out;
  std::map<std::string, int> first_line;  // a row's key -> the line that has it
  for (const auto& row : t.rows) {
    std::string where = origin + ":" + std::to_string(row.line);  // every message names file:line
    Threshold th;
    th.origin = origin;
    th.line = row.line;
    th.gpu = row.at("gpu");
    th.link = row.at("link");
    th.nvls = row.at("nvls");
    if (row.at("world_size") != "any") {
      double ws = parse_double(row.at("world_size"), where + ": world_size");
      if (ws < 1 || ws > 1 << 20 || ws != std::floor(ws))
        throw BandwidthError(where + ": world_size '" + row.at("world_size") +
                             "' is not a number of ranks (1 or more) or 'any'");
      th.world_size = static_cast<int>(ws);
    } else {
      th.world_size = 0;
    }
    th.collective = row.at("collective");
    th.placement = row.at("placement");
    th.launch = row.at("launch").empty() ? "any" : row.at("launch");
    th.comm = row.at("comm").empty() ? kBlocking : row.at("comm");
    try {
      th.min_bytes = parse_bytes(row.at("min_bytes"));
    } catch (const BandwidthError& e) {
      throw BandwidthError(where + ": min_bytes " + e.what());
    }
    th.metric = row.at("metric");
    th.expected = parse_double(row.at("expected"), where + ": expected");
    th.tolerance_pct = parse_double(row.at("tolerance_pct"), where + ": tolerance_pct");
    th.source = row.at("source");
    if (th.nvls != "on" && th.nvls != "off" && th.nvls != "any")
      throw BandwidthError(where + ": nvls must be on, off or any");
    if (th.placement != "in_place" && th.placement != "out_of_place" && th.placement != "any")
      throw BandwidthError(where + ": placement must be in_place, out_of_place or any");
    if (th.launch != "eager" && th.launch != "graph" && th.launch != "any")
      throw BandwidthError(where + ": launch must be eager, graph or any");
    if (th.comm != kBlocking && th.comm != kNonblocking && th.comm != "any")
      throw BandwidthError(where + ": comm must be blocking, nonblocking or any");
    if (th.metric != "busbw_gbps" && th.metric != "algbw_vs_copy")
      throw BandwidthError(where + ": metric must be busbw_gbps or algbw_vs_copy");
    if (th.expected <= 0 || th.tolerance_pct < 0 || th.tolerance_pct >= 100)
      throw BandwidthError(where + ": expected must be > 0 and tolerance_pct in [0, 100)");
    if (th.gpu.empty() || th.link.empty() || th.collective.empty() || th.source.empty())
      throw BandwidthError(where + ": gpu, link, collective and source must not be empty");
    // A floor of about zero passes every point: no threshold at all, written as one.
    if (th.expected * (1 - th.tolerance_pct / 100) < kMinFloor)
      throw BandwidthError(where + ": expected x (1 - tolerance_pct/100) is below " +
                           std::to_string(kMinFloor) + ": a floor that passes everything");
    // Two rows for one point: the judgement would take one and hide the other.
    const std::string key = th.gpu + '\n' + th.link + '\n' + th.nvls + '\n' + std::to_string(th.world_size) +
                            '\n' + th.collective + '\n' + th.placement + '\n' + th.launch + '\n' + th.comm +
                            '\n' + std::to_string(th.min_bytes) + '\n' + th.metric;
    if (auto [it, fresh] = first_line.emplace(key, row.line); !fresh)
      throw BandwidthError(where +
                           ": the same gpu, link, nvls, world_size, collective, placement, launch, "
                           "comm, min_bytes and metric as line " +
                           std::to_string(it->second));
    out.push_back(th);
  }
  return out;
}

std::vector<Threshold> load_thresholds_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, std::size_t{16} << 20);
  } catch (const InputError& e) {
    throw BandwidthError(std::string(e.what()) + " (GPUCTS_BW_THRESHOLDS)");
  }
  return parse_thresholds(text, path);
}

const std::vector<Threshold>& builtin_thresholds() {
  static const std::vector<Threshold> t = [] {
    if (const char* path = std::getenv("GPUCTS_BW_THRESHOLDS"); path && *path)
      return load_thresholds_file(path);
    return parse_thresholds(kBuiltinThresholdsCsv, "bandwidth_thresholds.csv");
  }();
  return t;
}

void check_collectives(const std::vector<Threshold>& table, const std::vector<std::string>& rows) {
  for (const auto& th : table)
    if (std::find(rows.begin(), rows.end(), th.collective) == rows.end())
      throw BandwidthError(th.origin + ":" + std::to_string(th.line) + ": unknown collective '" +
                           th.collective + "'");
}

void check_comm_mode(const std::string& comm) {
  if (comm != kBlocking && comm != kNonblocking)
    throw BandwidthError("communicator mode '" + comm + "': expected blocking or nonblocking");
}

std::string case_name(const CaseName& c) {
  check_comm_mode(c.comm);
  std::string n = c.dtype;
  if (!c.op.empty() && c.op != "sum") n += "_" + c.op;
  n += "_" + std::to_string(c.bytes) + "B_" + (c.in_place ? "inplace" : "outofplace");
  if (c.graph) n += "_graph";
  if (c.comm == kNonblocking) n += "_nonblocking";
  return n + "_w" + std::to_string(c.world);
}

std::string Point::key() const {
  std::string type = dtype;
  if (!op.empty() && op != "sum") type += "_" + op;
  return collective + "/" + type + "/" + std::to_string(bytes) + "/" + placement() + (graph ? "/graph" : "") +
         (comm == kNonblocking ? "/nonblocking" : "");
}

std::string no_data_moves(const Point& p) {
  if (p.ranks == 1 && p.in_place)
    return "one rank in place: input and output are one buffer, nothing is copied (no rate)";
  return "";
}

void compute_rates(Point& p, BusFactor family) {
  double t_s = p.time_us.median * 1e-6;
  p.algbw_gbps = t_s > 0 ? static_cast<double>(p.bytes) / t_s / 1e9 : 0;
  auto f = bus_factor(family, p.ranks);
  if (f)
    p.busbw_gbps = p.algbw_gbps * *f;
  else
    p.busbw_gbps.reset();
}

void judge(Point& p, const Context& ctx, const std::vector<Threshold>& table) {
  const Threshold* best = nullptr;
  for (const auto& th : table) {
    if (th.collective != p.collective) continue;
    if (th.gpu != "any" && th.gpu != ctx.gpu) continue;
    if (th.link != "any" && !ctx.link.empty() && ctx.link != "unknown" && th.link != ctx.link) continue;
    if (th.nvls != "any" && th.nvls != ctx.nvls) continue;
    if (th.world_size && th.world_size != p.ranks) continue;
    if (th.placement != "any" && th.placement != p.placement()) continue;
    if (th.launch != "any" && th.launch != (p.graph ? "graph" : "eager")) continue;
    if (th.comm != "any" && th.comm != p.comm) continue;
    if (th.min_bytes > p.bytes) continue;
    if (!best || th.min_bytes > best->min_bytes) best = &th;
  }
  p.threshold_gbps.reset();
  if (!best) {
    p.verdict = "unjudged";
    p.message = "no threshold for this GPU, world size and size: recorded, not judged";
    return;
  }
  double floor_factor = 1.0 - best->tolerance_pct / 100.0;
  double measured, expected;
  p.threshold_metric = best->metric;
  p.threshold_source = best->source;
  std::ostringstream m;
  m.precision(4);
  if (best->metric == "busbw_gbps") {
    if (!p.busbw_gbps) {
      p.verdict = "unjudged";
      p.message = std::string(kNoBusbwOneRank) + ": busbw threshold not applicable";
      return;
    }
    measured = *p.busbw_gbps;
    expected = best->expected;
    m << "busbw ";
  } else {
    if (!ctx.copy_gbps || *ctx.copy_gbps <= 0) {
      p.verdict = "unjudged";
      p.message = "device-to-device copy bandwidth was not measured: copy-ratio threshold not applicable";
      return;
    }
    measured = p.algbw_gbps;
    expected = best->expected * *ctx.copy_gbps;
    m << "algbw ";
  }
  p.threshold_gbps = expected * floor_factor;
  double ratio = measured / expected;
  m << std::fixed << std::setprecision(1) << measured << " GB/s vs expected " << expected << " GB/s ("
    << std::showpos << (ratio - 1) * 100 << std::noshowpos << "%, floor " << *p.threshold_gbps << " GB/s";
  if (best->metric == "algbw_vs_copy")
    m << " = " << best->expected << " x copy " << *ctx.copy_gbps << " GB/s";
  m << "; " << best->source << ")";
  if (measured >= *p.threshold_gbps) {
    p.verdict = "pass";
    p.message = m.str();
  } else {
    p.verdict = "fail";
    std::ostringstream f;
    f << std::fixed << std::setprecision(1) << (1 - measured / *p.threshold_gbps) * 100
      << "% below the floor: ";
    p.message = f.str() + m.str();
  }
}

namespace {

template <class T>
T get(const nlohmann::json& j, const char* key, const std::string& origin) {
  return json_need<BandwidthError, T>(j, key, origin);
}

std::optional<double> opt_double(const nlohmann::json& j, const char* key, const std::string& origin) {
  return json_maybe<BandwidthError, double>(j, key, origin);
}

// The numbers of a point read back: one line naming the point and the field where they cannot be.
void check_numbers(const Point& p, const std::string& o) {
  auto bad = [&](const char* field, double v, const std::string& why) {
    std::ostringstream m;
    m << o << ": field '" << field << "': " << v << " " << why;
    throw BandwidthError(m.str());
  };
  const Stats& t = p.time_us;
  const double kMaxUs = 1e9;  // a thousand seconds per call
  for (auto [field, v] :
       {std::pair<const char*, double>{"time_us", t.median}, {"time_us_min", t.min}, {"time_us_max", t.max}})
    if (!std::isfinite(v) || v <= 0 || v > kMaxUs) bad(field, v, "is not a time of one call (0 < us <= 1e9)");
  if (t.min > t.median || t.median > t.max)
    bad("time_us", t.median, "is not between time_us_min and time_us_max");
  for (auto [field, v] : {std::pair<const char*, std::optional<double>>{"host_time_us", p.host_time_us},
                          {"enqueue_us", p.enqueue_us}})
    if (v && (!std::isfinite(*v) || *v < 0 || *v > kMaxUs))
      bad(field, *v, "is not a host time of one call (0 <= us <= 1e9)");
  const double spread = (t.max - t.min) / t.median * 100.0;
  if (!std::isfinite(t.spread_pct) || t.spread_pct < 0) bad("spread_pct", t.spread_pct, "must be >= 0");
  if (std::fabs(t.spread_pct - spread) > 0.01 + 0.01 * spread)
    bad("spread_pct", t.spread_pct, "is not (max - min) / median of the times recorded");
  if (p.bytes == 0) bad("bytes", 0, "must be at least 1");
  if (p.ranks < 1) bad("ranks", p.ranks, "must be at least 1");
  // Where no data moves (one rank in place) bytes over a sub-microsecond no-op exceed any link: the
  // figure is kept as measured and never read as a rate (no_data_moves), so only its sign is checked.
  const bool moves = no_data_moves(p).empty();
  if (!std::isfinite(p.algbw_gbps) || p.algbw_gbps <= 0 || (moves && p.algbw_gbps > kMaxPlausibleGbps))
    bad("algbw_gbps", p.algbw_gbps, moves ? "is not a rate (0 < GB/s <= 1e7)" : "is not a positive figure");
  const double algbw = static_cast<double>(p.bytes) / (t.median * 1e3);
  if (std::fabs(p.algbw_gbps - algbw) > 0.01 * algbw)
    bad("algbw_gbps", p.algbw_gbps, "is not bytes over the median time");
  if (p.busbw_gbps &&
      (!std::isfinite(*p.busbw_gbps) || *p.busbw_gbps < 0 || *p.busbw_gbps > 2 * p.algbw_gbps))
    bad("busbw_gbps", *p.busbw_gbps, "is not algbw times a bus factor (0 to 2)");
  if (p.busbw_gbps && p.ranks == 1) bad("busbw_gbps", *p.busbw_gbps, "is given for one rank");
  if (p.threshold_gbps &&
      (!std::isfinite(*p.threshold_gbps) || *p.threshold_gbps <= 0 || *p.threshold_gbps > kMaxPlausibleGbps))
    bad("threshold_gbps", *p.threshold_gbps, "is not a rate (0 < GB/s <= 1e7)");
}

}  // namespace

nlohmann::json to_json(const Run& r) {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : r.points) {
    pts.push_back({{"collective", p.collective},
                   {"dtype", p.dtype},
                   {"op", p.op},
                   {"comm", p.comm},
                   {"bytes", p.bytes},
                   {"in_place", p.in_place},
                   {"graph", p.graph},
                   {"ranks", p.ranks},
                   {"iterations", p.iterations},
                   {"repetitions", p.time_us.n},
                   {"time_us", p.time_us.median},
                   {"time_us_min", p.time_us.min},
                   {"time_us_max", p.time_us.max},
                   {"spread_pct", p.time_us.spread_pct},
                   {"host_time_us", json_or_null(p.host_time_us)},
                   {"enqueue_us", json_or_null(p.enqueue_us)},
                   {"algbw_gbps", p.algbw_gbps},
                   {"busbw_gbps", json_or_null(p.busbw_gbps)},
                   {"busbw_note", p.busbw_gbps ? "" : kNoBusbwOneRank},
                   {"verdict", p.verdict},
                   {"threshold_gbps", json_or_null(p.threshold_gbps)},
                   {"threshold_metric", p.threshold_metric},
                   {"threshold_source", p.threshold_source},
                   {"message", p.message}});
  }
  return {{"schema", kBandwidthSchema},
          {"host", r.host},
          {"nccl", r.nccl_version},
          {"gpu", r.ctx.gpu},
          {"link", r.ctx.link},
          {"nvls", r.ctx.nvls},
          {"world_size", r.ctx.world_size},
          {"copy_gbps", json_or_null(r.ctx.copy_gbps)},
          {"points", pts}};
}

Run run_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw BandwidthError(origin + ": not a JSON object");
  if (get<std::string>(j, "schema", origin) != kBandwidthSchema)
    throw BandwidthError(origin + ": schema is not " + kBandwidthSchema);
  Run r;
  r.host = get<std::string>(j, "host", origin);
  r.nccl_version = get<std::string>(j, "nccl", origin);
  r.ctx.gpu = get<std::string>(j, "gpu", origin);
  r.ctx.link = get<std::string>(j, "link", origin);
  r.ctx.nvls = get<std::string>(j, "nvls", origin);
  r.ctx.world_size = get<int>(j, "world_size", origin);
  r.ctx.copy_gbps = opt_double(j, "copy_gbps", origin);
  const auto pts = get<nlohmann::json>(j, "points", origin);
  if (!pts.is_array()) throw BandwidthError(origin + ": 'points' must be an array");
  std::map<std::string, size_t> first_of_key;
  for (size_t i = 0; i < pts.size(); ++i) {
    std::string o = origin + ": points[" + std::to_string(i) + "]";
    const auto& q = pts[i];
    Point p;
    p.collective = get<std::string>(q, "collective", o);
    p.dtype = get<std::string>(q, "dtype", o);
    p.op = json_maybe<BandwidthError, std::string>(q, "op", o).value_or("");
    p.comm = json_maybe<BandwidthError, std::string>(q, "comm", o).value_or(kBlocking);
    try {
      check_comm_mode(p.comm);
    } catch (const BandwidthError& e) {
      throw BandwidthError(o + ": " + e.what());
    }
    p.bytes = get<std::uint64_t>(q, "bytes", o);
    p.in_place = get<bool>(q, "in_place", o);
    p.graph = get<bool>(q, "graph", o);
    p.ranks = get<int>(q, "ranks", o);
    p.iterations = get<int>(q, "iterations", o);
    p.time_us.n = get<size_t>(q, "repetitions", o);
    p.time_us.median = get<double>(q, "time_us", o);
    p.time_us.min = get<double>(q, "time_us_min", o);
    p.time_us.max = get<double>(q, "time_us_max", o);
    p.time_us.spread_pct = get<double>(q, "spread_pct", o);
    p.host_time_us = opt_double(q, "host_time_us", o);
    p.enqueue_us = opt_double(q, "enqueue_us", o);
    p.algbw_gbps = get<double>(q, "algbw_gbps", o);
    p.busbw_gbps = opt_double(q, "busbw_gbps", o);
    p.verdict = get<std::string>(q, "verdict", o);
    if (p.verdict != "pass" && p.verdict != "fail" && p.verdict != "unjudged")
      throw BandwidthError(o + ": verdict must be pass, fail or unjudged");
    p.threshold_gbps = opt_double(q, "threshold_gbps", o);
    p.threshold_metric = json_maybe<BandwidthError, std::string>(q, "threshold_metric", o).value_or("");
    p.threshold_source = json_maybe<BandwidthError, std::string>(q, "threshold_source", o).value_or("");
    p.message = json_maybe<BandwidthError, std::string>(q, "message", o).value_or("");
    check_numbers(p, o);
    if (auto [at, fresh] = first_of_key.emplace(p.key(), i); !fresh)
      throw BandwidthError(o + ": a second point for " + p.key() + " (the first is points[" +
                           std::to_string(at->second) + "])");
    r.points.push_back(std::move(p));
  }
  return r;
}

std::string to_csv(const Run& r) {
  std::ostringstream o;
  o << "collective,dtype,bytes,placement,graph,ranks,iterations,repetitions,time_us,time_us_min,time_us_max,"
       "spread_pct,algbw_gbps,busbw_gbps,verdict,threshold_gbps,op,comm,host_time_us,enqueue_us\n";
  o.precision(6);
  for (const auto& p : r.points) {
    o << p.collective << ',' << p.dtype << ',' << p.bytes << ',' << p.placement() << ',' << (p.graph ? 1 : 0)
      << ',' << p.ranks << ',' << p.iterations << ',' << p.time_us.n << ',' << p.time_us.median << ','
      << p.time_us.min << ',' << p.time_us.max << ',' << p.time_us.spread_pct << ',' << p.algbw_gbps << ',';
    if (p.busbw_gbps) o << *p.busbw_gbps;  // empty where busbw is not defined (one rank)
    o << ',' << p.verdict << ',';
    if (p.threshold_gbps) o << *p.threshold_gbps;
    o << ',' << p.op << ',' << p.comm << ',';
    if (p.host_time_us) o << *p.host_time_us;
    o << ',';
    if (p.enqueue_us) o << *p.enqueue_us;
    o << '\n';
  }
  return o.str();
}

Run load_run_file(const std::string& path) {
  nlohmann::json j;
  try {
    j = parse_json(read_input_file(path), path);  // "path:line:column: malformed JSON: ..."
  } catch (const InputError& e) {
    throw BandwidthError(e.what());
  }
  return run_from_json(j, path);
}

}  // namespace cts::bw
