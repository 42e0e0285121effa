// Checks of kern-run's --dump-buffer destinations before anything runs: an
// output never overwrites an input, and no two dumps replace one file.
#pragma once

#include "common/result.h"
#include "kern-run/cli_options.h"

namespace kern::run {

/// Checks every `--dump-buffer NAME=FILE` of `o` before any work: FILE can be
/// written (check_output_path, kIo); FILE is not one of the run's inputs (the
/// plan, --weights, --tokenizer, --prompt-file; the same file by device and
/// inode, whatever the spelling: kUsage "--dump-buffer logits=w.st is the
/// weights file w.st; refusing to overwrite an input ..."); and no two dumps
/// name the same file that each would replace (kUsage; two writes through
/// /dev/stdout or a FIFO are allowed, the second follows the first).
Status check_dump_paths(const RunOptions& o);

}  // namespace kern::run
