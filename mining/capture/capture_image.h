// The byte size and kind of a kernel image as cuModuleLoadData* and
// cuLibraryLoadData receive it: a pointer only, no size (CUDA driver API,
// "Module Management"), so the size comes from the image's own headers.
#pragma once

#include <cstddef>
#include <string>

namespace kern::capture {

/// What an image is and how many bytes it spans.
struct ImageExtent {
  std::string kind;  ///< "fatbin", "cubin" (ELF) or "ptx" (NUL-terminated text); "" when unknown
  size_t bytes = 0;  ///< 0 when the kind is unknown
  const void* data = nullptr;  ///< where the image starts (a fatbin wrapper is followed to its fatbin)
};

/// Reads the headers at `image`: a fatbin (magic 0xBA55ED50: 16-byte header,
/// bytes = header size + payload size), the fatbin wrapper nvcc embeds
/// (magic 0x466243B1, followed to its fatbin), an ELF64 cubin (bytes = the
/// end of the furthest section, section header table or program header
/// table), or PTX text (bytes = strlen + 1). Never reads past what those
/// headers declare; an unknown image gives kind "".
ImageExtent image_extent(const void* image);

}  // namespace kern::capture
