// The chat page kern-run serve answers GET / with: chat_page.html, embedded
// at build time (embed_text.py), one static file of plain JavaScript that
// streams /v1/chat/completions through fetch.
#pragma once

namespace kern::run::serve {

/// chat_page.html's bytes (NUL-terminated).
extern const char kChatPageHtml[];

}  // namespace kern::run::serve
