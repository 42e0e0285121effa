// TODO sites (docs/manifest.md "TODO sites"): a generator that could not
// write a launch (kern-lift: a struct-by-value parameter, a foreign
// library's internals) lists it in `todos` instead of guessing. Each entry
// is a warning (W0004: the program runs without that launch); an entry
// naming an undeclared program is an error (E0166).
#include "kern-verify/verify_rules.h"

namespace kern::verify {

void check_todos(Context& ctx) {
  for (size_t i = 0; i < ctx.m.todos.size(); ++i) {
    const Todo& t = ctx.m.todos[i];
    const std::string subject = "todos[" + std::to_string(i) + "]";
    if (t.program && ctx.m.find_program(*t.program) == nullptr) {
      Diagnostic& d = ctx.error(Code::kTodoUnknownProgram,
                                subject + ".program: `" + *t.program + "` is not a declared program",
                                t.program_span);
      d.label = "no such program";
      continue;
    }
    Diagnostic& d = ctx.warning(Code::kTodoSite,
                                subject + ": TODO site `" + t.site + "`" +
                                    (t.program ? " in program `" + *t.program + "`" : std::string()) +
                                    " was not lifted: " + t.why,
                                t.span);
    d.label = "not lifted";
    d.help = t.program ? "`" + *t.program + "` runs without this launch until it is written by hand"
                       : std::string("no program launches it");
  }
}

}  // namespace kern::verify
