// The device check functions (kernels/payload_impl.cuh are __host__ __device__) run on the CPU
// against an independent model of each collective, computed in the dtype's own arithmetic in
// different orders per rank: exact mode must find no mismatch (every reduction is exact in any
// order, fp8 and bf16 included), mixed mode must stay within its bound, and a poisoned or
// doubled element must be caught. No GPU needed.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "fixtures/nccl/collectives.hpp"
#include "kernels/payload_impl.cuh"

namespace {
using namespace cts;
using detail::Elem;

struct Param {
  const Collective* coll;
  const RedOpInfo* op;  // a row of kRedOps (or of a test's own table), nullptr for copies
  PayloadMode mode;
  int n;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const Param& c, std::ostream* os) {
  *os << c.coll->name << (c.op ? std::string("_") + c.op->name : std::string()) << "_" << name_of(c.mode)
      << "_n" << c.n;
}

// The check of one rank's output, as make_check_spec builds it, from GenParams (which a test-only
// op row gives as well as a row of kRedOps).
template <DType D>
detail::CheckSpec spec_of(const GenParams& g, const Expectation& e, const void* got) {
  detail::CheckSpec s;
  s.g = g;
  s.kind = static_cast<int>(e.kind);
  s.base = e.base;
  s.block = e.block;
  s.src_rank = e.src_rank;
  s.u = unit_roundoff(D);
  s.denorm = dtype_info(D).is_float ? dtype_info(D).denorm_min : 0.0;
  s.got = got;
  return s;
}

template <DType D>
struct Model {
  using T = device_t<D>;
  const Param& p;
  GenParams g;  // from the op's row: a test-only row works as one of kRedOps
  double scalar;
  std::size_t count;
  int root = 0;

  // in[s]: rank s's send buffer (sized for the row)
  std::vector<std::vector<T>> inputs() const {
    std::vector<std::vector<T>> in(p.n);
    for (int s = 0; s < p.n; ++s)
      for (std::size_t i = 0; i < p.coll->send_count(count, p.n); ++i)
        in[s].push_back(from_double<T>(raw_value(g, s, i)));
    return in;
  }
  // Reduction in T in NCCL's order (the op's rules, dtypes.hpp), ranks visited forward or
  // backward, each step rounded to T as NCCL does.
  T reduce(const std::vector<std::vector<T>>& in, std::size_t idx, bool backward) const {
    const bool is_float = dtype_info(D).is_float;
    auto round = [](double v) { return to_double(from_double<T>(v)); };
    const double factor = round(nccl_input_factor(p.op->scaling, round(scalar), round(1.0 / p.n), is_float));
    double acc = 0;
    for (int k = 0; k < p.n; ++k) {
      const int r = backward ? p.n - 1 - k : k;
      double x = to_double(in[r][idx]);
      if (factor != 1.0) x = round(x * factor);
      acc = k == 0 ? x : round(combine_values(p.op->combine, acc, x));
    }
    return from_double<T>(nccl_result(p.op->scaling, acc, p.n, is_float));
  }
  // What a correct NCCL writes into rank r's receive buffer: the row's host model, element by element.
  std::vector<T> output(const std::vector<std::vector<T>>& in, int r) const {
    std::vector<T> out(p.coll->recv_count(count, p.n));
    const bool back = r % 2 == 1;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const ElemSource src = p.coll->model(r, p.n, count, root, i);
      out[i] = src.reduce ? reduce(in, src.index, back) : in.at(src.src).at(src.index);
    }
    return out;
  }
  std::uint64_t mismatches(const std::vector<T>& got, int r, double* worst) const {
    const Expectation e = p.coll->expect(r, p.n, count, root);
    Elem<D> el{spec_of<D>(g, e, got.data())};
    std::uint64_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      detail::Acc a = el(static_cast<std::int64_t>(i));
      bad += a.bad;
      if (a.worst < 1e299 && a.worst > *worst) *worst = a.worst;
    }
    return bad;
  }
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& c : collectives())
    for (int n : {1, 2, 3, 4, 8}) {
      if (c.reduces) {
        for (const auto& o : kRedOps)
          for (PayloadMode m : {PayloadMode::exact, PayloadMode::mixed}) out.push_back({&c, &o, m, n});
      } else {
        out.push_back({&c, nullptr, PayloadMode::exact, n});
      }
    }
  return out;
}

// Every dtype of one (row, op, mode, n): the model's output passes the device check, a poisoned
// or a wrong element fails it.
void check_row(const Param& p) {
  for (const auto& t : kDTypes) {
    visit_dtype(t.id, [&](auto tag) {
      constexpr DType D = decltype(tag)::value;
      using T = device_t<D>;
      const double scalar = op_scalar(p.op, D, p.mode);
      if (p.op && p.mode == PayloadMode::exact && exact_limitation(D, *p.op, p.n))
        return;  // listed as mixed instead
      Model<D> m{p, make_gen_params(D, p.op, p.mode, 11, p.n, scalar), scalar, 37,
                 p.coll->rooted ? p.n - 1 : 0};
      const auto in = m.inputs();
      for (int r = 0; r < p.n; ++r) {
        if (!p.coll->defined_at(r, m.root)) continue;
        auto out = m.output(in, r);
        double worst = 0;
        ASSERT_EQ(m.mismatches(out, r, &worst), 0u) << t.name << " rank " << r << " worst " << worst;
        // A never-written element (poison) is caught.
        auto poisoned = out;
        std::memset(static_cast<void*>(&poisoned[5]), 0xFF,
                    sizeof(T));  // void*: __half keeps its bits protected
        EXPECT_EQ(m.mismatches(poisoned, r, &worst), 1u) << t.name << ": poison not caught";
        // Exact mode: an element one unit off is caught.
        if (p.mode == PayloadMode::exact || !dtype_info(D).is_float) {
          auto off = out;
          const double v = to_double(off[7]);
          off[7] = from_double<T>(v == 1 ? 2.0 : 1.0);
          EXPECT_EQ(m.mismatches(off, r, &worst), 1u) << t.name << ": a wrong element passed";
        }
      }
    });
  }
}

class PayloadModel : public ::testing::TestWithParam<Param> {};

TEST_P(PayloadModel, CorrectOutputPassesAndWrongOutputFails) { check_row(GetParam()); }

// Adding a collective is one row: a test-only row (a copy of AllGather under a name no row has) is
// checked through its own host model with no other edit; a row whose model says something else
// than its expectation fails, so the model is what is checked.
TEST(PayloadModelRow, ATestOnlyRowIsCheckedThroughItsOwnModel) {
  Collective copy = *find_collective("AllGather");
  copy.name = "AllGatherTestOnly";
  ASSERT_EQ(find_collective(copy.name), nullptr) << "the test-only row's name is taken";
  for (int n : {1, 3, 4}) check_row({&copy, nullptr, PayloadMode::exact, n});
  Collective wrong = copy;
  wrong.name = "AllGatherWrongModel";
  wrong.model = [](int, int n, std::size_t c, int, std::size_t i) {  // the blocks in reversed rank order
    return ElemSource::copy(n - 1 - static_cast<int>(i / c), i % c);
  };
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    check_row({&wrong, nullptr, PayloadMode::exact, 3});
  }
  EXPECT_GT(failures.size(), 0) << "a model that disagrees with the row's expectation passed";
}

INSTANTIATE_TEST_SUITE_P(AllRows, PayloadModel, ::testing::ValuesIn(params()), [](const auto& info) {
  const Param& p = info.param;
  return std::string(p.coll->name) + (p.op ? std::string("_") + p.op->name : "") + "_" + name_of(p.mode) +
         "_n" + std::to_string(p.n);
});

}  // namespace

// The kernels' fast exact path (Exact<D>: 16-byte vectors, integer arithmetic) against the
// reference Elem<D>, lane by lane, on the CPU: for every dtype, op, world size, expectation kind,
// at the start, at odd offsets and across the 2^32 index wrap, both the element-wise form (head,
// tail) and the vector form inside the segment the launcher would give it. The device falls back
// to Elem only where bits differ, so a lane that differs here would be a missed-or-slow check there.
namespace {
template <class S>
S lane_of(const uint4& v, int k) {
  S s[16 / sizeof(S)];
  std::memcpy(s, &v, sizeof(v));
  return s[k];
}

// The segment constant the launcher uses for element i (for_each_segment over a buffer that reaches past i).
template <DType D>
std::uint32_t segment_of(const detail::Exact<D>& ex, std::int64_t i, std::int64_t* seg_end) {
  std::uint32_t seg = 0;
  ex.for_each_segment(i + 64, [&](std::int64_t b, std::int64_t e, std::uint32_t s) {
    if (i >= b && i < e) seg = s, *seg_end = e;
  });
  return seg;
}

template <DType D>
std::string exact_mismatch(const detail::CheckSpec& spec) {
  using T = device_t<D>;
  using S = detail::storage_t<D>;
  constexpr int L = detail::kLanes<D>;
  detail::Exact<D> ex;
  if (!detail::make_exact(spec, &ex)) return "";  // the device uses Elem for all of it
  Elem<D> ref{spec};
  detail::Exact<D> fill;
  if (!detail::make_exact(spec.g, &fill)) return "the fill has no fast path";
  const std::int64_t starts[] = {0, 1, 37, 1000003, 0xFFFFFFFFLL - 3, 0xFFFFFFFFLL - 17, (1LL << 32) + 5};
  for (std::int64_t i0 : starts) {
    std::int64_t seg_end = 0;
    ex.seg = segment_of(ex, i0, &seg_end);
    const bool one_segment = i0 + L <= seg_end;  // the launcher never forms a vector across segments
    const uint4 vec = ex.expected_vec(i0);
    for (int k = 0; k < L; ++k) {
      double sa, ar;
      const double want = ref.reference(i0 + k, &sa, &ar);
      const S want_bits = detail::bit_cast_hd<S>(from_double<T>(want));
      const S one = ex.expected1(i0 + k);
      if (one != want_bits || (one_segment && lane_of<S>(vec, k) != want_bits))
        return "index " + std::to_string(i0 + k) + ": reference " + std::to_string(want) + ", element-wise " +
               std::to_string(to_double(detail::bit_cast_hd<T>(one))) + ", vector " +
               std::to_string(to_double(detail::bit_cast_hd<T>(lane_of<S>(vec, k))));
    }
    // the fill: every rank's input lane equals raw_int
    fill.seg = segment_of(fill, i0, &seg_end);
    const bool fill_one_segment = i0 + L <= seg_end;
    for (int r = 0; r < spec.g.nranks; ++r) {
      const uint4 in = fill.input_vec(r, i0), filled = fill.fill_vec(r, i0);
      for (int k = 0; k < L; ++k) {
        const S want = detail::bit_cast_hd<S>(from_int<T>(raw_int(spec.g, r, i0 + k)));
        if (fill.input1(r, i0 + k) != want ||
            (fill_one_segment && (lane_of<S>(in, k) != want || lane_of<S>(filled, k) != want)))
          return "input of rank " + std::to_string(r) + " at " + std::to_string(i0 + k);
      }
    }
  }
  return "";
}
}  // namespace

TEST(ExactFastPath, EqualsTheReferenceLaneByLane) {
  std::size_t covered = 0;
  for (const auto& t : kDTypes)
    for (int n : {1, 2, 3, 4, 8}) {
      std::vector<std::pair<std::optional<RedOp>, Expectation>> cases = {
          {std::nullopt, Expectation::copy_from(n - 1, 5)},
          {std::nullopt, Expectation::blocks(7, 3)},
          {std::nullopt, Expectation::blocks(1000, (1LL << 32) - 2000)}};
      for (const auto& o : kRedOps) cases.push_back({o.id, Expectation::reduce(11)});
      for (const auto& [op, e] : cases) {
        if (op && exact_limitation(t.id, *op, n)) continue;
        Pattern pat;
        pat.dtype = t.id;
        pat.op = op;
        pat.seed = 29;
        pat.nranks = n;
        pat.scalar = op_scalar(op, t.id, PayloadMode::exact);
        const std::string why = visit_dtype(t.id, [&](auto tag) {
          return exact_mismatch<decltype(tag)::value>(detail::make_check_spec(pat, e, nullptr, nullptr));
        });
        EXPECT_EQ(why, "") << t.name << (op ? std::string(" ") + name_of(*op) : " copy") << " n=" << n;
        visit_dtype(t.id, [&](auto tag) {
          detail::Exact<decltype(tag)::value> ex;
          covered += detail::make_exact(detail::make_check_spec(pat, e, nullptr, nullptr), &ex) ? 1 : 0;
        });
      }
    }
  // every exact combination listed above takes the fast path (none silently falls back)
  EXPECT_GT(covered, 12u * 5u * 8u);
}

// The launcher's pieces: they tile [0, count) and inside each the high word of the hash index agrees.
TEST(ExactFastPath, SegmentsTileTheBufferAtTheIndexWrap) {
  Pattern pat;
  pat.op = RedOp::sum;
  for (std::int64_t base : {0LL, 11LL, (1LL << 32) - 5, (1LL << 33) + 7})
    for (std::int64_t count : {1LL, 100LL, (1LL << 32) + 10}) {
      detail::Exact<DType::f32> ex;
      ASSERT_TRUE(
          detail::make_exact(detail::make_check_spec(pat, Expectation::reduce(base), nullptr, nullptr), &ex));
      std::int64_t next = 0;
      int pieces = 0;
      ex.for_each_segment(count, [&](std::int64_t b, std::int64_t e, std::uint32_t seg) {
        EXPECT_EQ(b, next);
        EXPECT_LT(b, e);
        EXPECT_EQ((base + b) >> 32, (base + e - 1) >> 32)
            << "base " << base << " piece [" << b << ", " << e << ")";
        EXPECT_EQ(seg + static_cast<std::uint32_t>(e - 1) * kIndexMul,
                  payload_bits(mix32(pat.seed), base + e - 1));
        next = e;
        ++pieces;
      });
      EXPECT_EQ(next, count);
      EXPECT_LE(pieces, 2 + static_cast<int>(count >> 32));
    }
}

TEST(VerifyResultText, AnUnwrittenTailIsNamedAsSuch) {
  VerifyResult r;
  r.count = 1048577;
  r.mismatches = 1;
  r.poisoned = 1;
  r.first_bad = r.last_bad = 1048576;
  EXPECT_TRUE(r.unwritten_tail());
  EXPECT_NE(r.describe().find("elements [1048576, 1048577) never written (poison value)"), std::string::npos)
      << r.describe();
  r.count = 8193;
  r.mismatches = 3;
  r.poisoned = 3;
  r.first_bad = 8190;
  r.last_bad = 8192;
  EXPECT_NE(r.describe().find("elements [8190, 8193) never written (poison value)"), std::string::npos)
      << r.describe();
  r.poisoned = 2;  // one of them holds a wrong value: not a plain tail
  EXPECT_FALSE(r.unwritten_tail());
  EXPECT_NE(r.describe().find("2 of them still hold the poison"), std::string::npos) << r.describe();
  r.poisoned = 2;
  r.mismatches = 2;
  r.first_bad = 8190;  // a hole: 8190 and 8192 bad, 8191 fine
  EXPECT_FALSE(r.unwritten_tail());
}

TEST(VectorSplit, HeadVectorsAndTailCoverTheBuffer) {
  alignas(16) static unsigned char buf[4096];
  for (std::size_t size : {1u, 2u, 4u, 8u})
    for (std::size_t off = 0; off < 32; off += size)
      for (std::int64_t n : {0, 1, 3, 17, 100}) {
        const int lanes = static_cast<int>(16 / size);
        const detail::VectorSplit v = detail::vector_split(buf + off, n, size, lanes);
        EXPECT_LE(v.head + v.nvec * lanes, n);
        EXPECT_LT(n - v.head - v.nvec * lanes, v.nvec > 0 ? lanes : n + 1);  // tail shorter than a vector
        if (v.nvec > 0) {
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf + off + v.head * size) % 16, 0u);
          EXPECT_LT(v.head, lanes);
        }
      }
  EXPECT_EQ(detail::vector_split(buf + 1, 100, 4, 4).nvec, 0) << "not element-aligned: element by element";
}

namespace {
// Adding a reduction is one row of kRedOps: a test-only table of rows under other names (and ids
// outside RedOp) goes through the host model, the device reference and the fast exact path with
// no other edit, since every rule reads the row's columns, never its id.
const RedOpInfo kTestOnlyOps[] = {
    {static_cast<RedOp>(100), "sumcopy", 0, 0, Combine::add, Scaling::none},
    {static_cast<RedOp>(101), "prodcopy", 1, 0, Combine::multiply, Scaling::none},
    {static_cast<RedOp>(102), "maxcopy", 2, 0, Combine::max, Scaling::none},
    {static_cast<RedOp>(103), "mincopy", 3, 0, Combine::min, Scaling::none},
    {static_cast<RedOp>(104), "avgcopy", 4, 21003, Combine::add, Scaling::average},
    {static_cast<RedOp>(105), "premulcopy", -1, 21104, Combine::add, Scaling::premultiply},
};

TEST(TestOnlyOpRow, FlowsThroughTheModelTheReferenceAndTheFastPath) {
  for (const RedOpInfo& o : kTestOnlyOps)
    for (const char* row : {"AllReduce", "ReduceScatter"})
      for (int n : {1, 2, 3, 4, 8})
        for (PayloadMode m : {PayloadMode::exact, PayloadMode::mixed}) {
          SCOPED_TRACE(std::string(o.name) + " " + row + " n=" + std::to_string(n) + " " + name_of(m));
          check_row({find_collective(row), &o, m, n});
        }
  // The fast exact path: equal to the reference lane by lane, and taken exactly where it is for
  // the rows these copy.
  for (std::size_t k = 0; k < std::size(kTestOnlyOps); ++k)
    for (const auto& t : kDTypes)
      for (int n : {1, 2, 4, 8})
        visit_dtype(t.id, [&](auto tag) {
          constexpr DType D = decltype(tag)::value;
          auto spec = [&](const RedOpInfo& o) {
            const double scalar = op_scalar(&o, t.id, PayloadMode::exact);
            return spec_of<D>(make_gen_params(t.id, &o, PayloadMode::exact, 29, n, scalar),
                              Expectation::reduce(11), nullptr);
          };
          const RedOpInfo& o = kTestOnlyOps[k];
          EXPECT_EQ(exact_mismatch<D>(spec(o)), "") << o.name << " " << t.name << " n=" << n;
          detail::Exact<D> ex;
          EXPECT_EQ(detail::make_exact(spec(o), &ex), detail::make_exact(spec(kRedOps[k]), &ex))
              << o.name << " " << t.name;
        });
}

// The check follows the op's columns: the output of one fold fails the check of another.
TEST(TestOnlyOpRow, TheCheckReadsTheRowsColumns) {
  const Param as_max{find_collective("AllReduce"), &kTestOnlyOps[2], PayloadMode::exact, 4};
  const Param as_sum{find_collective("AllReduce"), &kTestOnlyOps[0], PayloadMode::exact, 4};
  Model<DType::i32> max_model{as_max, make_gen_params(DType::i32, as_max.op, PayloadMode::exact, 11, 4, 1.0),
                              1.0, 37};
  Model<DType::i32> sum_check{as_sum, make_gen_params(DType::i32, as_sum.op, PayloadMode::exact, 11, 4, 1.0),
                              1.0, 37};
  double worst = 0;
  const auto out = max_model.output(max_model.inputs(), 0);
  EXPECT_EQ(max_model.mismatches(out, 0, &worst), 0u);
  EXPECT_GT(sum_check.mismatches(out, 0, &worst), 30u) << "a max result passed the check of a sum";
}

// A value outside Combine or Scaling, or a pair without a rule, is an error, never "sum".
TEST(OpRules, NoFallbackOutsideTheLists) {
  EXPECT_THROW(combine_values(static_cast<Combine>(9), 1.0, 2.0), std::logic_error);
  EXPECT_THROW(fold_identity(static_cast<Combine>(9)), std::logic_error);
  EXPECT_THROW(reference_input(static_cast<Scaling>(9), 1.0, 2.0), std::logic_error);
  EXPECT_THROW(nccl_result(static_cast<Scaling>(9), 1.0, 2, true), std::logic_error);
  EXPECT_THROW(mixed_bound(1e-3, 0, Combine::multiply, Scaling::premultiply, 4, 1, 1), std::logic_error);
  const RedOpInfo bogus{static_cast<RedOp>(106), "bogus", 0, 0, static_cast<Combine>(9), Scaling::none};
  EXPECT_THROW(make_gen_params(DType::f32, &bogus, PayloadMode::exact, 1, 2, 1.0), std::logic_error);
}

}  // namespace

namespace {

// Adding a dtype is one row of kDTypes: test-only rows get their device type, unit roundoff, exact
// ranges and payload parameters from their columns (none of these reads a row's id): a copy of
// f32 under another name and id behaves as f32, and a 16-bit integer, which NCCL does not have,
// gets a device type and ranges that keep every partial result exact.
constexpr DTypeInfo kF32Copy = {static_cast<DType>(200), "f32copy", 7, 4, true, true, 23, 16777216.0, 127,
                                1.401298464324817e-45,   0,         0};
constexpr DTypeInfo kI16 = {static_cast<DType>(201), "i16", 12, 2, false, true, 0, 32767.0, 14, 1.0, 0, 0};
static_assert(std::is_same_v<device_type_for<kF32Copy>, float>);
static_assert(std::is_same_v<device_type_for<kI16>, std::int16_t>);

TEST(TestOnlyDTypeRow, RulesReadTheRowsColumns) {
  const DTypeInfo& f32 = dtype_info(DType::f32);
  EXPECT_EQ(unit_roundoff(kF32Copy), unit_roundoff(f32));
  EXPECT_EQ(unit_roundoff(kI16), 0.0);
  for (const auto& o : kRedOps)
    for (int n : {1, 2, 3, 4, 8, 72})
      for (PayloadMode m : {PayloadMode::exact, PayloadMode::mixed}) {
        const std::string what = std::string(o.name) + " n=" + std::to_string(n) + " " + name_of(m);
        const double scalar = op_scalar(&o, kF32Copy, m);
        EXPECT_EQ(scalar, op_scalar(&o, f32, m)) << what;
        const GenParams a = make_gen_params(kF32Copy, &o, m, 5, n, scalar),
                        b = make_gen_params(f32, &o, m, 5, n, scalar);
        EXPECT_EQ(std::tie(a.mode, a.combine, a.scaling, a.shape, a.lo, a.hi, a.ilo, a.span, a.pow2_levels,
                           a.contributors),
                  std::tie(b.mode, b.combine, b.scaling, b.shape, b.lo, b.hi, b.ilo, b.span, b.pow2_levels,
                           b.contributors))
            << what;
        for (int r = 0; r < n; ++r) ASSERT_EQ(raw_value(a, r, 12345), raw_value(b, r, 12345)) << what;
        EXPECT_EQ(exact_limitation(kF32Copy, o, n).has_value(), exact_limitation(f32, o, n).has_value())
            << what;
        // The new integer: exact in any order, clear of the all-ones poison.
        const ValueRange r = exact_range(kI16, &o, n, op_scalar(&o, kI16, PayloadMode::exact));
        const double amp = std::max(std::fabs(r.lo), r.hi);
        EXPECT_GE(r.lo, 0) << what;
        EXPECT_LT(r.hi, kI16.exact_int) << what;
        switch (value_shape(o.combine)) {
          case ValueShape::products:
            EXPECT_LE(r.contributors, kI16.max_pow2) << what;
            break;
          case ValueShape::selects:
            EXPECT_EQ(r.contributors, n) << what;
            break;
          case ValueShape::sums:
            EXPECT_LE(op_scalar(&o, kI16, PayloadMode::exact) * r.contributors * amp, kI16.exact_int) << what;
            break;
        }
      }
}

}  // namespace
