// The syntax highlighter of code blocks and diffs: highlight.js with the
// grammars below, and the tokens' colours. The page loads it only once a code
// block or a diff is on screen (app/src/highlight.rs): esbuild bundles this
// file into one classic script, target/site/pkg/highlighter.js
// (scripts/lib.sh), which defines the global `hubHighlight`. The grammars'
// names are the ones app/src/highlight.rs maps fences and file names to (a
// unit test there holds the two together).
import tokenColours from '../../style/highlight.css';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import csharp from 'highlight.js/lib/languages/csharp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import dockerfile from 'highlight.js/lib/languages/dockerfile';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import kotlin from 'highlight.js/lib/languages/kotlin';
import makefile from 'highlight.js/lib/languages/makefile';
import markdown from 'highlight.js/lib/languages/markdown';
import php from 'highlight.js/lib/languages/php';
import python from 'highlight.js/lib/languages/python';
import ruby from 'highlight.js/lib/languages/ruby';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import swift from 'highlight.js/lib/languages/swift';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const grammars = { bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, makefile, markdown, php, python, ruby, rust, shell, sql, swift, typescript, xml, yaml };

for (const [name, grammar] of Object.entries(grammars)) hljs.registerLanguage(name, grammar);

// The colours come with the highlighter: before it, nothing has their classes.
const style = document.createElement('style');
style.textContent = tokenColours;
document.head.append(style);

/** Longer texts stay plain: highlighting is quick, but not free. */
const MAX_TEXT = 256 * 1024;

/**
 * `code` highlighted as `language` (one of the names above; anything else gives
 * null): highlight.js's HTML, its text escaped and its tokens in
 * `<span class="hljs-…">`, nothing else. Line by line: each line closes the
 * spans still open at its end and the next line reopens them, so a line of
 * the result stands alone (a diff shows the lines of a file apart) while a
 * string or comment running over several lines keeps its colour.
 */
export function highlight(code, language) {
  if (!Object.hasOwn(grammars, language) || code.length > MAX_TEXT) return null;
  const key = `${language}\0${code}`;
  const known = cache.get(key);
  if (known !== undefined) return known;
  // A line's \r is no part of it (a diff's rows leave it out too).
  const text = code.replace(/\r(?=\n|$)/g, '');
  const html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
  const lines = [];
  const open = [];
  let line = '';
  // The HTML holds only span tags and escaped text (no '<' of its own).
  for (const [token] of html.matchAll(/<span[^>]*>|<\/span>|\n|[^<\n]+/g)) {
    if (token === '\n') {
      lines.push(line + '</span>'.repeat(open.length));
      line = open.join('');
      continue;
    }
    if (token === '</span>') open.pop();
    else if (token.startsWith('<span')) open.push(token);
    line += token;
  }
  lines.push(line + '</span>'.repeat(open.length));
  const result = lines.join('\n');
  // Bounded by size as well: a diff's whole files are no answer's block.
  if (code.length <= CACHE_TEXT_MAX) {
    cache.set(key, result);
    cachedChars += key.length + result.length;
    while (cache.size > CACHE_SIZE || cachedChars > CACHE_CHARS) {
      const [oldest, html] = cache.entries().next().value;
      cache.delete(oldest);
      cachedChars -= oldest.length + html.length;
    }
  }
  return result;
}

/**
 * What was highlighted last: a streamed answer is rendered anew on each
 * piece, and its finished blocks come back highlighted at once from here.
 */
const cache = new Map();
const CACHE_SIZE = 200;
/** Texts longer than this are highlighted each time, not kept. */
const CACHE_TEXT_MAX = 32 * 1024;
/** What the cache may hold in all, keys and HTML, in characters. */
const CACHE_CHARS = 4 * 1024 * 1024;
let cachedChars = 0;
/** A block not highlighted yet waits this long: while an answer streams, its node is replaced first. */
const SETTLE_MS = 150;

/**
 * Highlights the code blocks under `root` (rendered markdown) whose box names
 * a grammar (`data-grammar`, written by app/src/markdown.rs): each block's
 * text is replaced by the same text in tokens, marked `data-highlighted`.
 */
export function highlightBlocks(root) {
  let later = false;
  for (const code of root.querySelectorAll('.code-block[data-grammar] > pre > code:not([data-highlighted])')) {
    const language = code.closest('.code-block').dataset.grammar;
    const known = cache.get(`${language}\0${code.textContent}`);
    if (known === undefined) later = true;
    else show(code, language, known);
  }
  // The rest once the answer holds still: a node replaced meanwhile is left alone.
  if (later) {
    setTimeout(() => {
      if (!root.isConnected) return;
      for (const code of root.querySelectorAll('.code-block[data-grammar] > pre > code:not([data-highlighted])')) {
        const language = code.closest('.code-block').dataset.grammar;
        const html = highlight(code.textContent, language);
        if (html !== null) show(code, language, html);
      }
    }, SETTLE_MS);
  }
}

function show(code, language, html) {
  code.innerHTML = html;
  code.dataset.highlighted = language;
}
