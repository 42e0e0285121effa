// The verifier's diagnostics catalogue: every error (E01xx) and warning (W00xx)
// kern-verify can emit, in one place. A code names one kind of mistake; codes
// are stable and never reused (retire a code, never renumber). Each entry has
// a one-line title and a long explanation with a failing and a fixed example,
// which a later `--explain CODE` prints and docs/ mirrors.
//
// E00xx are reserved for the manifest reader (common/manifest_reader.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace kern::verify {

/// One kind of verifier finding. The enumerator order is the catalogue order;
/// the stable spelling ("E0100") comes from `code_info`, never from the value.
enum class Code : uint16_t {
  // SPEC §4 rule 1: format version
  kVersionUnsupported,        // E0100
  // rule 2: symbols
  kSymbolBoundsInverted,      // E0101
  // rule 3: states
  kStateSizeMissing,          // E0102
  kStateSizeAmbiguous,        // E0103
  kStateAlignNotPowerOfTwo,   // E0104
  // references and expressions (all rules)
  kUnknownSymbol,             // E0105
  kShapeEmpty,                // E0106
  kShapeZeroDim,              // E0107
  kSizeOverflow,              // E0108
  kExprOverflow,              // E0109
  kExprDivByZero,             // E0110
  kUnknownKernel,             // E0111
  kUnknownBuffer,             // E0112
  kUnknownState,              // E0113
  kUnknownScratch,            // E0114
  kInterfaceArgOutOfRange,    // E0115
  // rule 5: impl steps
  kImplNoSteps,               // E0116
  kBlockDimZero,              // E0117
  kBlockTooManyThreads,       // E0118
  kBlockZTooLarge,            // E0119
  kGridZeroAtMin,             // E0120
  kGridTooLargeAtMax,         // E0121
  kSharedMemTooLarge,         // E0122
  kSha256Malformed,           // E0123
  kSha256WithoutCubin,        // E0124
  kCubinSha256Conflict,       // E0125
  kStepArgCount,              // E0126
  kStepArgType,               // E0127
  kStepScratchType,           // E0128
  kStepLiteralKind,           // E0129
  kExternUnknown,             // E0130
  kExternParams,              // E0131
  kExternCubin,               // E0132
  // rule 6: impl vs interface
  kWriteThroughIn,            // E0133
  kOutParamUnwritten,         // E0134
  kOutParamReadUnwritten,     // E0135
  kScratchReadUnwritten,      // E0136
  kScratchOffsetMisaligned,   // E0137
  kScratchOffsetOutOfBounds,  // E0138
  kScratchUnused,             // E0139
  // rule 7: dispatches
  kDispatchArgCount,          // E0140
  kDispatchArgKind,           // E0141
  kDispatchDtypeMismatch,     // E0142
  kStateIntoBuffer,           // E0143
  kScalarRange,               // E0144
  kF32FromSymbol,             // E0145
  kLiteralKind,               // E0146
  kOffsetMisaligned,          // E0147
  kOffsetOutOfBounds,         // E0148
  // rule 8: per-program data flow
  kReadBeforeWrite,           // E0149
  kWriteToInput,              // E0150
  kWriteToWeight,             // E0151
  kOutputNeverWritten,        // E0152
  kCarryNeverWritten,         // E0153
  // rule 9: unused declarations
  kUnusedSymbol,              // E0154
  kUnusedState,               // E0155
  kUnusedBuffer,              // E0156
  kUnusedKernel,              // E0157
  // warnings
  kStepWithoutCubin,          // W0001
  kProgramWithoutEffect,      // W0002
  // Appended later (codes keep their numbers; new ones go at the end).
  kUnknownDomainTarget,       // E0158
  kExprMulByZero,             // E0159
  kWorkspaceTooLarge,         // W0003
  kDomainBoundsInverted,      // E0160
  kDomainUnitWithoutIndex,    // E0161
  kDomainUnitZero,            // E0162
  kCubinPathInvalid,          // E0163
  kStepSymbolInvalid,         // E0164
  kSpecOutOfRange,            // E0165
  kTodoSite,                  // W0004
  kTodoUnknownProgram,        // E0166
  // tensor parallelism (docs/parallel.md)
  kWorldOutOfRange,           // E0167
  kCollectiveWithoutWorld,    // E0168
};

/// Whether a code is an error (blocks the plan) or a warning (fatal only
/// under `--deny-warnings`).
enum class CodeSeverity : uint8_t { kError, kWarning };

/// A catalogue entry. All strings are static and live for the program.
struct CodeInfo {
  Code code;
  std::string_view id;           ///< stable spelling, "E0100" / "W0001"
  CodeSeverity severity;
  std::string_view title;        ///< one line, lower case
  std::string_view explanation;  ///< paragraphs + a failing and a fixed example
};

/// The catalogue entry of `c` (every enumerator has exactly one).
const CodeInfo& code_info(Code c);
/// The stable spelling of `c`, e.g. "E0133".
std::string_view code_id(Code c);
/// Looks a spelling up ("E0133", case-sensitive); nullopt when unknown.
std::optional<Code> find_code(std::string_view id);
/// Every entry in catalogue order (for --explain listings and docs).
std::span<const CodeInfo> all_codes();

}  // namespace kern::verify
