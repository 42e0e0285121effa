// GPT-2's byte-level alphabet, as HF tokenizers' ByteLevel pre-tokenizer and
// decoder use it: every byte 0..255 is shown as one printable code point
// (printable Latin-1 bytes as themselves, the rest as U+0100 + n in order),
// so BPE vocabularies are strings of these 256 characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kern::tok {

/// The code point that stands for byte `b` (e.g. 0x20 -> U+0120 'Ġ').
char32_t byte_to_char(uint8_t b);

/// The byte that code point `c` stands for, or -1 when `c` is not one of the
/// 256 byte-level characters.
int char_to_byte(char32_t c);

/// `bytes` written in the byte-level alphabet, as UTF-8 ("a b" -> "aĠb").
std::string bytes_to_byte_level(std::string_view bytes);

/// Inverse of bytes_to_byte_level: the bytes `token` (UTF-8) stands for, or
/// nullopt if it holds a character outside the alphabet or is not valid
/// UTF-8. HF's ByteLevel decoder then uses the token's own UTF-8 bytes.
std::optional<std::string> byte_level_to_bytes(std::string_view token);

}  // namespace kern::tok
