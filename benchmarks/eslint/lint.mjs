// Lints scripts warm, in process, with ESLint 9's Linter and 12 core rules.
// Protocol (one JSON value per line): the first stdin line is the list of
// script sources; then each line "round" lints every script once and answers
// with the list of seconds each took; "quit" ends. benchmarks/validator.py
// drives it so ESLint and the validator alternate round by round.
import { createInterface } from "node:readline";
import { Linter } from "eslint";

const RULES = {
  "no-undef": "error",
  "no-unused-vars": "error",
  "no-const-assign": "error",
  "no-dupe-keys": "error",
  "no-unreachable": "error",
  "no-redeclare": "error",
  "no-func-assign": "error",
  "no-self-assign": "error",
  "no-use-before-define": "error",
  "prefer-const": "error",
  "eqeqeq": "error",
  "no-shadow": "error",
};

const CONFIG = [
  {
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      globals: { Keep: "readonly", console: "readonly", JSON: "readonly", Math: "readonly", Date: "readonly", Promise: "readonly", Object: "readonly", Array: "readonly", String: "readonly", Number: "readonly", Error: "readonly", Set: "readonly", Map: "readonly", RegExp: "readonly", Boolean: "readonly" },
    },
    rules: RULES,
  },
];

const linter = new Linter({ configType: "flat" });
let scripts = null;
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (scripts === null) {
    scripts = JSON.parse(line);
    for (const source of scripts) linter.verify(source, CONFIG);
    process.stdout.write(JSON.stringify({ ready: scripts.length, rules: Object.keys(RULES).length }) + "\n");
    continue;
  }
  if (line === "quit") process.exit(0);
  const seconds = scripts.map((source) => {
    const started = process.hrtime.bigint();
    linter.verify(source, CONFIG);
    return Number(process.hrtime.bigint() - started) / 1e9;
  });
  process.stdout.write(JSON.stringify(seconds) + "\n");
}
