// The .kplan checksum trailer: writing and checking (plan_checksum.h).
#include "common/plan_checksum.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/sha256.h"

namespace kern {

Result<std::array<uint8_t, kPlanTrailerBytes>> plan_trailer(std::span<const uint8_t> body) {
  std::array<uint8_t, kPlanTrailerBytes> trailer{};
  std::memcpy(trailer.data(), kPlanTrailerMagic, 8);
  std::vector<uint8_t> hashed(body.begin(), body.end());
  hashed.insert(hashed.end(), trailer.begin(), trailer.begin() + 8);
  KERN_ASSIGN_OR_RETURN(auto digest, sha256_bytes(std::span<const uint8_t>(hashed)));
  std::copy(digest.begin(), digest.end(), trailer.begin() + 8);
  return trailer;
}

Result<std::span<const uint8_t>> check_plan_trailer(std::span<const uint8_t> file, const std::string& name) {
  auto bad = [&](const std::string& what) {
    return make_error(ErrorKind::kManifest, name.empty() ? what : name + ": " + what);
  };
  if (file.size() < kPlanTrailerBytes ||
      std::memcmp(file.data() + file.size() - kPlanTrailerBytes, kPlanTrailerMagic, 8) != 0)
    return bad("no checksum trailer at the end of the file: it was cut short, had bytes appended, or was "
               "not written by kern-verify (recompile the manifest)");
  const size_t hashed = file.size() - 32;
  KERN_ASSIGN_OR_RETURN(auto digest, sha256_bytes(file.first(hashed)));
  if (std::memcmp(digest.data(), file.data() + hashed, 32) != 0)
    return bad("checksum mismatch: the file changed after kern-verify wrote it (sha256 " + hex_encode(digest) +
               ", trailer says " + hex_encode(file.subspan(hashed)) + ")");
  return file.first(file.size() - kPlanTrailerBytes);
}

}  // namespace kern
