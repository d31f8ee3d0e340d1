// What a test file starts before its tests and stops after them. Each export
// registers node:test `before`/`after` hooks and returns a `setup` object whose
// fields are there once the tests run; `after` closes the browser, then stops
// the hub, then the model (whichever of them were started).
import { before, after } from 'node:test';
import { startHub, launchBrowser } from './hub.mjs';
import { startFakeModel } from './fake-model.mjs';

function started(setup, start) {
  before(() => start(setup));
  after(async () => {
    await setup.browser?.close();
    await setup.hub?.stop();
    await setup.model?.stop();
  });
  return setup;
}

const modelArgs = (model) => ['--model-url', model.baseUrl, '--model', 'fake-model'];

/** A hub (`startHub(args, env, options)`) and a browser. */
export function hubAndBrowser(args = [], env = {}, options = {}) {
  return started({ hub: null, browser: null }, async (setup) => {
    setup.hub = await startHub(args, env, options);
    setup.browser = await launchBrowser();
  });
}

/** A scripted model, a hub (with `extraArgs`) whose built-in agent talks to it, and a browser. */
export function hubWithModel(extraArgs = []) {
  return started({ model: null, hub: null, browser: null }, async (setup) => {
    setup.model = await startFakeModel();
    setup.hub = await startHub([...modelArgs(setup.model), ...extraArgs]);
    setup.browser = await launchBrowser();
  });
}

/** A scripted model and a browser, for a file whose tests start their own hubs. */
export function modelAndBrowser() {
  return started({ model: null, browser: null }, async (setup) => {
    setup.model = await startFakeModel();
    setup.browser = await launchBrowser();
  });
}

/**
 * A scripted model (`await startModel()`), an ACP agent on it (`agentOf(model)`)
 * and a hub running that agent (its `args`, then `extraArgs`, and its `env`).
 * No browser: a test that needs one sets `setup.browser`, and it is closed after.
 */
export function hubWithAgent(startModel, agentOf, extraArgs = []) {
  return started({ model: null, agent: null, hub: null, browser: null }, async (setup) => {
    setup.model = await startModel();
    setup.agent = agentOf(setup.model);
    setup.hub = await startHub([...setup.agent.args, ...extraArgs], setup.agent.env);
  });
}
