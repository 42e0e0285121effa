// kern-run serve's Prometheus text (kern-run/serve/metrics.h).
#include <catch2/catch.hpp>

#include <vector>

#include "kern-run/serve/metrics.h"

using namespace kern::run::serve;

TEST_CASE("a histogram's buckets are cumulative and end with +Inf, _sum and _count", "[serve][metrics]") {
  Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.1);
  h.observe(0.5);
  h.observe(3);
  std::string out;
  h.render("x", out);
  CHECK(out ==
        "x_bucket{le=\"0.1\"} 2\nx_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 4\nx_sum 3.65\nx_count 4\n");
}

TEST_CASE("the metrics text has requests by status, tokens and the engine gauges", "[serve][metrics]") {
  Metrics m;
  m.count_request(200);
  m.count_request(200);
  m.count_request(429);
  m.add_tokens(10, 4);
  m.add_tokens(40, 2, 32);  // 32 of its 40 prompt tokens from the prefix cache
  EngineGauges g;
  g.running = 1;
  g.waiting = 2;
  g.kv_pages_used = 3;
  g.kv_pages_total = 64;
  g.kv_pages_cached = 5;
  g.prefix_cache_evictions = 7;
  g.prefix_cache_reprefilled_tokens = 9;
  g.prefix_cache_reprefills_pending = 2;
  g.batch_size = 1;
  g.max_batch = 8;
  std::string t = m.render(g);
  CHECK(t.find("kern_requests_total{status=\"200\"} 2\n") != std::string::npos);
  CHECK(t.find("kern_requests_total{status=\"429\"} 1\n") != std::string::npos);
  CHECK(t.find("kern_prompt_tokens_total 50\n") != std::string::npos);
  CHECK(t.find("kern_prompt_tokens_cached_total 32\n") != std::string::npos);
  CHECK(t.find("kern_prompt_tokens_computed_total 18\n") != std::string::npos);
  CHECK(t.find("kern_generation_tokens_total 6\n") != std::string::npos);
  CHECK(t.find("kern_kv_pages_cached 5\n") != std::string::npos);
  CHECK(t.find("# TYPE kern_prefix_cache_evictions_total counter\nkern_prefix_cache_evictions_total 7\n") !=
        std::string::npos);
  CHECK(t.find("# TYPE kern_prefix_cache_reprefilled_tokens_total counter\n"
               "kern_prefix_cache_reprefilled_tokens_total 9\n") != std::string::npos);
  CHECK(t.find("# TYPE kern_prefix_cache_reprefills_pending gauge\n"
               "kern_prefix_cache_reprefills_pending 2\n") != std::string::npos);
  CHECK(t.find("kern_kv_pages_used 3\n") != std::string::npos);
  CHECK(t.find("kern_kv_pages_free 61\n") != std::string::npos);
  CHECK(t.find("kern_requests_waiting 2\n") != std::string::npos);
  CHECK(t.find("# TYPE kern_time_to_first_token_seconds histogram\n") != std::string::npos);
}

TEST_CASE("the decode batch occupancy is a histogram of rows per decode step", "[serve][metrics]") {
  CHECK(batch_row_bounds(1) == std::vector<double>{1});
  CHECK(batch_row_bounds(4) == std::vector<double>{1, 2, 3, 4});
  const std::vector<double> big = batch_row_bounds(100);
  REQUIRE(big.size() == 16 + 3);  // 1, ..., 16, 32, 64, 100
  CHECK(big[15] == 16);
  CHECK(big[16] == 32);
  CHECK(big[17] == 64);
  CHECK(big[18] == 100);
  CHECK(batch_row_bounds(64).back() == 64);
  CHECK(batch_row_bounds(64).size() == 16 + 2);  // ..., 16, 32, 64
  Metrics m(4);
  m.observe_decode_rows(1);
  m.observe_decode_rows(3);
  m.observe_decode_rows(4);
  m.observe_decode_rows(4);
  const std::string t = m.render(EngineGauges{});
  CHECK(t.find("# TYPE kern_decode_batch_rows histogram\n") != std::string::npos);
  CHECK(t.find("kern_decode_batch_rows_bucket{le=\"1\"} 1\nkern_decode_batch_rows_bucket{le=\"2\"} 1\n"
               "kern_decode_batch_rows_bucket{le=\"3\"} 2\nkern_decode_batch_rows_bucket{le=\"4\"} 4\n"
               "kern_decode_batch_rows_bucket{le=\"+Inf\"} 4\nkern_decode_batch_rows_sum 12\n"
               "kern_decode_batch_rows_count 4\n") != std::string::npos);
}

TEST_CASE("per-rank figures carry a rank label; an unheard rank and absent collectives are left out",
          "[serve][metrics]") {
  Metrics m;
  EngineGauges g;
  kern::run::RankFigures r0;
  r0.rank = 0;
  r0.device = "cpu";
  r0.weights = 1000;
  r0.states = 200;
  r0.arena = 30;
  r0.io = 4;
  r0.total = 1234;
  r0.peak_rss = 5000;
  r0.collective = kern::cpu::CollectiveStats{12, 3072, 250.0};
  kern::run::RankFigures r1 = r0;
  r1.rank = 1;
  r1.device = "cuda:1 (a \"quoted\\name\"\nline)";
  r1.weights = 999;
  r1.collective.reset();
  kern::run::RankFigures unheard;  // rank 2: no figures yet
  unheard.rank = 2;
  g.ranks = {r0, r1, unheard};
  const std::string t = m.render(g);
  CHECK(t.find("# TYPE kern_rank_info gauge\nkern_rank_info{rank=\"0\",device=\"cpu\"} 1\n"
               "kern_rank_info{rank=\"1\",device=\"cuda:1 (a \\\"quoted\\\\name\\\"\\nline)\"} 1\n# HELP") !=
        std::string::npos);
  CHECK(t.find("kern_memory_bytes{rank=\"0\",class=\"weights\"} 1000\nkern_memory_bytes{rank=\"0\",class=\"states\"} "
               "200\nkern_memory_bytes{rank=\"0\",class=\"arena\"} 30\nkern_memory_bytes{rank=\"0\",class=\"io\"} 4\n"
               "kern_memory_bytes{rank=\"0\",class=\"total\"} 1234\n") != std::string::npos);
  CHECK(t.find("kern_memory_bytes{rank=\"1\",class=\"weights\"} 999\n") != std::string::npos);
  CHECK(t.find("kern_peak_resident_bytes{rank=\"1\"} 5000\n") != std::string::npos);
  CHECK(t.find("rank=\"2\"") == std::string::npos);
  CHECK(t.find("# TYPE kern_collective_calls_total counter\nkern_collective_calls_total{rank=\"0\"} 12\n# HELP") !=
        std::string::npos);
  CHECK(t.find("kern_collective_bytes_sent_total{rank=\"0\"} 3072\n") != std::string::npos);
  CHECK(t.find("kern_collective_seconds_total{rank=\"0\"} 0.25\n") != std::string::npos);
  // One rank without collectives: the memory families only.
  g.ranks = {r1};
  const std::string one = m.render(g);
  CHECK(one.find("kern_memory_bytes{rank=\"1\",class=\"total\"} 1234\n") != std::string::npos);
  CHECK(one.find("kern_collective") == std::string::npos);
  // Without figures (the worker not loaded): none of the families.
  CHECK(m.render(EngineGauges{}).find("kern_memory_bytes") == std::string::npos);
}
