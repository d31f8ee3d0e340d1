// axe-core in a page, for the accessibility checks of several tests.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Every axe violation on the page as it is now (or in the elements `selector`
 * finds), one readable line per node. axe is evaluated through the browser's
 * devtools, as a test's own code: the page's script policy refuses an
 * injected `<script>`, as it should.
 */
export async function violations(page, selector) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async (selector) => {
    const result = await window.axe.run(selector ?? document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      rule: v.id,
      impact: v.impact,
      nodes: v.nodes.map((node) => `${node.target.join(' ')}: ${node.failureSummary.replace(/\s+/g, ' ')}`),
    }));
  }, selector);
  return found.flatMap((v) => v.nodes.map((node) => `${v.rule} (${v.impact}) ${node}`));
}
