// What a test file starts before its tests and stops after them.
import { before, after } from 'node:test';
import { startHub, launchBrowser } from './hub.mjs';
import { startFakeModel } from './fake-model.mjs';

/** A hub (started with `args`) and a browser; the fields are there once the tests run. */
export function hubAndBrowser(args = []) {
  const setup = { hub: null, browser: null };
  before(async () => {
    setup.hub = await startHub(args);
    setup.browser = await launchBrowser();
  });
  after(async () => {
    await setup.browser?.close();
    await setup.hub?.stop();
  });
  return setup;
}

/**
 * For a test file: a scripted model, a hub whose built-in agent talks to it, and
 * a browser, started before its tests and stopped after them. The fields are
 * there once the tests run.
 */
export function hubWithModel() {
  const setup = { model: null, hub: null, browser: null };
  before(async () => {
    setup.model = await startFakeModel();
    setup.hub = await startHub(['--model-url', setup.model.baseUrl, '--model', 'fake-model']);
    setup.browser = await launchBrowser();
  });
  after(async () => {
    await setup.browser?.close();
    await setup.hub?.stop();
    await setup.model?.stop();
  });
  return setup;
}
