// The ids of a conversation kept as one sequence (kern-run/chat_session.h)
// with Qwen3's real tokenizer: each turn feeds only its new tokens from the
// right position, and the whole history's ids are those of encoding what
// Qwen3's chat template renders for it (when no reply has <think> content,
// the one place the two differ).
#include <catch2/catch.hpp>

#include "kern-run/chat_session.h"
#include "kern-run/chat_template.h"
#include "test/engine/tiny_model.h"
#include "test/run/text_helpers.h"

using namespace kern;

namespace {

void append(std::vector<int64_t>& to, const std::vector<int64_t>& more) { to.insert(to.end(), more.begin(), more.end()); }

}  // namespace

TEST_CASE("a conversation's turns feed only their new ids, and the history is the template's", "[run][chat]") {
  const std::vector<int64_t> end = run::qwen3_end_token_ids(test::qwen3_tokenizer());
  const int64_t im_end = *test::qwen3_tokenizer().token_to_id("<|im_end|>");
  run::ChatSession session(test::qwen3_tokenizer(), std::string("Be brief."), false, end);
  auto t1 = session.next_turn("Hello");
  REQUIRE(t1.ok());
  CHECK(t1->start_pos == 0);
  CHECK(t1->ids == test::qwen3_encode("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
                          "<|im_start|>assistant\n"));
  // The reply ended on <|im_end|>: in the KV cache but for that last id.
  std::vector<int64_t> reply1 = test::qwen3_encode("Hi there.");
  reply1.push_back(im_end);
  session.add_reply(*t1, reply1);
  CHECK(session.cached_tokens() == t1->ids.size() + reply1.size() - 1);
  auto t2 = session.next_turn("Why?");
  REQUIRE(t2.ok());
  CHECK(t2->start_pos == session.cached_tokens());
  CHECK(t2->ids == test::qwen3_encode("<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n"));
  // A reply cut by the steps (no end id): its last id is fed by the next turn, then the turn is closed.
  const std::vector<int64_t> reply2 = test::qwen3_encode("Because");
  session.add_reply(*t2, reply2);
  auto t3 = session.next_turn("Go on");
  REQUIRE(t3.ok());
  CHECK(t3->start_pos == t2->start_pos + t2->ids.size() + reply2.size() - 1);
  std::vector<int64_t> want = {reply2.back()};
  append(want, test::qwen3_encode("<|im_end|>\n<|im_start|>user\nGo on<|im_end|>\n<|im_start|>assistant\n"));
  CHECK(t3->ids == want);
  // Everything fed, in order, is the encoding of the template's rendering of the conversation.
  std::vector<int64_t> fed = t1->ids;
  append(fed, std::vector<int64_t>(reply1.begin(), reply1.end() - 1));
  append(fed, t2->ids);
  append(fed, std::vector<int64_t>(reply2.begin(), reply2.end() - 1));
  append(fed, t3->ids);
  auto rendered = run::render_qwen3_messages({{"system", "Be brief.", std::nullopt},
                                              {"user", "Hello", std::nullopt},
                                              {"assistant", "Hi there.", std::nullopt},
                                              {"user", "Why?", std::nullopt},
                                              {"assistant", "Because", std::nullopt},
                                              {"user", "Go on", std::nullopt}},
                                             run::ChatTemplateOptions{});
  REQUIRE(rendered.ok());
  CHECK(fed == test::qwen3_encode(*rendered));
  CHECK(session.turns() == 2);
}

TEST_CASE("a conversation's edge cases: no think, an interrupted first reply, a message that is not UTF-8",
          "[run][chat]") {
  const std::vector<int64_t> end = run::qwen3_end_token_ids(test::qwen3_tokenizer());
  run::ChatSession session(test::qwen3_tokenizer(), std::nullopt, true, end);
  auto t1 = session.next_turn("Hi");
  REQUIRE(t1.ok());
  CHECK(t1->ids == test::qwen3_encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  // Interrupted before its first id: the conversation is as it was (the next turn starts afresh).
  session.add_reply(*t1, {});
  CHECK(session.cached_tokens() == 0);
  CHECK(session.turns() == 0);
  auto again = session.next_turn("Hi");
  REQUIRE(again.ok());
  CHECK(again->ids == t1->ids);
  CHECK(again->start_pos == 0);
  auto bad = session.next_turn("ok \xff");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kUsage);
  CHECK(bad.error().message == "the message: encode: text is not valid UTF-8 at byte 3");
}
