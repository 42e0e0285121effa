/* llama_oracle BINS_DIR MODEL.gguf VOCAB STEPS PROMPT_IDS [FORCED_IDS]
 *
 * The llama.cpp oracle (oracles.md): loads a GGUF on the CPU, decodes the
 * prompt ids (comma-separated) in one batch, then runs STEPS decode steps of
 * one token each. Step i takes the argmax of the f32 logits (ties -> smallest
 * id, like kern's argmax) and feeds it back (greedy), or feeds FORCED_IDS[i]
 * instead when given (teacher forcing: the oracle's logits in the context of
 * another implementation's sequence). Prints `ids I,I,...` (the argmax of each
 * step) and one line `logits F F ...` (VOCAB values, %.9g) per step.
 * KV cache f32, flash attention off: llama.cpp's most exact CPU path.
 * Exit status 0 on success, 1 on any failure (message on stderr). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool no_progress(float progress, void* user) {
  (void)progress; (void)user;
  return true;
}

static int parse_ids(char* text, llama_token* out, int max) {
  int n = 0;
  for (char* s = strtok(text, ","); s && n < max; s = strtok(NULL, ",")) out[n++] = atoi(s);
  return n;
}

static int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) if (v[i] > v[best]) best = i;
  return best;
}

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: llama_oracle BINS_DIR MODEL.gguf VOCAB STEPS PROMPT_IDS [FORCED_IDS]\n");
    return 1;
  }
  const int vocab = atoi(argv[3]), steps = atoi(argv[4]);
  static llama_token prompt[4096], forced[4096];
  const int n_prompt = parse_ids(argv[5], prompt, 4096);
  const int n_forced = argc == 7 ? parse_ids(argv[6], forced, 4096) : -1;
  if (vocab <= 0 || steps <= 0 || steps > 4096 || n_prompt == 0 || (n_forced >= 0 && n_forced < steps - 1)) {
    fprintf(stderr, "llama_oracle: bad arguments\n");
    return 1;
  }

  llama_log_set(quiet, NULL);
  ggml_backend_load_all_from_path(argv[1]);
  struct llama_model_params mp = llama_model_default_params();
  mp.progress_callback = no_progress;
  struct llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) { fprintf(stderr, "llama_oracle: cannot load %s\n", argv[2]); return 1; }
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)(n_prompt + steps + 16);
  cp.n_threads = cp.n_threads_batch = 1;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "llama_oracle: cannot create a context\n"); return 1; }

  int* ids = malloc(sizeof(int) * (size_t)steps);
  float* rows = malloc(sizeof(float) * (size_t)steps * (size_t)vocab);
  llama_token next = 0;
  for (int i = 0; i < steps; ++i) {
    struct llama_batch batch = i == 0 ? llama_batch_get_one(prompt, n_prompt) : llama_batch_get_one(&next, 1);
    if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "llama_oracle: decode failed at step %d\n", i); return 1; }
    const float* logits = llama_get_logits_ith(ctx, -1);
    memcpy(rows + (size_t)i * (size_t)vocab, logits, sizeof(float) * (size_t)vocab);
    ids[i] = argmax(logits, vocab);
    next = n_forced >= 0 ? forced[i] : ids[i];
  }
  printf("ids");
  for (int i = 0; i < steps; ++i) printf("%c%d", i ? ',' : ' ', ids[i]);
  for (int i = 0; i < steps; ++i) {
    printf("\nlogits");
    for (int v = 0; v < vocab; ++v) printf(" %.9g", rows[(size_t)i * (size_t)vocab + (size_t)v]);
  }
  printf("\n");
  free(rows);
  free(ids);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
