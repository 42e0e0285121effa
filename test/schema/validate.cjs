// Validates JSON files against a JSON Schema (draft 2020-12) with ajv, an
// off-the-shelf validator (installed by scripts/setup.sh into .cache/schema).
// Prints one JSON line per file: {"file": ..., "valid": true|false,
// "errors": [first few ajv errors]}; a file that is not JSON is invalid.
//
//   node validate.cjs AJV_MODULE_DIR SCHEMA.json FILE...
"use strict";
const fs = require("fs");
const path = require("path");

const [ajvDir, schemaPath, ...files] = process.argv.slice(2);
const Ajv2020 = require(path.resolve(ajvDir, "dist", "2020.js")).default;

// The upstream schema annotates integers with Rust's widths ("format":
// "uint64", ...); ajv's strict mode refuses unknown formats, so each one is
// registered with its range (JavaScript numbers: exact up to 2^53).
const ranges = {
  uint8: [0, 255], uint32: [0, 4294967295], int32: [-2147483648, 2147483647],
  uint64: [0, 18446744073709551615], uint: [0, 18446744073709551615],
  int64: [-9223372036854775808, 9223372036854775807],
};
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictTuples: false });
for (const [name, [lo, hi]] of Object.entries(ranges)) {
  ajv.addFormat(name, { type: "number", validate: (x) => Number.isInteger(x) && x >= lo && x <= hi });
}
ajv.addFormat("float", { type: "number", validate: (x) => Number.isFinite(x) && Math.abs(x) <= 3.4028234663852886e38 });
ajv.addFormat("double", { type: "number", validate: (x) => Number.isFinite(x) });

const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, "utf8")));
for (const file of files) {
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    console.log(JSON.stringify({ file, valid: false, errors: ["not json: " + e.message] }));
    continue;
  }
  const valid = validate(doc);
  const errors = valid ? [] : validate.errors.slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message}`);
  console.log(JSON.stringify({ file, valid, errors }));
}
