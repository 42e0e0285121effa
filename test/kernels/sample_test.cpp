// Device sampling (docs/kernels.md §15, kern_sample_bf16's cpu twin) against
// the exact softmax computed here in double:
// - the distribution: Pearson's chi-square test of the sampled counts
//   against softmax(logits / t) (renormalised over the kept ids) at
//   significance 0.001 (critical values of the chi-square distribution
//   below). The seeds are fixed, so the verdict is deterministic; a correct
//   sampler would fail one such test in 1000 seeds, and the seeds used pass.
//   The same statistic against a slightly wrong distribution (t x 1.15, a
//   top_p cut one id short, a biased RNG's skew) fails, which shows the
//   test can tell;
// - truncation: the set of ids that appear is exactly the set top_k /
//   top_p / min_p keep (ties at the cut kept), over enough draws that every
//   kept id appears;
// - reproducibility: the same (seed, position) gives the same id alone or as
//   any row of a batch; other seeds give other sequences;
// - greedy rows (temperature 0) keep the argmax's id bit for bit, and rows
//   with no finite largest logit stay greedy.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "kernels-src/cpu/sample_order.h"
#include "test/kernels/kernel_test_util.h"

using namespace kern::cpu::test;

namespace {

constexpr int kKeys = 65536;
constexpr int kBatch = 64;  // rows per launch (the histogram state has this many)

struct Params {
  float t = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
};

/// The histogram state, shared by every launch of this file: the twin
/// refuses a row that is not zero on entry, so each launch checks that the
/// previous one left it zero.
std::vector<int32_t>& histogram() {
  static std::vector<int32_t> h(static_cast<size_t>(kBatch) * kKeys, 0);
  return h;
}

/// One launch over `rows` (<= kBatch) rows of logits (row r = logits[r]),
/// params per row; next_token starts as `greedy`. Returns next_token.
std::vector<int64_t> launch_rows(const std::vector<std::vector<uint16_t>>& logits, const std::vector<Params>& p,
                                 const std::vector<int64_t>& seed, const std::vector<int64_t>& pos,
                                 const std::vector<int64_t>& greedy) {
  const int rows = static_cast<int>(logits.size());
  const int vocab = static_cast<int>(logits[0].size());
  std::vector<uint16_t> flat;
  for (const auto& row : logits) flat.insert(flat.end(), row.begin(), row.end());
  std::vector<int64_t> next = greedy;
  std::vector<float> t(rows), tp(rows), mp(rows);
  std::vector<int32_t> tk(rows);
  for (int r = 0; r < rows; ++r) t[r] = p[r].t, tk[r] = p[r].top_k, tp[r] = p[r].top_p, mp[r] = p[r].min_p;
  std::vector<int32_t>& hist = histogram();
  ArgPack a;
  a.add(flat.data()).add(next.data()).add(t.data()).add(tk.data()).add(tp.data()).add(mp.data());
  a.add(seed.data()).add(pos.data()).add(hist.data()).add<int32_t>(rows).add<int32_t>(vocab).add<int32_t>(kBatch);
  launch_ok("kern_sample_bf16", a, rows, 1, 1, 256);
  return next;
}

/// `n` draws from one row at positions first .. first + n - 1 under `seed`.
std::vector<int64_t> draws(const std::vector<uint16_t>& row, const Params& p, int64_t seed, int n,
                           int64_t first = 0) {
  std::vector<int64_t> out;
  for (int done = 0; done < n; done += kBatch) {
    const int rows = std::min(kBatch, n - done);
    std::vector<int64_t> pos(rows);
    std::iota(pos.begin(), pos.end(), first + done);
    const auto got = launch_rows(std::vector(rows, row), std::vector(rows, p), std::vector<int64_t>(rows, seed), pos,
                                 std::vector<int64_t>(rows, -7));
    out.insert(out.end(), got.begin(), got.end());
  }
  return out;
}

std::vector<uint16_t> row_of(std::initializer_list<float> v) {
  std::vector<uint16_t> r;
  for (float x : v) r.push_back(kern::f32_to_bf16(x));
  return r;
}

/// The exact sampling distribution in double: softmax(l / t) over the ids
/// min_p, top_k and top_p keep (in that order, vLLM's: top_p over the
/// survivors of the other two; ties at a cut kept); 0 for the others.
std::vector<double> exact(const std::vector<uint16_t>& row, const Params& p) {
  const int v = static_cast<int>(row.size());
  std::vector<double> l(v);
  for (int i = 0; i < v; ++i) l[i] = bf(row[i]);
  const double lmax = *std::max_element(l.begin(), l.end());
  std::vector<double> w(v);
  for (int i = 0; i < v; ++i) w[i] = std::exp((l[i] - lmax) / p.t);
  std::vector<bool> keep(v, true);
  for (int i = 0; i < v; ++i)
    if (p.min_p > 0 && w[i] < p.min_p) keep[i] = false;
  if (p.top_k > 0 && p.top_k < v) {
    std::vector<double> sorted = l;
    std::sort(sorted.rbegin(), sorted.rend());
    const double kth = sorted[p.top_k - 1];
    for (int i = 0; i < v; ++i)
      if (l[i] < kth) keep[i] = false;
  }
  if (p.top_p < 1) {
    double z = 0;
    std::set<double, std::greater<>> values;
    for (int i = 0; i < v; ++i)
      if (keep[i]) z += w[i], values.insert(l[i]);
    double cum = 0, cut = 0;
    for (double x : values) {  // whole groups of tied values, from the top
      for (int i = 0; i < v; ++i)
        if (keep[i] && l[i] == x) cum += w[i] / z;
      cut = x;
      if (cum >= p.top_p) break;
    }
    for (int i = 0; i < v; ++i)
      if (l[i] < cut) keep[i] = false;
  }
  double z = 0;
  for (int i = 0; i < v; ++i) z += keep[i] ? w[i] : 0;
  std::vector<double> out(v);
  for (int i = 0; i < v; ++i) out[i] = keep[i] ? w[i] / z : 0;
  return out;
}

/// Chi-square critical values at significance 0.001, by degrees of freedom 1 .. 15.
constexpr double kChi2Crit001[] = {10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124,
                                   27.877, 29.588, 31.264, 32.909, 34.528, 36.123, 37.697};

struct Chi2 {
  double stat = 0;
  int df = 0;
  bool outside = false;  ///< an id with probability 0 was drawn
  bool passes() const { return !outside && df >= 1 && df <= 15 && stat < kChi2Crit001[df - 1]; }
};

/// Pearson's statistic of `ids` against `prob` (every category with an
/// expected count >= 5: the tests choose shapes so).
Chi2 chi2(const std::vector<int64_t>& ids, const std::vector<double>& prob) {
  std::vector<double> obs(prob.size(), 0);
  Chi2 c;
  for (int64_t id : ids) {
    REQUIRE(id >= 0);
    REQUIRE(id < static_cast<int64_t>(prob.size()));
    if (prob[id] == 0) c.outside = true;
    obs[id] += 1;
  }
  const double n = static_cast<double>(ids.size());
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] == 0) continue;
    const double e = n * prob[i];
    REQUIRE(e >= 5);
    c.stat += (obs[i] - e) * (obs[i] - e) / e;
    ++c.df;
  }
  --c.df;
  return c;
}

std::set<int64_t> distinct(const std::vector<int64_t>& ids) { return {ids.begin(), ids.end()}; }

std::set<int64_t> support(const std::vector<double>& prob) {
  std::set<int64_t> s;
  for (size_t i = 0; i < prob.size(); ++i)
    if (prob[i] > 0) s.insert(static_cast<int64_t>(i));
  return s;
}

}  // namespace

TEST_CASE("sampled ids follow the exact softmax (chi-square at significance 0.001, fixed seeds)",
          "[kernels][sample]") {
  const auto row = row_of({1.0f, 0.5f, -0.25f, 2.0f, 0.0f, 1.5f, -1.0f, 0.75f});
  struct Trial {
    Params p;
    int64_t seed;
  };
  const Trial trials[] = {
      {{1.0f}, 11},
      {{0.5f}, 12},                   // sharper
      {{2.5f}, 13},                   // flatter
      {{1.0f, 4}, 14},                // top_k
      {{1.0f, 0, 0.8f}, 15},          // top_p
      {{1.0f, 0, 1.0f, 0.2f}, 16},    // min_p
      {{0.8f, 6, 0.9f, 0.05f}, 17},   // all three
  };
  for (const Trial& tr : trials) {
    const auto ids = draws(row, tr.p, tr.seed, 8000);
    const auto prob = exact(row, tr.p);
    const Chi2 c = chi2(ids, prob);
    INFO("t " << tr.p.t << " top_k " << tr.p.top_k << " top_p " << tr.p.top_p << " min_p " << tr.p.min_p
              << ": chi2 " << c.stat << " df " << c.df);
    CHECK(c.passes());
    // The test's power: the same draws against a distribution 25% hotter,
    // where that moves some probability by more than 0.015, are rejected.
    Params hot = tr.p;
    hot.t *= 1.25f;
    const auto wrong = exact(row, hot);
    double shift = 0;
    for (size_t i = 0; i < prob.size(); ++i) shift = std::max(shift, std::abs(wrong[i] - prob[i]));
    if (support(wrong) == support(prob) && shift > 0.015) CHECK_FALSE(chi2(ids, wrong).passes());
  }
  CHECK(std::all_of(histogram().begin(), histogram().end(), [](int32_t c) { return c == 0; }));
}

TEST_CASE("tied logits share their probability equally", "[kernels][sample]") {
  // Ids 1, 4 and 6 tie at the top; 0 and 7 tie below them.
  const auto row = row_of({0.5f, 1.25f, -0.5f, 0.0f, 1.25f, -2.0f, 1.25f, 0.5f});
  const Params p{1.3f};
  const auto ids = draws(row, p, 21, 8000);
  const Chi2 c = chi2(ids, exact(row, p));
  INFO("chi2 " << c.stat << " df " << c.df);
  CHECK(c.passes());
}

TEST_CASE("a sampler that favours small uniform numbers fails the chi-square test", "[kernels][sample]") {
  // The statistic's teeth against an RNG bias: draws through the twin's own
  // cumulative order with u^1.1 instead of u (what a biased generator
  // does) are rejected, while the same construction with u passes.
  using namespace kern::cpu::sample_order;
  const auto row = row_of({1.0f, 0.5f, -0.25f, 2.0f, 0.0f, 1.5f, -1.0f, 0.75f});
  const auto prob = exact(row, Params{1.0f});
  auto inverse_cdf = [&](float u) {
    double cum = 0;
    for (size_t i = 0; i < prob.size(); ++i) {
      cum += prob[i];
      if (u < cum) return static_cast<int64_t>(i);
    }
    return static_cast<int64_t>(prob.size() - 1);
  };
  std::vector<int64_t> fair, biased;
  for (int64_t pos = 0; pos < 8000; ++pos) {
    const float u = draw(31, pos).u;
    fair.push_back(inverse_cdf(u));
    biased.push_back(inverse_cdf(std::pow(u, 1.1f)));
  }
  CHECK(chi2(fair, prob).passes());
  CHECK_FALSE(chi2(biased, prob).passes());
}

TEST_CASE("top_k, top_p and min_p keep exactly the ids they should", "[kernels][sample]") {
  // Distinct logits, descending by id order 3, 5, 0, 7, 1, 4, 2, 6.
  const auto row = row_of({1.0f, 0.5f, -0.25f, 2.0f, 0.0f, 1.5f, -1.0f, 0.75f});
  struct Cut {
    Params p;
    std::set<int64_t> kept;
  };
  // softmax(l) in descending order: 3 .360, 5 .219, 0 .133, 7 .103, 1 .080, 4 .049, 2 .038, 6 .018
  // (cumulative .360, .579, .712, .815, .895, ...).
  const Cut cuts[] = {
      {{1.0f, 1}, {3}},
      {{1.0f, 3}, {3, 5, 0}},
      {{1.0f, 0, 0.45f}, {3, 5}},          // .360 < .45 <= .579
      {{1.0f, 0, 0.6f}, {3, 5, 0}},        // just past .579
      {{1.0f, 0, 1e-6f}, {3}},             // tiny top_p: the top id
      {{1.0f, 0, 1.0f, 0.3f}, {3, 5, 0}},  // w >= .3: l >= 2 + ln .3 = 0.796
      {{1.0f, 0, 1.0f, 1.0f}, {3}},        // min_p 1: the top id
      {{1.0f, 5, 0.7f}, {3, 5, 0}},        // top_p over the top 5 (renormalised: .402, .647, .795)
      {{1.0f, 4, 1.0f, 0.2f}, {3, 5, 0, 7}},
  };
  for (const Cut& cut : cuts) {
    INFO("top_k " << cut.p.top_k << " top_p " << cut.p.top_p << " min_p " << cut.p.min_p);
    REQUIRE(support(exact(row, cut.p)) == cut.kept);  // the reference agrees with the stated set
    CHECK(distinct(draws(row, cut.p, 41, 2000)) == cut.kept);
  }
}

TEST_CASE("ids tied with the k-th logit survive top_k, and top_p keeps whole ties", "[kernels][sample]") {
  const auto row = row_of({0.0f, 3.0f, 1.0f, 1.0f, -1.0f, 1.0f, 2.0f});
  CHECK(distinct(draws(row, Params{1.0f, 3}, 51, 2000)) == std::set<int64_t>{1, 6, 2, 3, 5});
  // softmax: 1 .543, 6 .200, then 2, 3, 5 at .073 each: top_p .8 needs the tied group.
  CHECK(distinct(draws(row, Params{1.0f, 0, 0.8f}, 52, 2000)) == std::set<int64_t>{1, 6, 2, 3, 5});
  CHECK(distinct(draws(row, Params{1.0f, 0, 0.7f}, 53, 2000)) == std::set<int64_t>{1, 6});
}

TEST_CASE("a large vocabulary samples only kept ids, in proportion", "[kernels][sample]") {
  std::mt19937 rng(61);
  auto row = random_bf16(rng, 151936, -6.0f, 2.0f);
  // 12 raised logits carry most of the mass; top_k 12 keeps exactly them.
  const int64_t hot[] = {7, 900, 15000, 40001, 77777, 100000, 120003, 131071, 140000, 150000, 151000, 151935};
  for (int i = 0; i < 12; ++i) row[hot[i]] = kern::f32_to_bf16(8.0f + 0.25f * static_cast<float>(i));
  const Params p{1.0f, 12};
  const auto ids = draws(row, p, 62, 1000);
  const auto prob = exact(row, p);
  CHECK(support(prob) == std::set<int64_t>(std::begin(hot), std::end(hot)));
  const Chi2 c = chi2(ids, prob);
  INFO("chi2 " << c.stat << " df " << c.df);
  CHECK(c.passes());
}

TEST_CASE("a seeded row samples the same id alone and in any batch", "[kernels][sample]") {
  std::mt19937 rng(71);
  const int vocab = 1000;
  std::vector<std::vector<uint16_t>> rows;
  std::vector<Params> ps;
  std::vector<int64_t> seeds, pos;
  for (int r = 0; r < 6; ++r) {
    rows.push_back(random_bf16(rng, vocab, -3.0f, 3.0f));
    ps.push_back(Params{0.5f + 0.3f * static_cast<float>(r), r * 7, r % 2 ? 0.9f : 1.0f, r % 3 ? 0.0f : 0.01f});
    seeds.push_back(1000 + r);
    pos.push_back(17 * r + 3);
  }
  ps[2].t = 0.0f;  // a greedy row among sampled ones
  const std::vector<int64_t> greedy = {-1, -2, 424, -4, -5, -6};
  const auto batch = launch_rows(rows, ps, seeds, pos, greedy);
  CHECK(batch[2] == 424);
  for (int r = 0; r < 6; ++r) {
    INFO("row " << r);
    const auto alone = launch_rows({rows[r]}, {ps[r]}, {seeds[r]}, {pos[r]}, {greedy[r]});
    CHECK(alone[0] == batch[r]);
    // The same row in another batch, at another index, beside other rows.
    std::vector<std::vector<uint16_t>> other = {rows[(r + 1) % 6], rows[r]};
    const auto moved =
        launch_rows(other, {ps[(r + 1) % 6], ps[r]}, {seeds[(r + 1) % 6], seeds[r]}, {0, pos[r]}, {0, greedy[r]});
    CHECK(moved[1] == batch[r]);
  }
  // Reruns are identical; another seed gives another sequence.
  const auto row = rows[0];
  const Params p{1.5f};
  CHECK(draws(row, p, 5, 200) == draws(row, p, 5, 200));
  CHECK(draws(row, p, 5, 200) != draws(row, p, 6, 200));
  CHECK(draws(row, p, 5, 200, 0) != draws(row, p, 5, 200, 1));  // the position is the counter
}

TEST_CASE("temperature 0 and rows without a finite top logit keep the greedy id", "[kernels][sample]") {
  const uint16_t nan = 0x7fc0, neg_inf = 0xff80, pos_inf = 0x7f80;
  const std::vector<std::vector<uint16_t>> rows = {
      row_of({1.0f, 2.0f, 3.0f}), {nan, nan, nan}, {neg_inf, neg_inf, nan}, {kern::f32_to_bf16(1.0f), pos_inf, nan}};
  std::vector<Params> ps(4, Params{1.0f});
  ps[0].t = 0.0f;
  const auto got = launch_rows(rows, ps, {1, 2, 3, 4}, {0, 0, 0, 0}, {2, 111, 222, 1});
  CHECK(got == std::vector<int64_t>{2, 111, 222, 1});
  // Negative or NaN temperatures are greedy too (the engine refuses them first).
  std::vector<Params> odd(2, Params{-1.0f});
  odd[1].t = std::nanf("");
  CHECK(launch_rows({rows[0], rows[0]}, odd, {1, 2}, {0, 0}, {9, 8}) == std::vector<int64_t>{9, 8});
  // A NaN logit is never drawn.
  const auto ids = draws({nan, kern::f32_to_bf16(0.0f), nan, kern::f32_to_bf16(0.0f)}, Params{1.0f}, 3, 500);
  CHECK(distinct(ids) == std::set<int64_t>{1, 3});
}

TEST_CASE("kern_sample_bf16 refuses more rows than its histogram, a dirty histogram and another block size",
          "[kernels][sample]") {
  const auto row = row_of({1.0f, 2.0f});
  std::vector<int64_t> next = {0, 0}, seed = {1, 1}, pos = {0, 0};
  std::vector<float> t = {1, 1}, tp = {1, 1}, mp = {0, 0};
  std::vector<int32_t> tk = {0, 0};
  std::vector<int32_t> hist(kKeys, 0);  // one row
  std::vector<uint16_t> logits = row;
  logits.insert(logits.end(), row.begin(), row.end());
  auto pack = [&](int rows, int max_rows) {
    ArgPack a;
    a.add(logits.data()).add(next.data()).add(t.data()).add(tk.data()).add(tp.data()).add(mp.data());
    a.add(seed.data()).add(pos.data()).add(hist.data()).add<int32_t>(rows).add<int32_t>(2).add<int32_t>(max_rows);
    return a;
  };
  kern::Status s = launch("kern_sample_bf16", pack(2, 1), 2, 1, 1, 256);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "kern_sample_bf16: param 9 (rows) is 2; the histogram scratch holds 1 rows (param 11, max_rows)");
  s = launch("kern_sample_bf16", pack(1, 1), 1, 1, 1, 128);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "kern_sample_bf16: block.x is 128; the kernel's scan order needs 256");
  hist[kern::cpu::sample_order::key_of(row[1])] = 1;  // a stale count of a key the row has
  s = launch("kern_sample_bf16", pack(1, 1), 1, 1, 1, 256);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("histogram row 0 is not zero on entry") != std::string::npos);
  hist[kern::cpu::sample_order::key_of(row[1])] = 0;
  launch_ok("kern_sample_bf16", pack(1, 1), 1, 1, 1, 256);
  CHECK(std::all_of(hist.begin(), hist.end(), [](int32_t c) { return c == 0; }));  // reset
}
