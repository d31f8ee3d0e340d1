// A scripted OpenAI-compatible model for end-to-end tests: POST
// /v1/chat/completions answered with server-sent events in the real wire format
// (tool-call arguments split across chunks, a closing `data: [DONE]`).
import { createServer } from 'node:http';

export const text = (...pieces) => ({ text: pieces });
export const call = (id, name, args) => ({ calls: [[id, name, args]] });
/** A text reply whose pieces arrive `gapMs` apart: a turn that streams for a while. */
export const slowText = (gapMs, ...pieces) => ({ text: pieces, gap: gapMs });

/** Starts the fake; `script(...replies)` queues what the next requests get. */
export async function startFakeModel() {
  const queue = [];
  const requests = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      requests.push(JSON.parse(body));
      const reply = queue.shift();
      if (!reply) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'the fake model has no reply scripted' } }));
        return;
      }
      if (reply.gap) {
        streamSlowly(res, chunks(reply), reply.gap);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of chunks(reply)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    script: (...replies) => { queue.length = 0; queue.push(...replies); },
    requests,
    /** The `messages` of the latest request. */
    lastMessages: () => requests.at(-1)?.messages ?? [],
    stop: () => new Promise((resolve) => server.close(resolve)),
  };
}

function delta(delta, finish = null) {
  return { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: 'fake',
    choices: [{ index: 0, delta, finish_reason: finish }] };
}

function chunks(reply) {
  if (reply.text) {
    return [...reply.text.map((content) => delta({ content })), delta({}, 'stop')];
  }
  const out = [delta({ role: 'assistant', content: null })];
  reply.calls.forEach(([id, name, args], index) => {
    const json = JSON.stringify(args);
    out.push(delta({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] }));
    const third = Math.ceil(json.length / 3);
    for (let at = 0; at < json.length; at += third) {
      out.push(delta({ tool_calls: [{ index, function: { arguments: json.slice(at, at + third) } }] }));
    }
  });
  out.push(delta({}, 'tool_calls'));
  return out;
}

/** Writes one chunk every `gap` ms; stops quietly when the hub went away. */
function streamSlowly(res, list, gap) {
  res.on('error', () => {});
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let at = 0;
  const next = () => {
    if (res.destroyed) return;
    if (at === list.length) {
      res.end('data: [DONE]\n\n');
      return;
    }
    res.write(`data: ${JSON.stringify(list[at++])}\n\n`);
    setTimeout(next, gap);
  };
  next();
}
