// Drives a `mksim report --explore` page in headless Chromium as a user would (tests/report_explorer_test.cpp):
// waits for the page to render, reads the explorer's state, drags the slider of one parameter to a value, picks
// another P, and prints the explorer's state after each step as one JSON line.
// Usage: node report_explorer_drive.js PAGE.html PARAM VALUE P   (NODE_PATH: the playwright-core install)
'use strict';
const { chromium } = require('playwright-core');

async function main() {
  const [page_path, param, value, P] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.MKSIM_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + page_path);
    await page.waitForSelector('body[data-mksim-render]:not([data-mksim-render="pending"])', { timeout: 60000 });
    const render = await page.getAttribute('body', 'data-mksim-render');
    const state = () => page.evaluate(() => JSON.parse(JSON.stringify(window.mksimExplorer['explorer-1'])));
    const updates = () => page.getAttribute('#explorer-1', 'data-mksim-updates');
    const out = { render, errors, before: await state() };
    // drag the slider: set its value and fire the input event a moving slider fires
    let n = Number(await updates());
    await page.$eval(`#explorer-1 input[type=range][data-param="${param}"]`, (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event('input', { bubbles: true }));
    }, value);
    await page.waitForFunction((k) => Number(document.getElementById('explorer-1').getAttribute('data-mksim-updates')) > k, n);
    out.moved = await state();
    out.field = await page.inputValue(`#explorer-1 input[type=number][data-param="${param}"]`);
    out.readout = await page.textContent('#explorer-1 [data-readout="T"]');
    // choose another P in the select
    n = Number(await updates());
    await page.selectOption('#explorer-1 select[data-param="P"]', String(P));
    await page.waitForFunction((k) => Number(document.getElementById('explorer-1').getAttribute('data-mksim-updates')) > k, n);
    out.P_chosen = await state();
    // what the curve's view holds now (the drawn data, not only the state)
    out.drawn = await page.evaluate(() => {
      const ex = window.mksimExplorers['explorer-1'];
      return window.mksimViews[ex.curve].data('model').map((d) => ({ P: d.P, time_s: d.time_s }));
    });
    console.log(JSON.stringify(out));
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
