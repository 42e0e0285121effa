// The catalogue data of codes.h. Each explanation ends with a failing and a
// fixed manifest fragment ("failing:" / "fixed:" lines); tests check that
// every entry has both and that spellings are unique.
#include "kern-verify/codes.h"

#include <array>

namespace kern::verify {
namespace {

using C = Code;
constexpr CodeSeverity E = CodeSeverity::kError;
constexpr CodeSeverity W = CodeSeverity::kWarning;

constexpr std::array kCatalogue = {
    CodeInfo{C::kVersionUnsupported, "E0100", E, "unsupported manifest version",
             "kern reads manifest format version 2 only (SPEC §3); older or newer layouts\n"
             "differ in ways the verifier cannot check.\n"
             "failing: \"meta\": {\"version\": 1, \"model\": \"m\"}\n"
             "fixed:   \"meta\": {\"version\": 2, \"model\": \"m\"}"},
    CodeInfo{C::kSymbolBoundsInverted, "E0101", E, "symbol bounds are inverted",
             "A symbol's `min` must not exceed its `max`; every static check is done at\n"
             "the two bounds (SPEC §4 rule 2).\n"
             "failing: \"tokens\": {\"min\": 8, \"max\": 4}\n"
             "fixed:   \"tokens\": {\"min\": 1, \"max\": 512}"},
    CodeInfo{C::kStateSizeMissing, "E0102", E, "state has no size",
             "A state needs exactly one non-zero size: `bytes_per_token` (scaled by the\n"
             "capacity, e.g. a paged KV cache) or `bytes_fixed` (SPEC §4 rule 3).\n"
             "failing: \"kv\": {\"align\": 256}\n"
             "fixed:   \"kv\": {\"bytes_per_token\": 4096, \"align\": 256}"},
    CodeInfo{C::kStateSizeAmbiguous, "E0103", E, "state declares both sizes",
             "`bytes_per_token` and `bytes_fixed` are exclusive: the runtime could not\n"
             "tell whether the state grows with the capacity.\n"
             "failing: \"kv\": {\"bytes_per_token\": 4096, \"bytes_fixed\": 64}\n"
             "fixed:   \"kv\": {\"bytes_per_token\": 4096}"},
    CodeInfo{C::kStateAlignNotPowerOfTwo, "E0104", E, "state alignment is not a power of two up to 4096",
             "`align` is a byte alignment and must be a non-zero power of two of at most\n"
             "4096 B (one page; device allocations are 256 B aligned).\n"
             "failing: \"kv\": {\"bytes_per_token\": 4096, \"align\": 100}\n"
             "fixed:   \"kv\": {\"bytes_per_token\": 4096, \"align\": 128}"},
    CodeInfo{C::kUnknownSymbol, "E0105", E, "unknown symbol",
             "A shape dimension, grid/shared-memory expression or `{\"sym\": ...}` argument\n"
             "names a symbol that `symbols` does not declare.\n"
             "failing: \"shape\": [\"token\", 64]   (symbols declares \"tokens\")\n"
             "fixed:   \"shape\": [\"tokens\", 64]"},
    CodeInfo{C::kShapeEmpty, "E0106", E, "empty shape",
             "A buffer or scratch shape needs at least one dimension; write [1] for a\n"
             "single element.\n"
             "failing: \"seq_len\": {\"dtype\": \"i32\", \"shape\": [], \"class\": \"input\"}\n"
             "fixed:   \"seq_len\": {\"dtype\": \"i32\", \"shape\": [1], \"class\": \"input\"}"},
    CodeInfo{C::kShapeZeroDim, "E0107", E, "zero-sized dimension",
             "A constant dimension of 0 makes an empty buffer no kernel can use.\n"
             "failing: \"shape\": [\"tokens\", 0]\n"
             "fixed:   \"shape\": [\"tokens\", 64]"},
    CodeInfo{C::kSizeOverflow, "E0108", E, "byte size overflows at the symbols' maxima",
             "The runtime allocates every buffer and scratch at the symbols' upper bounds;\n"
             "dtype size x dimensions must fit in 64 bits (SPEC §4 rule 4).\n"
             "failing: \"shape\": [\"tokens\", 18446744073709551615]\n"
             "fixed:   \"shape\": [\"tokens\", 4096]"},
    CodeInfo{C::kExprOverflow, "E0109", E, "expression overflows at the symbols' maxima",
             "Expressions are evaluated with checked 64-bit arithmetic; a `mul` or the\n"
             "rounding of a `ceil_div` overflowed at the upper bounds.\n"
             "failing: {\"mul\": [{\"sym\": \"tokens\"}, 18446744073709551615]}\n"
             "fixed:   {\"mul\": [{\"sym\": \"tokens\"}, 32]}"},
    CodeInfo{C::kExprDivByZero, "E0110", E, "ceil_div by zero",
             "The divisor of a `ceil_div` is a constant and must be non-zero.\n"
             "failing: {\"ceil_div\": [{\"sym\": \"tokens\"}, 0]}\n"
             "fixed:   {\"ceil_div\": [{\"sym\": \"tokens\"}, 4]}"},
    CodeInfo{C::kUnknownKernel, "E0111", E, "unknown kernel",
             "A dispatch names a kernel that `kernels` does not declare.\n"
             "failing: {\"kernel\": \"rms_norm\", \"args\": [...]}   (kernels declares \"rmsnorm\")\n"
             "fixed:   {\"kernel\": \"rmsnorm\", \"args\": [...]}"},
    CodeInfo{C::kUnknownBuffer, "E0112", E, "unknown buffer",
             "A `{\"buf\": ...}` argument names a buffer that `buffers` does not declare.\n"
             "failing: {\"buf\": \"hiden\"}\n"
             "fixed:   {\"buf\": \"hidden\"}"},
    CodeInfo{C::kUnknownState, "E0113", E, "unknown state",
             "A `{\"state\": ...}` argument names a state that `states` does not declare.\n"
             "failing: {\"state\": \"kv\"}   (states declares \"kv_cache\")\n"
             "fixed:   {\"state\": \"kv_cache\"}"},
    CodeInfo{C::kUnknownScratch, "E0114", E, "unknown scratch",
             "A step's `{\"scratch\": ...}` argument names a scratch that the same impl's\n"
             "`scratch` does not declare (scratch is private to one implementation).\n"
             "failing: {\"scratch\": \"partial\"}   (impl.scratch declares \"partial_val\")\n"
             "fixed:   {\"scratch\": \"partial_val\"}"},
    CodeInfo{C::kInterfaceArgOutOfRange, "E0115", E, "interface argument index out of range",
             "`{\"arg\": i}` forwards interface param i; i must be below the number of\n"
             "interface params.\n"
             "failing: \"params\": [\"in buffer<bf16>\", \"i32\"] ... {\"arg\": 2}\n"
             "fixed:   \"params\": [\"in buffer<bf16>\", \"i32\"] ... {\"arg\": 1}"},
    CodeInfo{C::kImplNoSteps, "E0116", E, "implementation has no steps",
             "An impl is a sequence of launches; an empty one would silently do nothing.\n"
             "failing: \"impl\": {\"steps\": []}\n"
             "fixed:   \"impl\": {\"steps\": [{\"symbol\": \"kern_copy\", ...}]}"},
    CodeInfo{C::kBlockDimZero, "E0117", E, "block dimension is zero",
             "Every block dimension must be at least 1 (cuLaunchKernel rejects 0).\n"
             "failing: \"block\": [256, 0, 1]\n"
             "fixed:   \"block\": [256, 1, 1]"},
    CodeInfo{C::kBlockTooManyThreads, "E0118", E, "block has more than 1024 threads",
             "x * y * z threads per block must not exceed 1024 (CUDA limit on every\n"
             "architecture kern targets).\n"
             "failing: \"block\": [1024, 2, 1]\n"
             "fixed:   \"block\": [512, 2, 1]"},
    CodeInfo{C::kBlockZTooLarge, "E0119", E, "block z dimension above 64",
             "CUDA limits blockDim.z to 64.\n"
             "failing: \"block\": [1, 1, 128]\n"
             "fixed:   \"block\": [2, 1, 64]"},
    CodeInfo{C::kGridZeroAtMin, "E0120", E, "grid dimension is zero at the symbols' minima",
             "A grid dimension evaluated at the symbols' lower bounds must be non-zero;\n"
             "a zero grid is a launch error.\n"
             "failing: \"grid\": [{\"ceil_div\": [{\"sym\": \"tokens\"}, 4]}, 0, 1]\n"
             "fixed:   \"grid\": [{\"ceil_div\": [{\"sym\": \"tokens\"}, 4]}, 1, 1]"},
    CodeInfo{C::kGridTooLargeAtMax, "E0121", E, "grid dimension over the CUDA limit",
             "At the symbols' upper bounds grid x must be below 2^31 and y, z at most\n"
             "65535 (SPEC §4 rule 5).\n"
             "failing: \"grid\": [1, {\"mul\": [{\"sym\": \"tokens\"}, 1024]}, 1]   (tokens max 512)\n"
             "fixed:   \"grid\": [{\"mul\": [{\"sym\": \"tokens\"}, 1024]}, 1, 1]"},
    CodeInfo{C::kSharedMemTooLarge, "E0122", E, "dynamic shared memory over the opt-in limit",
             "`shared_mem` at the symbols' maxima must not exceed 232448 B (227 KiB, the\n"
             "per-block opt-in limit of sm_90/sm_100).\n"
             "failing: \"shared_mem\": 240000\n"
             "fixed:   \"shared_mem\": 200000"},
    CodeInfo{C::kSha256Malformed, "E0123", E, "malformed sha256",
             "A cubin pin's sha256 is exactly 64 hexadecimal digits.\n"
             "failing: \"sha256\": \"abc123\"\n"
             "fixed:   \"sha256\": \"<64 hex digits printed by sha256sum>\""},
    CodeInfo{C::kSha256WithoutCubin, "E0124", E, "sha256 without a cubin",
             "A sha256 pins the file named by `cubin`; without one there is nothing to\n"
             "check it against.\n"
             "failing: {\"symbol\": \"kern_x\", \"sha256\": \"<64 hex>\", ...}\n"
             "fixed:   {\"symbol\": \"kern_x\", \"cubin\": \"x.cubin\", \"sha256\": \"<64 hex>\", ...}"},
    CodeInfo{C::kCubinSha256Conflict, "E0125", E, "one cubin pinned with two different sha256",
             "Two steps pin the same cubin file with different digests; at most one of\n"
             "them can match the file.\n"
             "failing: step A {\"cubin\": \"k.cubin\", \"sha256\": \"aa..\"}, step B {\"cubin\": \"k.cubin\", \"sha256\": \"bb..\"}\n"
             "fixed:   both steps carry the digest of the shipped k.cubin"},
    CodeInfo{C::kStepArgCount, "E0126", E, "step argument count differs from its params",
             "A step passes exactly one argument per declared step param.\n"
             "failing: \"params\": [\"in buffer<bf16>\", \"i32\"], \"args\": [{\"arg\": 0}]\n"
             "fixed:   \"params\": [\"in buffer<bf16>\", \"i32\"], \"args\": [{\"arg\": 0}, {\"arg\": 1}]"},
    CodeInfo{C::kStepArgType, "E0127", E, "forwarded interface argument does not fit the step param",
             "`{\"arg\": i}` passes interface param i unchanged. A scalar must have the same\n"
             "kind; `buffer<d>` goes into `buffer<d>` (same dtype) or an untyped `ptr`; a\n"
             "`ptr` only into `ptr`; a pointer never into a scalar or back. (Direction is\n"
             "checked separately, E0133 and E0135.)\n"
             "failing: interface \"in buffer<bf16>\", step param \"in buffer<f32>\"\n"
             "fixed:   interface \"in buffer<bf16>\", step param \"in buffer<bf16>\""},
    CodeInfo{C::kStepScratchType, "E0128", E, "scratch passed to an incompatible step param",
             "A scratch pointer goes into `buffer<d>` where d is the scratch dtype, or into\n"
             "an untyped `ptr`; never into a scalar.\n"
             "failing: scratch \"partial\" f32 into \"out buffer<bf16>\"\n"
             "fixed:   scratch \"partial\" f32 into \"out buffer<f32>\""},
    CodeInfo{C::kStepLiteralKind, "E0129", E, "step literal kind differs from the step param",
             "An impl literal must be written with the kind of the param it fills:\n"
             "`{\"i32\": 64}` for an `i32`, `{\"f32\": 1e-6}` for an `f32`, never a pointer.\n"
             "failing: param \"u8\", arg {\"i32\": 1}\n"
             "fixed:   param \"u8\", arg {\"u8\": 1}"},
    CodeInfo{C::kExternUnknown, "E0130", E, "unknown extern op",
             "Steps whose symbol starts with `extern:` run a runtime built-in; kern knows\n"
             "`extern:cublaslt_bf16_tn` and `extern:cublaslt_bf16_tn_acc` (docs/kernels.md).\n"
             "failing: \"symbol\": \"extern:cublas_gemm\"\n"
             "fixed:   \"symbol\": \"extern:cublaslt_bf16_tn\""},
    CodeInfo{C::kExternParams, "E0131", E, "extern step params differ from the op's ABI",
             "An extern step must declare exactly the built-in's params, e.g.\n"
             "`extern:cublaslt_bf16_tn` takes in buffer<bf16> a, in buffer<bf16> w,\n"
             "out buffer<bf16> c, i32 m, i32 n, i32 k.\n"
             "failing: \"params\": [\"in buffer<bf16>\", \"in buffer<bf16>\", \"out buffer<bf16>\", \"i32\", \"i32\"]\n"
             "fixed:   \"params\": [\"in buffer<bf16>\", \"in buffer<bf16>\", \"out buffer<bf16>\", \"i32\", \"i32\", \"i32\"]"},
    CodeInfo{C::kExternCubin, "E0132", E, "extern step pins a cubin",
             "Runtime built-ins are not loaded from a cubin, so an extern step takes no\n"
             "`cubin` (or `sha256`).\n"
             "failing: {\"symbol\": \"extern:cublaslt_bf16_tn\", \"cubin\": \"gemm.cubin\", ...}\n"
             "fixed:   {\"symbol\": \"extern:cublaslt_bf16_tn\", ...}"},
    CodeInfo{C::kWriteThroughIn, "E0133", E, "step writes through an interface `in` param",
             "A step param with direction `out` or `inout` may forward only an interface\n"
             "param declared `out` or `inout`: the caller promised the kernel only reads an\n"
             "`in` argument. A step may always read less than the interface allows (an `in`\n"
             "step param may forward an `inout`/`out` interface param).\n"
             "failing: interface \"in buffer<bf16>\", step param \"inout buffer<bf16>\"\n"
             "fixed:   interface \"inout buffer<bf16>\", step param \"inout buffer<bf16>\""},
    CodeInfo{C::kOutParamUnwritten, "E0134", E, "interface `out` param never written",
             "Every interface param declared `out` must be forwarded to some step param\n"
             "declared `out` or `inout`; otherwise callers read garbage.\n"
             "failing: interface [\"in buffer<bf16>\", \"out buffer<bf16>\"], only step reads arg 1\n"
             "fixed:   a step forwards {\"arg\": 1} into an \"out buffer<bf16>\" param"},
    CodeInfo{C::kOutParamReadUnwritten, "E0135", E, "interface `out` param read before a step wrote it",
             "An interface `out` argument holds no defined data on entry; a step may read\n"
             "it (`in`/`inout`) only after an earlier step of the same impl wrote it.\n"
             "failing: step 0 reads {\"arg\": 2} (interface \"out buffer<bf16>\"), step 1 writes it\n"
             "fixed:   step 0 writes {\"arg\": 2}, step 1 reads it"},
    CodeInfo{C::kScratchReadUnwritten, "E0136", E, "scratch read before any step wrote it",
             "Scratch is dead between dispatches; a step may read it only after an\n"
             "earlier step of the same impl wrote it (SPEC §4 rule 6).\n"
             "failing: step 0 passes {\"scratch\": \"partial\"} into an \"in buffer<f32>\" param\n"
             "fixed:   step 0 writes \"partial\" (\"out buffer<f32>\"), step 1 reads it"},
    CodeInfo{C::kScratchOffsetMisaligned, "E0137", E, "scratch offset not aligned to its dtype",
             "A scratch `offset` is in bytes and must be a multiple of the element size\n"
             "of the param dtype (the scratch dtype for a `ptr`).\n"
             "failing: {\"scratch\": \"partial\", \"offset\": 2}   (f32 scratch)\n"
             "fixed:   {\"scratch\": \"partial\", \"offset\": 4}"},
    CodeInfo{C::kScratchOffsetOutOfBounds, "E0138", E, "scratch offset past the end of the scratch",
             "A scratch `offset` must lie inside the scratch at the symbols' minima.\n"
             "failing: {\"scratch\": \"partial\", \"offset\": 4096}   (partial is 256 B at tokens = 1)\n"
             "fixed:   {\"scratch\": \"partial\", \"offset\": 128}"},
    CodeInfo{C::kScratchUnused, "E0139", E, "unused scratch",
             "Every declared scratch must be passed to some step of its impl.\n"
             "failing: \"scratch\": {\"tmp\": {...}} and no step mentions \"tmp\"\n"
             "fixed:   remove \"tmp\" from impl.scratch"},
    CodeInfo{C::kDispatchArgCount, "E0140", E, "dispatch argument count differs from the interface",
             "A dispatch passes exactly one argument per interface param of its kernel.\n"
             "failing: kernel params [\"in buffer<bf16>\", \"i32\"], args [{\"buf\": \"x\"}]\n"
             "fixed:   args [{\"buf\": \"x\"}, {\"sym\": \"tokens\"}]"},
    CodeInfo{C::kDispatchArgKind, "E0141", E, "dispatch argument of the wrong kind",
             "Pointer params take `{\"buf\": ...}` or `{\"state\": ...}`; scalar params take a\n"
             "literal, `{\"sym\": ...}` or `{\"expr\": ...}`.\n"
             "failing: param \"i32\", arg {\"buf\": \"x\"}\n"
             "fixed:   param \"i32\", arg {\"sym\": \"tokens\"}"},
    CodeInfo{C::kDispatchDtypeMismatch, "E0142", E, "buffer dtype differs from the param dtype",
             "A buffer passed to `buffer<d>` must have dtype exactly d (no implicit\n"
             "conversion; a buffer may also go into an untyped `ptr`).\n"
             "failing: buffer \"x\" is f32, param \"in buffer<bf16>\"\n"
             "fixed:   buffer \"x\" is bf16, param \"in buffer<bf16>\""},
    CodeInfo{C::kStateIntoBuffer, "E0143", E, "state passed to a typed buffer param",
             "States are opaque bytes; they go only into untyped `ptr` params.\n"
             "failing: param \"inout buffer<bf16>\", arg {\"state\": \"kv_cache\"}\n"
             "fixed:   param \"inout ptr\", arg {\"state\": \"kv_cache\"}"},
    CodeInfo{C::kScalarRange, "E0144", E, "symbol or expression range does not fit the param type",
             "A `{\"sym\"}` or `{\"expr\"}` argument is evaluated at the symbols' bounds; the\n"
             "whole range must fit the scalar param (i32, u32, u8, i64).\n"
             "failing: param \"u8\", arg {\"sym\": \"tokens\"}   (tokens max 512)\n"
             "fixed:   param \"i32\", arg {\"sym\": \"tokens\"}"},
    CodeInfo{C::kF32FromSymbol, "E0145", E, "f32 param takes a symbol or expression",
             "Symbols and expressions are integers; an `f32` param takes only an f32\n"
             "literal.\n"
             "failing: param \"f32\", arg {\"sym\": \"tokens\"}\n"
             "fixed:   param \"f32\", arg {\"f32\": 1e-6}"},
    CodeInfo{C::kLiteralKind, "E0146", E, "dispatch literal kind differs from the param",
             "A literal argument must be written with the param's kind.\n"
             "failing: param \"i64\", arg {\"i32\": 4096}\n"
             "fixed:   param \"i64\", arg {\"i64\": 4096}"},
    CodeInfo{C::kOffsetMisaligned, "E0147", E, "argument offset not aligned to the param dtype",
             "A buffer/state `offset` is in bytes and must be a multiple of the element\n"
             "size of a `buffer<d>` param (e.g. 2 for bf16).\n"
             "failing: param \"in buffer<bf16>\", arg {\"buf\": \"qkv\", \"offset\": 3}\n"
             "fixed:   param \"in buffer<bf16>\", arg {\"buf\": \"qkv\", \"offset\": 8192}"},
    CodeInfo{C::kOffsetOutOfBounds, "E0148", E, "argument offset past the end",
             "A buffer `offset` must be below the buffer's byte size at the symbols'\n"
             "minima (for a fixed-size state: below `bytes_fixed`).\n"
             "failing: buffer \"qkv\" is 12288 B at tokens = 1, arg {\"buf\": \"qkv\", \"offset\": 12288}\n"
             "fixed:   arg {\"buf\": \"qkv\", \"offset\": 10240}"},
    CodeInfo{C::kReadBeforeWrite, "E0149", E, "buffer read before any dispatch wrote it",
             "Within one program, a workspace or output buffer must be written (an `out`\n"
             "or `inout` param) by an earlier dispatch before one reads it. Inputs, weights,\n"
             "carries and states count as initialised (SPEC §4 rule 8).\n"
             "failing: dispatch 0 reads workspace \"normed\", dispatch 1 writes it\n"
             "fixed:   dispatch 0 writes \"normed\", dispatch 1 reads it"},
    CodeInfo{C::kWriteToInput, "E0150", E, "dispatch writes an input buffer",
             "The caller writes `input` buffers before a program runs; kernels may not\n"
             "overwrite them.\n"
             "failing: input \"token_ids\" passed to an \"out buffer<i64>\" param\n"
             "fixed:   write into a workspace buffer instead"},
    CodeInfo{C::kWriteToWeight, "E0151", E, "dispatch writes a weight buffer",
             "Weights are bound from the weights file and are read-only.\n"
             "failing: weight \"lm_head.weight\" passed to an \"inout buffer<bf16>\" param\n"
             "fixed:   pass it to an \"in buffer<bf16>\" param"},
    CodeInfo{C::kOutputNeverWritten, "E0152", E, "output buffer never written",
             "Some program must write every `output` buffer, or the caller reads garbage.\n"
             "failing: output \"next_token\" appears only as an `in` argument\n"
             "fixed:   a decode dispatch writes \"next_token\" through an `out` param"},
    CodeInfo{C::kCarryNeverWritten, "E0153", E, "carry buffer never written",
             "A `carry` hands data from one program to another; some program must\n"
             "write it.\n"
             "failing: carry \"aux_hidden\" is only read\n"
             "fixed:   the target program writes \"aux_hidden\" through an `out` param"},
    CodeInfo{C::kUnusedSymbol, "E0154", E, "unused symbol",
             "Every declared symbol must appear in a shape, an expression or an argument\n"
             "(SPEC §4 rule 9).\n"
             "failing: \"symbols\": {\"tokens\": {...}, \"batch\": {...}} and nothing uses \"batch\"\n"
             "fixed:   remove \"batch\""},
    CodeInfo{C::kUnusedState, "E0155", E, "unused state",
             "Every declared state must be passed to some dispatch.\n"
             "failing: \"states\": {\"kv_cache\": {...}} and no {\"state\": \"kv_cache\"} argument\n"
             "fixed:   remove the state or pass it to the attention dispatches"},
    CodeInfo{C::kUnusedBuffer, "E0156", E, "unused buffer",
             "Every declared buffer must be passed to some dispatch.\n"
             "failing: \"buffers\": {\"scratch2\": {...}} and no {\"buf\": \"scratch2\"} argument\n"
             "fixed:   remove \"scratch2\""},
    CodeInfo{C::kUnusedKernel, "E0157", E, "unused kernel",
             "Every declared kernel must be dispatched by some program.\n"
             "failing: \"kernels\": {\"gelu\": {...}} and no dispatch of \"gelu\"\n"
             "fixed:   remove \"gelu\""},
    CodeInfo{C::kStepWithoutCubin, "W0001", W, "step without a cubin pin",
             "A non-extern step without `cubin` resolves its symbol in every loaded\n"
             "module; pinning the file (and its sha256) makes the artifact reproducible.\n"
             "failing: {\"symbol\": \"kern_rmsnorm_bf16\", ...}\n"
             "fixed:   {\"symbol\": \"kern_rmsnorm_bf16\", \"cubin\": \"rmsnorm.cubin\", \"sha256\": \"<64 hex>\", ...}"},
    CodeInfo{C::kProgramWithoutEffect, "W0002", W, "program writes no output, carry or state",
             "A program whose dispatches write no output, carry or state has no visible\n"
             "effect (a prefill that fills the KV cache writes a state and is fine).\n"
             "failing: a program that only writes workspace buffers\n"
             "fixed:   write its result into an output buffer or a state"},
    CodeInfo{C::kUnknownDomainTarget, "E0158", E, "domain index_into names no buffer or state",
             "A buffer domain's `index_into` says every element indexes a row of a buffer or a\n"
             "token slot of a state; that name must be declared.\n"
             "failing: \"block_table\": {..., \"domain\": {\"index_into\": \"kv\"}}   (states declares \"kv_cache\")\n"
             "fixed:   \"block_table\": {..., \"domain\": {\"index_into\": \"kv_cache\", \"unit\": 16}}"},
    CodeInfo{C::kExprMulByZero, "E0159", E, "mul by zero",
             "A `mul` by the constant 0 makes the expression 0 at every symbol value: a grid\n"
             "or shared-memory size of 0 and a scalar argument that ignores its symbol. It is\n"
             "always a generator mistake (the upstream verifier rejects it too); write the\n"
             "constant instead, or the intended factor.\n"
             "failing: {\"mul\": [{\"sym\": \"tokens\"}, 0]}\n"
             "fixed:   {\"mul\": [{\"sym\": \"tokens\"}, 4]}"},
    CodeInfo{C::kWorkspaceTooLarge, "W0003", W, "workspace buffer larger than the threshold",
             "The runtime allocates every workspace buffer at the symbols' maxima; one above\n"
             "the threshold (default 1 GiB, `--workspace-warn-bytes`) usually means a symbol\n"
             "bound or a dimension is much larger than intended.\n"
             "failing: \"logits\": {\"dtype\": \"f32\", \"shape\": [\"tokens\", 151936], \"class\": \"workspace\"}\n"
             "         with tokens max 65536 (39.8 GB)\n"
             "fixed:   tokens max 512 (311 MB), or compute the logits of the last token only"},
    CodeInfo{C::kDomainBoundsInverted, "E0160", E, "domain bounds are inverted",
             "A value domain's constant `min` must not exceed its `max`: no value could satisfy it,\n"
             "so the domain contradicts itself. Domains are checked for consistency here and are\n"
             "documentation for now: they are not lowered into the plan, so kern-run does not\n"
             "check input values against them (bounds written as expressions are not compared).\n"
             "failing: \"domain\": {\"min\": 10, \"max\": 0}\n"
             "fixed:   \"domain\": {\"min\": 0, \"max\": 10}"},
    CodeInfo{C::kDomainUnitWithoutIndex, "E0161", E, "domain unit without index_into",
             "`unit` says how many rows or token slots one index covers; it means something only\n"
             "together with `index_into`.\n"
             "failing: \"domain\": {\"min\": 0, \"unit\": 16}\n"
             "fixed:   \"domain\": {\"index_into\": \"kv_cache\", \"unit\": 16}"},
    CodeInfo{C::kDomainUnitZero, "E0162", E, "domain unit is zero",
             "An index covering 0 rows or token slots addresses nothing; a paged KV block table\n"
             "indexes `unit` = block size tokens at a time (leave `unit` out for 1).\n"
             "failing: \"domain\": {\"index_into\": \"kv_cache\", \"unit\": 0}\n"
             "fixed:   \"domain\": {\"index_into\": \"kv_cache\", \"unit\": 16}"},
    CodeInfo{C::kCubinPathInvalid, "E0163", E, "cubin path is not a relative path inside the kernels directory",
             "A step's `cubin` names a file inside the kernels directory that kern-run is given\n"
             "(`--kernels DIR`): a relative path with `/` between non-empty components. An\n"
             "absolute path, a `..` component, an empty component (`a//b`, a trailing `/`) or\n"
             "a backslash would reach outside it or mean different files on different hosts\n"
             "(kern-load refuses a plan with an absolute or `..` path outright).\n"
             "failing: \"cubin\": \"../../../etc/passwd\"\n"
             "fixed:   \"cubin\": \"attention/paged_attention.fatbin\""},
    CodeInfo{C::kStepSymbolInvalid, "E0164", E, "step symbol is not a kernel entry name",
             "A step's `symbol` is the entry point looked up in the cubin (cuModuleGetFunction):\n"
             "a non-empty C identifier of letters, digits and `_`, not starting with a digit\n"
             "(declare the kernel `extern \"C\"` or give the mangled `_Z...` name). Runtime\n"
             "built-ins are spelled `extern:NAME` instead (E0130 lists them).\n"
             "failing: \"symbol\": \" kern_rmsnorm_bf16\"\n"
             "fixed:   \"symbol\": \"kern_rmsnorm_bf16\""},
    CodeInfo{C::kSpecOutOfRange, "E0165", E, "meta.spec block or mask token out of range",
             "A speculative manifest's `meta.spec.block` is the rows of one draft/verify call:\n"
             "the accepted token plus at least one drafted row, so at least 2, and no more\n"
             "than the `tokens` symbol's max (one call's rows are its tokens). `mask_token`\n"
             "fills the drafted rows: a token id, so not negative (kern-run also checks it\n"
             "is below the vocabulary size, which only the model knows).\n"
             "failing: \"spec\": {\"block\": 1, \"mask_token\": -1}\n"
             "fixed:   \"spec\": {\"block\": 16, \"mask_token\": 151669}"},
    CodeInfo{C::kTodoSite, "W0004", W, "TODO site: a launch the generator could not write",
             "A generator (kern-lift, docs/mining.md) lists a call site it could not lift in\n"
             "`todos` instead of guessing it: a struct-by-value parameter, a foreign library's\n"
             "internal kernels, a value that is no kern expression. The program named runs\n"
             "WITHOUT that launch, so its results are not the captured program's until the\n"
             "site is written by hand as a kernel and dispatch and the entry removed.\n"
             "failing: \"todos\": [{\"site\": \"scale_kernel#0\", \"program\": \"pass_0\", \"why\": \"param[1] is a 16-byte struct\"}]\n"
             "fixed:   a \"kernels\" entry with the struct's fields as scalars, its dispatch in pass_0, no todos entry"},
    CodeInfo{C::kTodoUnknownProgram, "E0166", E, "TODO names no program",
             "A `todos` entry's `program` (the program the missing launch belongs in) must\n"
             "name a declared program, or be null for a site outside every program.\n"
             "failing: \"todos\": [{\"site\": \"k#0\", \"program\": \"prefil\", \"why\": \"...\"}]\n"
             "fixed:   \"todos\": [{\"site\": \"k#0\", \"program\": \"prefill\", \"why\": \"...\"}]"},
    CodeInfo{C::kWorldOutOfRange, "E0167", E, "meta.world out of range",
             "`meta.world` is the number of ranks (processes, one device each) that run the\n"
             "manifest together, each with its own weight shard (docs/parallel.md): at least\n"
             "1 and at most 64 (kern-run starts every rank on one machine).\n"
             "failing: \"meta\": {\"version\": 2, \"model\": \"m\", \"world\": 0}\n"
             "fixed:   \"meta\": {\"version\": 2, \"model\": \"m\", \"world\": 2}"},
    CodeInfo{C::kCollectiveWithoutWorld, "E0168", E, "collective in a manifest of one rank",
             "A collective extern op (`extern:allreduce_sum_f32`, ...) exchanges data between\n"
             "the ranks of a tensor-parallel world, so it needs `meta.world` above 1; with one\n"
             "rank it would be a copy at best and a sign that the generator sharded a model\n"
             "it did not mean to.\n"
             "failing: \"meta\": {\"version\": 2, \"model\": \"m\"} and a step \"extern:allreduce_sum_f32\"\n"
             "fixed:   \"meta\": {\"version\": 2, \"model\": \"m\", \"world\": 2}"},
};

}  // namespace

const CodeInfo& code_info(Code c) {
  // The array is in enumerator order (checked by test/verify/codes_test.cpp).
  return kCatalogue[static_cast<size_t>(c)];
}

std::string_view code_id(Code c) { return code_info(c).id; }

std::optional<Code> find_code(std::string_view id) {
  for (const CodeInfo& info : kCatalogue) {
    if (info.id == id) return info.code;
  }
  return std::nullopt;
}

std::span<const CodeInfo> all_codes() { return kCatalogue; }

}  // namespace kern::verify
