// Runs Gemini CLI's own policy loader and engine (from its installed bundle) on a
// policy directory and a list of shell commands, for tests_gemini.rs.
// Usage: node gemini_check.mjs <bundle dir> <policy dir> <cases.json>
// Prints one line `RESULT:<json>` (Gemini CLI logs to stdout too).
import fs from 'node:fs';
import path from 'node:path';

const [bundleDir, policyDir, casesFile] = process.argv.slice(2);
const chunk = fs
  .readdirSync(bundleDir)
  .filter((name) => name.startsWith('chunk-') && name.endsWith('.js'))
  .map((name) => path.join(bundleDir, name))
  .find((file) => fs.readFileSync(file, 'utf8').includes('function loadPoliciesFromToml('));
const gemini = await import(chunk);
await gemini.initializeShellParsers();
// Tier 3: the workspace tier, as the hub ranks the same directory.
const { rules, errors } = await gemini.loadPoliciesFromToml([policyDir], () => 3);
const results = [];
for (const { command, mode } of JSON.parse(fs.readFileSync(casesFile, 'utf8'))) {
  const engine = new gemini.PolicyEngine({ rules, approvalMode: mode });
  const verdict = await engine.check({ name: 'run_shell_command', args: { command } }, undefined);
  results.push({ command, mode, decision: verdict.decision });
}
const summary = {
  rules: rules.length,
  errors: errors.map((e) => `${e.fileName}: ${e.errorType}: ${e.message} ${e.details ?? ''}`),
  results,
};
process.stdout.write(`\nRESULT:${JSON.stringify(summary)}\n`);
