// Bandwidth of every row of the collective table (fixtures/collectives.hpp) over a size sweep, in
// one process over the first N visible GPUs: one GoogleTest case per (row, size, placement[, graph]),
// e.g. AllReduce/f32_1073741824B_outofplace_w1. Each case times many back-to-back calls between
// CUDA events after a warm-up, takes the median and spread over repetitions, computes algbw and
// busbw with nccl-tests' factors (fixtures/bandwidth.hpp) and is judged against the thresholds
// data; a point with no threshold is recorded, not judged. With one rank busbw is not defined and
// algbw is judged against cudaMemcpyAsync device-to-device measured in the same run.
// Results go to <GPUCTS_BW_OUTPUT>.json/.csv after every case (qualify collects them).
//
// Flags (or environment): --world-size=N|all (GPUCTS_WORLD_SIZE, default 1),
// --sweep=MIN:MAX:FACTOR (GPUCTS_BW_SWEEP, default 8:1G:2), --iters=N (GPUCTS_BW_ITERS, 20),
// --warmup=N (GPUCTS_BW_WARMUP, 5), --reps=N (GPUCTS_BW_REPS, 5), --graph (GPUCTS_BW_GRAPH=1: the
// iterations are captured once into a CUDA graph and replayed), --output=PREFIX (GPUCTS_BW_OUTPUT).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bandwidth.hpp"
#include "collectives.hpp"
#include "environment.hpp"
#include "file_names.hpp"
#include "gtest_main.hpp"
#include "nccl_util.hpp"
#include "output_file.hpp"
#include "require.hpp"
#include "world.hpp"

namespace {

struct Settings {
  int world = 1;
  std::vector<std::uint64_t> sizes;
  int iters = 20, warmup = 5, reps = 5;
  bool graph = false;
  std::string output;
};
Settings g_settings;

constexpr cts::DType kDType = cts::DType::f32;  // nccl-tests' default type
constexpr std::size_t kElem = 4;

// Per local rank: one send and one receive buffer of the largest size, allocated once.
struct Buffers {
  int device = 0;
  void* send = nullptr;
  void* recv = nullptr;
  std::size_t bytes = 0;
};

class Pool {
 public:
  ~Pool() { release(); }
  const std::vector<Buffers>& get(const cts::World& w, std::size_t bytes) {
    bool ok = bufs_.size() == w.local().size();
    for (size_t i = 0; ok && i < bufs_.size(); ++i) ok = bufs_[i].device == w.local()[i].device && bufs_[i].bytes >= bytes;
    if (ok) return bufs_;
    release();
    for (const auto& r : w.local()) {
      Buffers b;
      b.device = r.device;
      b.bytes = bytes;
      cts::cuda_ok("cudaSetDevice", cudaSetDevice(r.device));
      cts::cuda_ok("cudaMalloc send", cudaMalloc(&b.send, bytes));
      cts::cuda_ok("cudaMalloc recv", cudaMalloc(&b.recv, bytes));
      // Defined contents: reductions over uninitialised memory could meet NaN or denormal paths.
      cts::cuda_ok("cudaMemset", cudaMemset(b.send, 0, bytes));
      cts::cuda_ok("cudaMemset", cudaMemset(b.recv, 0, bytes));
      bufs_.push_back(b);
    }
    return bufs_;
  }
  void release() {
    for (auto& b : bufs_) {
      cudaSetDevice(b.device);
      cudaFree(b.send);
      cudaFree(b.recv);
    }
    bufs_.clear();
  }

 private:
  std::vector<Buffers> bufs_;
};

Pool& pool() {
  static Pool p;
  return p;
}

// CUDA events on each rank's device, around `body` (which issues `calls` calls), repeated.
class Timer {
 public:
  explicit Timer(const cts::World& w) : w_(w) {
    for (const auto& r : w.local()) {
      cts::cuda_ok("cudaSetDevice", cudaSetDevice(r.device));
      cudaEvent_t a, b;
      cts::cuda_ok("cudaEventCreate", cudaEventCreate(&a));
      cts::cuda_ok("cudaEventCreate", cudaEventCreate(&b));
      start_.push_back(a);
      stop_.push_back(b);
    }
  }
  ~Timer() {
    for (size_t i = 0; i < start_.size(); ++i) {
      cudaSetDevice(w_.local()[i].device);
      cudaEventDestroy(start_[i]);
      cudaEventDestroy(stop_[i]);
    }
  }
  // Microseconds per call, the slowest rank's (a collective ends when its last rank does).
  template <class Body>
  double per_call_us(Body&& body, int calls) {
    record(start_);
    body();
    record(stop_);
    wait();
    float worst = 0;
    for (size_t i = 0; i < start_.size(); ++i) {
      float ms = 0;
      cts::cuda_ok("cudaEventElapsedTime", cudaEventElapsedTime(&ms, start_[i], stop_[i]));
      worst = std::max(worst, ms);
    }
    return worst * 1000.0 / calls;
  }
  void wait() {
    std::vector<ncclComm_t> comms;
    std::vector<cudaStream_t> streams;
    for (const auto& r : w_.local()) {
      comms.push_back(r.comm);
      streams.push_back(r.stream);
    }
    cts::wait_streams(comms, streams, cts::deadline_after(cts::case_timeout_s()), "bandwidth timing");
  }

 private:
  void record(std::vector<cudaEvent_t>& ev) {
    for (size_t i = 0; i < ev.size(); ++i) {
      cts::cuda_ok("cudaSetDevice", cudaSetDevice(w_.local()[i].device));
      cts::cuda_ok("cudaEventRecord", cudaEventRecord(ev[i], w_.local()[i].stream));
    }
  }
  const cts::World& w_;
  std::vector<cudaEvent_t> start_, stop_;
};

// Everything measured in this process, written after each case so a crash keeps what ran.
struct Results {
  cts::bw::Run run;
  bool context_set = false;
  void write() {
    if (g_settings.output.empty()) return;
    try {
      cts::write_file_atomic(g_settings.output + ".json", cts::bw::to_json(run).dump(2) + "\n");
      cts::write_file_atomic(g_settings.output + ".csv", cts::bw::to_csv(run));
    } catch (const cts::OutputError& e) {
      ADD_FAILURE() << "bandwidth results not written: " << e.what();
    }
  }
};
Results& results() {
  static Results r;
  return r;
}

std::vector<ncclComm_t> comms_of(const cts::World& w) {
  std::vector<ncclComm_t> c;
  for (const auto& r : w.local()) c.push_back(r.comm);
  return c;
}

int lowest_sm(const cts::World& w) {
  int sm = 1000;
  for (const auto& r : w.local()) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, r.device) == cudaSuccess) sm = std::min(sm, 10 * p.major + p.minor);
  }
  return sm;
}

// The run's context, once: GPU model, link, NVLS, and the device-to-device copy rate (bytes/time
// of cudaMemcpyAsync at min(1 GiB, largest size) on the first local GPU, median of repetitions).
void ensure_context(cts::World& w) {
  auto& res = results();
  if (res.context_set) return;
  const auto& r0 = w.local().front();
  cudaDeviceProp p{};
  cts::cuda_ok("cudaGetDeviceProperties", cudaGetDeviceProperties(&p, r0.device));
  res.run.ctx.gpu = p.name;
  res.run.ctx.world_size = w.nranks();
  const char* link = std::getenv("GPUCTS_BW_LINK");
  res.run.ctx.link = w.nranks() == 1 ? "none" : (link && *link ? link : "unknown");
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  res.run.ctx.nvls = nvls && std::string(nvls) == "0" ? "off" : "on";
  res.run.nccl_version = cts::nccl_runtime_version().release_str();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  res.run.host = host;

  std::size_t bytes = std::min<std::uint64_t>(std::uint64_t(1) << 30, g_settings.sizes.back());
  const auto& b = pool().get(w, g_settings.sizes.back()).front();
  cts::cuda_ok("cudaSetDevice", cudaSetDevice(r0.device));
  cudaStream_t s = r0.stream;
  auto copy = [&] { cts::cuda_ok("cudaMemcpyAsync", cudaMemcpyAsync(b.recv, b.send, bytes, cudaMemcpyDeviceToDevice, s)); };
  for (int i = 0; i < g_settings.warmup; ++i) copy();
  cudaEvent_t e0, e1;
  cts::cuda_ok("cudaEventCreate", cudaEventCreate(&e0));
  cts::cuda_ok("cudaEventCreate", cudaEventCreate(&e1));
  std::vector<double> us;
  for (int rep = 0; rep < g_settings.reps; ++rep) {
    cudaEventRecord(e0, s);
    for (int i = 0; i < g_settings.iters; ++i) copy();
    cudaEventRecord(e1, s);
    cts::cuda_ok("cudaEventSynchronize", cudaEventSynchronize(e1));
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    us.push_back(ms * 1000.0 / g_settings.iters);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  double median = cts::bw::summarize(us).median;
  res.run.ctx.copy_gbps = static_cast<double>(bytes) / (median * 1e-6) / 1e9;
  std::printf("gpucts_bandwidth: %s, %d rank(s), NCCL %s; cudaMemcpyAsync D2D %s: %.1f us = %.1f GB/s (bytes/time)\n",
              p.name, w.nranks(), res.run.nccl_version.c_str(), cts::bw::format_bytes(bytes).c_str(), median,
              *res.run.ctx.copy_gbps);
  res.context_set = true;
}

struct BwCase {
  const cts::Collective* coll;
  std::uint64_t bytes;
  bool in_place;
  bool graph;
  std::string name() const {
    return std::string("f32_") + std::to_string(bytes) + "B_" + (in_place ? "inplace" : "outofplace") +
           (graph ? "_graph" : "") + "_w" + std::to_string(g_settings.world);
  }
};

class BandwidthCase : public ::testing::Test {
 public:
  explicit BandwidthCase(BwCase c) : c_(c) {}
  void TestBody() override {
    CTS_REQUIRE_GPUS(g_settings.world);
    cts::WorldConfig cfg;
    cfg.size = g_settings.world;
    cts::World* w = nullptr;
    try {
      w = &cts::single_process_world(cfg);
    } catch (const std::exception& e) {
      FAIL() << "cannot create the world " << cfg.key() << ": " << e.what();
    }
    const int n = w->nranks();
    // The per-rank block count: nccl-tests' "size" is the larger of one rank's send and receive.
    const std::size_t blocks = std::max(c_.coll->send_count(1, n), c_.coll->recv_count(1, n));
    const std::size_t count = c_.bytes / (kElem * blocks);
    if (count == 0)
      GTEST_SKIP() << c_.bytes << " B is less than one f32 element per block (" << blocks << " blocks at " << n
                   << " ranks)";
    cts::CollCase cc;
    cc.coll = c_.coll;
    cc.dtype = kDType;
    if (c_.coll->reduces) cc.op = cts::RedOp::sum;
    cc.count = count;
    cc.in_place = c_.in_place;
    cc.world = n;
    auto sup = cts::case_support(cc, cts::nccl_runtime_version(), NCCL_VERSION_CODE, lowest_sm(*w), n);
    if (!sup.ok) GTEST_SKIP() << sup.reason;
    if (c_.graph && w->local().size() != 1)
      GTEST_SKIP() << "CUDA-graph replay is measured with one GPU per process; this single-process world drives "
                   << w->local().size() << " GPUs";
    try {
      measure(*w, count, n, blocks);
    } catch (const cts::NcclError& e) {
      ADD_FAILURE() << e.what();
      w->rebuild();
    }
  }

 private:
  void measure(cts::World& w, std::size_t count, int n, std::size_t blocks) {
    ensure_context(w);
    const auto& bufs = pool().get(w, g_settings.sizes.back());
    std::vector<cts::CallArgs> args;
    for (size_t i = 0; i < w.local().size(); ++i) {
      const auto& r = w.local()[i];
      char* send = static_cast<char*>(bufs[i].send);
      char* recv = static_cast<char*>(bufs[i].recv);
      const std::size_t block = count * kElem;
      if (c_.in_place) {
        switch (c_.coll->in_place) {
          case cts::InPlace::same: send = recv; break;
          case cts::InPlace::send_in_recv: send = recv + static_cast<std::size_t>(r.rank) * block; break;
          case cts::InPlace::recv_in_send: recv = send + static_cast<std::size_t>(r.rank) * block; break;
          case cts::InPlace::none: break;
        }
      }
      args.push_back({send, recv, count, kDType, ncclSum, 0, r.rank, n, r.comm, r.stream});
    }
    auto comms = comms_of(w);
    // One call on every local rank inside one group; with nonblocking communicators the work is
    // on the streams only once ncclCommGetAsyncError stops saying ncclInProgress.
    auto one_call = [&] {
      cts::in_group(c_.coll->name, [&] {
        for (size_t i = 0; i < args.size(); ++i) {
          cts::cuda_ok("cudaSetDevice", cudaSetDevice(w.local()[i].device));
          cts::nccl_check(c_.coll->name, c_.coll->call(args[i]), args[i].comm);
        }
      });
      cts::wait_comms(comms, cts::deadline_after(cts::case_timeout_s()), c_.coll->name);
    };
    Timer t(w);
    for (int i = 0; i < g_settings.warmup; ++i) one_call();
    t.wait();
    std::vector<double> samples;
    if (c_.graph) {
      const auto& r = w.local().front();
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      cts::cuda_ok("cudaStreamBeginCapture", cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
      try {
        for (int i = 0; i < g_settings.iters; ++i) one_call();
      } catch (...) {
        cudaStreamEndCapture(r.stream, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      cts::cuda_ok("cudaStreamEndCapture", cudaStreamEndCapture(r.stream, &graph));
      cts::cuda_ok("cudaGraphInstantiate", cudaGraphInstantiate(&exec, graph, 0));
      cts::cuda_ok("cudaGraphLaunch (warm-up)", cudaGraphLaunch(exec, r.stream));
      t.wait();
      for (int rep = 0; rep < g_settings.reps; ++rep)
        samples.push_back(t.per_call_us([&] { cts::cuda_ok("cudaGraphLaunch", cudaGraphLaunch(exec, r.stream)); },
                                        g_settings.iters));
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    } else {
      for (int rep = 0; rep < g_settings.reps; ++rep)
        samples.push_back(t.per_call_us(
            [&] {
              for (int i = 0; i < g_settings.iters; ++i) one_call();
            },
            g_settings.iters));
    }
    cts::bw::Point p;
    p.collective = c_.coll->name;
    p.dtype = "f32";
    p.bytes = count * kElem * blocks;
    p.in_place = c_.in_place;
    p.graph = c_.graph;
    p.ranks = n;
    p.iterations = g_settings.iters;
    p.time_us = cts::bw::summarize(samples);
    cts::bw::compute_rates(p);
    cts::bw::judge(p, results().run.ctx, cts::bw::builtin_thresholds());
    results().run.points.push_back(p);
    results().write();

    char line[320];
    std::snprintf(line, sizeof line, "%-16s %12llu B %-12s%s time %10.2f us (spread %.1f%%)  algbw %8.2f GB/s  busbw %s",
                  p.collective.c_str(), static_cast<unsigned long long>(p.bytes), p.placement().c_str(),
                  p.graph ? " graph" : "", p.time_us.median, p.time_us.spread_pct, p.algbw_gbps,
                  p.busbw_gbps ? (std::to_string(*p.busbw_gbps).substr(0, 8) + " GB/s").c_str() : cts::bw::kNoBusbwOneRank);
    std::printf("%s  [%s]\n", line, p.verdict.c_str());
    RecordProperty("time_us", std::to_string(p.time_us.median));
    RecordProperty("algbw_gbps", std::to_string(p.algbw_gbps));
    RecordProperty("busbw_gbps", p.busbw_gbps ? std::to_string(*p.busbw_gbps) : cts::bw::kNoBusbwOneRank);
    RecordProperty("bandwidth_verdict", p.verdict + (p.message.empty() ? "" : ": " + p.message));
    EXPECT_NE(p.verdict, "fail") << p.key() << ": " << p.message;
  }

  BwCase c_;
};

// Takes "--name=value" / "--name value" (or a bare "--name" for a switch) out of argv.
bool take_flag(int& argc, char** argv, const std::string& name, std::string* value) {
  bool found = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    int eat = 0;
    if (a.rfind(name + "=", 0) == 0) {
      if (value) *value = a.substr(name.size() + 1);
      eat = 1;
    } else if (a == name) {
      eat = 1;
      if (value && i + 1 < argc) {
        *value = argv[i + 1];
        eat = 2;
      }
    }
    if (eat) {
      found = true;
      for (int j = i; j + eat <= argc; ++j) argv[j] = argv[j + eat];
      argc -= eat;
      --i;
    }
  }
  return found;
}

std::string setting(int& argc, char** argv, const char* flag, const char* env, const char* fallback) {
  std::string v = fallback;
  if (const char* e = std::getenv(env); e && *e) v = e;
  take_flag(argc, argv, flag, &v);
  return v;
}

int positive(const std::string& what, const std::string& v) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < 1 || n > 1000000) throw std::runtime_error(what + " '" + v + "': expected a number >= 1");
  return static_cast<int>(n);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string world = setting(argc, argv, "--world-size", "GPUCTS_WORLD_SIZE", "1");
    g_settings.sizes = cts::bw::parse_sweep(setting(argc, argv, "--sweep", "GPUCTS_BW_SWEEP", cts::bw::kDefaultSweep));
    g_settings.iters = positive("--iters", setting(argc, argv, "--iters", "GPUCTS_BW_ITERS", "20"));
    g_settings.warmup = positive("--warmup", setting(argc, argv, "--warmup", "GPUCTS_BW_WARMUP", "5"));
    g_settings.reps = positive("--reps", setting(argc, argv, "--reps", "GPUCTS_BW_REPS", "5"));
    const char* ge = std::getenv("GPUCTS_BW_GRAPH");
    g_settings.graph = take_flag(argc, argv, "--graph", nullptr) || (ge && std::string(ge) == "1");
    const char* tn = std::getenv("GPUCTS_TEST_NAME");
    std::string test = cts::file_name_for(tn && *tn ? tn : "gpucts_bandwidth");
    std::string fallback;
    if (const char* j = std::getenv("GPUCTS_JOURNAL_DIR"); j && *j) fallback = std::string(j) + "/../" + test + ".bandwidth";
    else fallback = test + ".bandwidth";
    g_settings.output = setting(argc, argv, "--output", "GPUCTS_BW_OUTPUT", fallback.c_str());
    // The GPU mapping precedes the first CUDA call (visible_gpu_count for "all").
    const std::string mapped = cts::apply_ctest_resource_groups();
    if (!mapped.empty()) unsetenv("CTEST_RESOURCE_GROUP_COUNT");
    g_settings.world = world == "all" ? std::max(1, cts::visible_gpu_count()) : positive("--world-size", world);
    cts::bw::builtin_thresholds();  // a broken thresholds file is bad input, before any case
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucts_bandwidth: %s\n", e.what());
    return 2;
  }
  for (const auto& coll : cts::collectives())
    for (std::uint64_t bytes : g_settings.sizes)
      for (bool in_place : {false, true}) {
        if (in_place && coll.in_place == cts::InPlace::none) continue;  // the row has no in-place form
        BwCase c{&coll, bytes, in_place, g_settings.graph};
        ::testing::RegisterTest(coll.name, c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                                [c]() -> ::testing::Test* { return new BandwidthCase(c); });
      }
  cts::MainOptions opts;
  opts.finish = [](int rc) {
    pool().release();
    cts::release_worlds();
    if (!results().run.points.empty())
      std::printf("gpucts_bandwidth: %zu points -> %s.json, %s.csv\n", results().run.points.size(),
                  g_settings.output.c_str(), g_settings.output.c_str());
    return rc;
  };
  return cts::run_gtest_main(argc, argv, opts);
}
