/* llama_cpu_bench BINS_DIR MODEL.gguf THREADS STEPS PROMPT_IDS
 *
 * llama.cpp's side of bench/llama_side_by_side.sh (issue 46): loads a GGUF
 * with node-llama-cpp's prebuilt CPU backends (BINS_DIR: ggml picks the
 * best variant for this CPU, as llama.cpp's own tools do), decodes the
 * prompt ids (comma-separated) in one batch, then STEPS decode steps of one
 * token each, greedy (argmax of the f32 logits, ties to the smallest id, like
 * kern's argmax). Times each llama_decode plus its argmax with
 * CLOCK_MONOTONIC, as kern-run times its prefill (until the first id) and
 * decode steps. Context settings are llama.cpp's defaults (KV cache f16,
 * flash attention auto) but for the thread counts and the context size.
 * Prints one JSON object on stdout:
 *   {"load_ms": F (model and context), "prefill_ms": F, "decode_ms": [F, ...], "ids": [I, ...],
 *    "backend": "NAME", "cpu_features": "F1 F2 ..."}
 * Exit status 0 on success, 1 on any failure (message on stderr). */
#define _POSIX_C_SOURCE 199309L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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

/* The CPU backend's features that are on (ggml_backend_get_features), space-separated. */
static void cpu_features(char* out, size_t cap) {
  out[0] = '\0';
  for (size_t r = 0; r < ggml_backend_reg_count(); ++r) {
    ggml_backend_reg_t reg = ggml_backend_reg_get(r);
    if (strcmp(ggml_backend_reg_name(reg), "CPU") != 0) continue;
    ggml_backend_get_features_t get =
        (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    if (!get) return;
    for (struct ggml_backend_feature* f = get(reg); f->name; ++f) {
      if (strcmp(f->value, "1") != 0) {
        if (strcmp(f->name, "CPU_VARIANT") != 0) continue;  /* the variant ggml loaded, e.g. zen4 */
      }
      size_t used = strlen(out);
      snprintf(out + used, cap - used, "%s%s%s%s", used ? " " : "", f->name,
               strcmp(f->value, "1") != 0 ? "=" : "", strcmp(f->value, "1") != 0 ? f->value : "");
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: llama_cpu_bench BINS_DIR MODEL.gguf THREADS STEPS PROMPT_IDS\n");
    return 1;
  }
  const int threads = atoi(argv[3]), steps = atoi(argv[4]);
  static llama_token prompt[4096];
  const int n_prompt = parse_ids(argv[5], prompt, 4096);
  if (threads <= 0 || steps < 0 || steps > 4096 || n_prompt == 0) {
    fprintf(stderr, "llama_cpu_bench: bad arguments (THREADS > 0, 0 <= STEPS <= 4096, at least one prompt id)\n");
    return 1;
  }

  llama_log_set(quiet, NULL);
  ggml_backend_load_all_from_path(argv[1]);
  struct llama_model_params mp = llama_model_default_params();
  mp.progress_callback = no_progress;
  const double t_load = now_ms();
  struct llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) { fprintf(stderr, "llama_cpu_bench: cannot load %s\n", argv[2]); return 1; }
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)(n_prompt + steps + 16);
  cp.n_threads = cp.n_threads_batch = threads;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "llama_cpu_bench: cannot create a context\n"); return 1; }
  const double load_ms = now_ms() - t_load;

  double* ms = malloc(sizeof(double) * (size_t)(steps + 1));
  int* ids = malloc(sizeof(int) * (size_t)(steps + 1));
  if (!ms || !ids) { fprintf(stderr, "llama_cpu_bench: out of memory\n"); return 1; }
  llama_token next = 0;
  for (int i = 0; i <= steps; ++i) {
    struct llama_batch batch = i == 0 ? llama_batch_get_one(prompt, n_prompt) : llama_batch_get_one(&next, 1);
    const double t0 = now_ms();
    if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "llama_cpu_bench: decode failed at step %d\n", i); return 1; }
    ids[i] = next = argmax(llama_get_logits_ith(ctx, -1), vocab);
    ms[i] = now_ms() - t0;
  }
  static char features[2048];
  cpu_features(features, sizeof features);
  printf("{\"load_ms\": %.4f, \"prefill_ms\": %.4f, \"decode_ms\": [", load_ms, ms[0]);
  for (int i = 1; i <= steps; ++i) printf("%s%.4f", i > 1 ? ", " : "", ms[i]);
  printf("], \"ids\": [");
  for (int i = 0; i <= steps; ++i) printf("%s%d", i ? ", " : "", ids[i]);
  printf("], \"backend\": \"%s\", \"cpu_features\": \"%s\"}\n",
         ggml_backend_dev_description(ggml_backend_dev_get(0)), features);
  free(ms);
  free(ids);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
