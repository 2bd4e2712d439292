// The README's JavaScript examples, run as written against a real server:
// each ```js block becomes a module inside the package (so `import ...
// from "silt-client"` resolves to this package by its own name) and must
// exit 0.

import test from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startSilt } from "./support.mjs";

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const readme = fs.readFileSync(path.join(here, "..", "README.md"), "utf8");
const blocks = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
const scratch = path.join(here, ".readme", String(process.pid));

const silt = await startSilt("readme");
fs.mkdirSync(scratch, { recursive: true });
test.after(() => {
    fs.rmSync(scratch, { recursive: true, force: true });
    try { fs.rmdirSync(path.dirname(scratch)); } catch { /* another run's examples are still there */ }
});

test("the_readme_has_examples", () => {
    assert.ok(blocks.length >= 4, `${blocks.length} js blocks`);
});

for (const [i, code] of blocks.entries()) {
    const first = code.startsWith("// ") ? code.split("\n")[0].slice(3) : code.split("\n").find((l) => l.trim() && !l.startsWith("import"));
    const title = (first ?? "").trim().slice(0, 50);
    test(`readme_example_${i + 1}_runs_as_written: ${title}`, async (t) => {
        const file = path.join(scratch, `example-${i + 1}.mjs`);
        fs.writeFileSync(file, code);
        const { stdout } = await run(process.execPath, [file], {
            env: { ...process.env, SILT_URL: silt.url },
            timeout: 60000,
        });
        if (stdout.trim()) t.diagnostic(stdout.trim().replaceAll("\n", " | "));
    });
}
