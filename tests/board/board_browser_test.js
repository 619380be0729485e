// quern-board's pages in a real browser (Debian's chromium-headless-shell),
// driven over the DevTools protocol on a pipe with node's own modules.
//
//   node board_browser_test.js html|serve|flagship --board PATH --helper PATH
//        --chromium NAME_OR_PATH --out DIR [--example PATH]
//
// html      a log directory with several runs, a histogram, text, images, a
//           damaged file and out-of-order steps: the file page
// serve     the same log directory served on 127.0.0.1, events appended
//           while the page is open
// flagship  the report of make demo's example (csv_pipeline)
//
// Every check that fails is printed; the exit status is 1 if any failed.
// A browser that cannot be found is a failure, never a skip.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const net = require('net');
const { spawn, spawnSync } = require('child_process');

const args = { mode: process.argv[2] };
for (let i = 3; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] =
  process.argv[i + 1];
for (const need of ['board', 'helper', 'chromium', 'out'])
  if (!args[need]) {
    console.error('usage: node board_browser_test.js html|serve|flagship --board PATH ' +
      '--helper PATH --chromium PATH --out DIR [--example PATH]');
    process.exit(2);
  }

let failures = 0;
function check(ok, what, detail) {
  if (ok) {
    console.log('ok    ' + what);
  } else {
    failures++;
    console.log('FAIL  ' + what + (detail !== undefined ? '\n      ' +
      String(typeof detail === 'string' ? detail : JSON.stringify(detail)).slice(0, 2000) : ''));
  }
  return ok;
}

// The whole test is bounded: nothing waits forever.
const watchdog = setTimeout(() => {
  console.log('FAIL  the test did not finish within 240 s');
  process.exit(1);
}, 240000);

function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 120000, maxBuffer: 1 << 30,
    ...opts });
  if (r.error) throw new Error(cmd + ': ' + r.error.message);
  return { status: r.status, out: r.stdout, err: r.stderr };
}

function findExecutable(name) {
  if (name.includes('/')) return fs.existsSync(name) ? name : null;
  for (const dir of (process.env.PATH || '').split(':')) {
    const p = path.join(dir || '.', name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch (e) { /* next */ }
  }
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// -- the browser, over --remote-debugging-pipe (fd 3 in, fd 4 out) --

class Browser {
  constructor(chromium, isolate) {
    this.userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quern-chromium-'));
    const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--remote-debugging-pipe',
      '--user-data-dir=' + this.userDir, '--window-size=1300,900', '--hide-scrollbars',
      '--no-first-run', '--no-default-browser-check', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-extensions',
      '--mute-audio', 'about:blank'];
    // Without a network: the page must not need one (root only: unshare -n).
    const cmd = isolate ? 'unshare' : chromium;
    const argv = isolate ? ['-n', chromium, ...flags] : flags;
    this.proc = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.proc.stderr.on('data', (d) => { this.stderr += d; });
    this.exited = new Promise((r) => this.proc.on('exit', r));
    this.nextId = 1;
    this.pending = new Map();
    this.events = [];
    this.waiters = [];
    this.buf = Buffer.alloc(0);
    this.proc.stdio[4].on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      let i;
      while ((i = this.buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(this.buf.subarray(0, i).toString('utf8'));
        this.buf = this.buf.subarray(i + 1);
        if (msg.id && this.pending.has(msg.id)) {
          const p = this.pending.get(msg.id);
          this.pending.delete(msg.id);
          if (msg.error) p.reject(new Error(p.method + ': ' + msg.error.message));
          else p.resolve(msg.result);
        } else if (msg.method) {
          this.events.push(msg);
        }
      }
    });
  }

  send(method, params = {}, sessionId = undefined, timeoutMs = 60000) {
    const id = this.nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(method + ': no answer within ' + timeoutMs + ' ms'));
      }, timeoutMs);
      this.pending.set(id, { method, resolve: (v) => { clearTimeout(t); resolve(v); },
        reject: (e) => { clearTimeout(t); reject(e); } });
      this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
    });
  }

  async open(url) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId);
    for (const domain of ['Runtime', 'Log', 'Network', 'Page'])
      await page.send(domain + '.enable');
    await page.send('Emulation.setDeviceMetricsOverride',
      { width: 1300, height: 900, deviceScaleFactor: 1, mobile: false });
    await page.send('Page.navigate', { url });
    await page.waitFor('document.body && document.body.dataset.ready === "1"', 90000);
    return page;
  }

  async close() {
    try {
      await this.send('Browser.close', {}, undefined, 5000);
    } catch (e) { /* killed below */ }
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(t);
    fs.rmSync(this.userDir, { recursive: true, force: true });
  }
}

class Page {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
  }

  send(method, params = {}) {
    return this.browser.send(method, params, this.sessionId);
  }

  async eval(expression) {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true,
      awaitPromise: true });
    if (r.exceptionDetails)
      throw new Error('page: ' + expression.slice(0, 80) + ': ' +
        JSON.stringify(r.exceptionDetails).slice(0, 500));
    return r.result.value;
  }

  async waitFor(expression, timeoutMs) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      let v = false;
      try {
        v = await this.eval(expression);
      } catch (e) { /* not there yet */ }
      if (v) return v;
      const thrown = this.problems().filter((p) => p.startsWith('exception'));
      if (thrown.length) throw new Error('the page threw while waiting for ' + expression +
        ': ' + thrown.join('; '));
      if (Date.now() > end) throw new Error('timed out waiting for ' + expression);
      await sleep(100);
    }
  }

  events() {
    return this.browser.events.filter((e) => e.sessionId === this.sessionId);
  }

  // Console errors, uncaught exceptions, and browser log errors (CSP
  // violations, failed loads).
  problems() {
    const out = [];
    for (const e of this.events()) {
      const p = e.params;
      if (e.method === 'Runtime.exceptionThrown')
        out.push('exception: ' + (p.exceptionDetails.exception ?
          p.exceptionDetails.exception.description : p.exceptionDetails.text));
      else if (e.method === 'Runtime.consoleAPICalled' && (p.type === 'error' ||
          p.type === 'assert'))
        out.push('console.' + p.type + ': ' + p.args.map((a) => a.value ?? a.description)
          .join(' '));
      else if (e.method === 'Log.entryAdded' && p.entry.level === 'error')
        out.push('log: ' + p.entry.text + ' ' + (p.entry.url || ''));
    }
    return out;
  }

  requests() {
    return this.events().filter((e) => e.method === 'Network.requestWillBeSent')
      .map((e) => e.params.request.url);
  }

  async screenshot(file) {
    const r = await this.send('Page.captureScreenshot', { format: 'png' });
    fs.writeFileSync(file, Buffer.from(r.data, 'base64'));
  }
}

// -- what quern-board export says --

function parseCsv(text) {
  // Fields may be quoted ("" for a quote); lines end with \n.
  const rows = [];
  let row = [], field = '', q = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (q) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') q = false;
      else field += c;
    } else if (c === '"') q = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\n') {
      row.push(field); rows.push(row); row = []; field = '';
    } else field += c;
  }
  return rows.slice(1);
}

function seriesOf(csvText) {
  const series = new Map();
  for (const [run, tag, step, , value] of parseCsv(csvText)) {
    const key = run + '\u0000' + tag;
    if (!series.has(key)) series.set(key, { run, tag, steps: [], values: [] });
    series.get(key).steps.push(Number(step));
    // The nine digits name one float32 exactly.
    series.get(key).values.push(value === 'nan' ? NaN : value === 'inf' ? Infinity :
      value === '-inf' ? -Infinity : Math.fround(Number(value)));
  }
  return series;
}

// TensorBoard's classicSmoothing, written out again from its description.
function tbSmooth(ys, w) {
  const constant = ys.every((y) => y === ys[0]);
  let last = 0, n = 0;
  return ys.map((y) => {
    if (constant || !Number.isFinite(y)) return y;
    last = last * w + (1 - w) * y;
    n++;
    return last / (w === 1 ? 1 : 1 - Math.pow(w, n));
  });
}

// -- the checks every page gets --

async function checkSmoothingReference(page) {
  // TensorBoard's own test vectors (data_transformer_test.ts).
  const near = (a, b) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-12);
  const s = (ys, w) => page.eval('quern.smooth(' + JSON.stringify(ys) + ',' + w + ')');
  check(near(await s([1, 0.5, 0], 0.6),
    [1, 0.6875, ((0.5 * 0.4 + 0.4 * 0.6) * 0.6 + 0) / (1 - 0.6 ** 3)]),
  'smoothing [1, 0.5, 0] at 0.6 is TensorBoard\'s', await s([1, 0.5, 0], 0.6));
  check(near(await s([0, 0.5, 1], 0.6), [0, 0.3125, (0.4 + 0.5 * 0.4 * 0.6) / (1 - 0.6 ** 3)]),
    'smoothing [0, 0.5, 1] at 0.6 is TensorBoard\'s', await s([0, 0.5, 1], 0.6));
  check(near(await s([0.3, 0.3, 0.3], 0.1), [0.3, 0.3, 0.3]),
    'a constant series is not smoothed');
  check(near(await s([1, 0.5, 0], 1), [0, 0, 0]) && near(await s([1, 0.5, 0], 2), [0, 0, 0]),
    'a weight of 1 (or more) flattens to 0');
  const special = await page.eval('JSON.stringify(quern.smooth([-Infinity, 1, NaN, Infinity, ' +
    '0.5], 0.6).map(String))');
  check(special === JSON.stringify(['-Infinity', '1', 'NaN', 'Infinity', '0.6875']),
    'non-finite points pass through uncounted', special);
}

// TensorBoard's computeDataSeriesExtent with ignoreYOutliers, written out
// again: sort, R-7 quantiles at 5 % and 95 %, keep the values between them.
function tbExtent(values) {
  const ys = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (ys.length === 0) return null;
  if (ys.length <= 2) return [ys[0], ys[ys.length - 1]];
  const q = (p) => {
    const h = (ys.length - 1) * p, lo = Math.floor(h);
    return lo + 1 < ys.length ? ys[lo] + (h - lo) * (ys[lo + 1] - ys[lo]) : ys[lo];
  };
  const a = q(0.05), b = q(0.95);
  const kept = ys.filter((v) => a <= v && v <= b);
  return [kept[0], kept[kept.length - 1]];
}

async function checkOutlierRule(page) {
  // Random series, many with repeated values, against the rule above.
  let seed = 1;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const cases = [];
  for (let t = 0; t < 300; t++) {
    const n = 1 + Math.floor(rnd() * 400);
    cases.push(Array.from({ length: n }, (_, i) => t % 3 === 0 ? rnd() : t % 3 === 1 ?
      Math.floor(rnd() * 4) : (i % 5 === 0 ? 1000 * rnd() : rnd())));
  }
  const got = await page.eval('JSON.stringify(' + JSON.stringify(cases) +
    '.map((ys) => quern.yExtent(ys)))');
  const want = JSON.stringify(cases.map(tbExtent));
  check(got === want, 'ignore outliers: the y range of 300 random series is TensorBoard\'s ' +
    '(5th-95th percentile, R-7)');
}

function checkNoProblems(page, allowed, label) {
  const problems = page.problems();
  check(problems.length === 0, label + ': no console error, exception or blocked load',
    problems);
  const bad = page.requests().filter((u) => !allowed(u));
  check(bad.length === 0, label + ': no request leaves the page', bad);
}

// Points per series, run order, CSV bytes and run colours against export.
async function checkAgainstExport(page, board, logdir, label, opts = {}) {
  const exp = run(board, ['export', logdir]);
  const series = seriesOf(exp.out);
  const st = await page.eval('quern.selftest()');
  const exportRuns = [...new Set([...series.values()].map((s) => s.run))];
  const pageRuns = st.runs.map((r) => r.name).filter((r) => exportRuns.includes(r));
  check(JSON.stringify(pageRuns) === JSON.stringify(exportRuns),
    label + ': runs in the same order as export', { page: pageRuns, export: exportRuns });
  let counted = 0, mismatched = [];
  for (const chart of st.charts)
    for (const s of chart.series) {
      const e = series.get(s.run + '\u0000' + chart.tag);
      counted++;
      if (!e || e.steps.length !== s.points)
        mismatched.push({ run: s.run, tag: chart.tag, page: s.points, export: e && e.steps.length });
    }
  check(counted === series.size && mismatched.length === 0,
    label + ': every series has export\'s number of points (' + series.size + ' series)',
    { counted, mismatched });
  // Each series' CSV download, byte for byte.
  const csvWrong = [];
  for (const s of series.values()) {
    const want = run(board, ['export', logdir, '--run', s.run, '--tag', s.tag]).out;
    const got = await page.eval('quern.csv(' + JSON.stringify(s.run) + ',' +
      JSON.stringify(s.tag) + ')');
    if (got !== want) csvWrong.push({ run: s.run, tag: s.tag, got: (got || '').slice(0, 300),
      want: want.slice(0, 300) });
  }
  check(csvWrong.length === 0, label + ': each series\' CSV equals quern-board export --run R ' +
    '--tag T', csvWrong);
  // Smoothed values at chosen steps: TensorBoard's formula on export's values.
  const smoothWrong = [];
  for (const s of series.values()) {
    const n = s.steps.length;
    const picks = [...new Set([0, 1, Math.floor(n / 2), n - 2, n - 1].filter((i) => i >= 0 &&
      i < n))];
    const steps = picks.map((i) => s.steps[i]);
    const want = tbSmooth(s.values, 0.6);
    const got = await page.eval('JSON.stringify(quern.smoothedAt(' + JSON.stringify(s.run) +
      ',' + JSON.stringify(s.tag) + ',' + JSON.stringify(steps) + ').map(String))');
    const wantAt = steps.map((st) => String(want[s.steps.indexOf(st)]));
    if (got !== JSON.stringify(wantAt)) smoothWrong.push({ run: s.run, tag: s.tag, got,
      want: wantAt });
  }
  check(smoothWrong.length === 0, label + ': smoothed values (0.6) at chosen steps equal ' +
    'TensorBoard\'s smoothing of export\'s values', smoothWrong);
  // Each run's colour drawn on each chart it is in.
  const noColour = [];
  for (const chart of st.charts) {
    if (!chart.shown) continue;
    for (const s of chart.series) {
      const finite = (series.get(s.run + '\u0000' + chart.tag).values.some(Number.isFinite));
      if (finite && !(chart.pixels[s.run] > 0))
        noColour.push({ tag: chart.tag, run: s.run, pixels: chart.pixels[s.run] });
    }
  }
  check(noColour.length === 0, label + ': each run\'s colour is on its charts', noColour);
  if (opts.exportStatus !== undefined)
    check(exp.status === opts.exportStatus, label + ': export exits ' + opts.exportStatus,
      exp.err);
  return { st, series, exp };
}

function chromiumPath() {
  const p = findExecutable(args.chromium);
  check(p !== null, 'the browser ' + args.chromium + ' is installed (apt-get install ' +
    'chromium-headless-shell; tools/install-deps.sh installs it)');
  return p;
}

function canIsolate() {
  return process.getuid && process.getuid() === 0 &&
    spawnSync('unshare', ['-n', 'true']).status === 0;
}

// -- html: the file page --

async function testHtml() {
  const out = args.out;
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const logdir = path.join(out, 'logs');
  const made = run(args.helper, ['full', logdir]);
  if (!check(made.status === 0, 'the test log directory is written', made.err)) return;
  const page1 = path.join(out, 'report.html');
  const page2 = path.join(out, 'report-again.html');
  const h1 = run(args.board, ['html', logdir, '-o', page1]);
  const h2 = run(args.board, ['html', logdir, '-o', page2]);
  check(h1.status === 2, 'html exits 2 for a damaged file (after writing the page)', h1);
  check(/damaged\/events\.out\.tfevents\.\d+\.testhost: DataLoss: truncated record at \d+/
    .test(h1.err), 'html names the damaged file on stderr', h1.err);
  const bytes = fs.readFileSync(page1);
  check(bytes.equals(fs.readFileSync(page2)), 'the same log directory gives the same bytes');
  const text = bytes.toString('utf8');
  // A reference names a host (marked's code that makes "www.x" a link,
  // href="http://"+text, names none).
  check(!/(src|href)\s*=\s*["']?\s*(https?:\/\/|\/\/)[^"'\s]/i.test(text) &&
    !/url\(\s*["']?https?:/i.test(text), 'the page refers to nothing outside itself');
  check(text.includes('Content-Security-Policy') && text.includes("default-src 'none'"),
    'the page forbids loads from anywhere else');

  const chromium = chromiumPath();
  if (!chromium) return;
  const isolate = canIsolate();
  console.log('      (browser ' + (isolate ? 'without network: unshare -n' :
    'with the network: not root') + ')');
  const browser = new Browser(chromium, isolate);
  try {
    const url = 'file://' + path.resolve(page1);
    const page = await browser.open(url);
    const { st } = await checkAgainstExport(page, args.board, logdir, 'html',
      { exportStatus: 2 });
    checkNoProblems(page, (u) => u === url || u.startsWith('data:') || u.startsWith('blob:'),
      'html');
    await checkSmoothingReference(page);
    await checkOutlierRule(page);
    check(JSON.stringify(st.runs.map((r) => r.name)) ===
      JSON.stringify(['train', 'b/c', 'eval', 'damaged']),
    'runs are listed by start time', st.runs.map((r) => r.name));
    const inspect = run(args.board, ['inspect', logdir]);
    const damage = (inspect.out.match(/DAMAGED: (DataLoss: truncated record at \d+)/) || [])[1];
    const damagedRun = st.runs.find((r) => r.name === 'damaged');
    check(damage && damagedRun.problems.some((p) => p.includes('DAMAGED: ' + damage)),
      'the damaged file is shown as inspect reports it', { inspect: damage,
        page: damagedRun.problems });
    const ooo = (inspect.out.match(/out-of-order steps (\d+)/) || [])[1];
    const evalRun = st.runs.find((r) => r.name === 'eval');
    check(ooo && evalRun.problems.includes('loss: out-of-order steps ' + ooo),
      'out-of-order steps are shown as inspect reports them', evalRun.problems);
    const hist = st.histograms.find((h) => h.tag === 'weights/dense');
    check(hist && hist.shown && hist.charts === 1, 'the histogram is drawn (distribution ' +
      'over steps)', st.histograms);
    const textCard = st.texts.find((t) => t.tag === 'notes');
    check(textCard && textCard.shown && textCard.rows === 2, 'both texts are shown', st.texts);
    const imgCard = st.images.find((t) => t.tag === 'samples/gradient');
    check(imgCard && imgCard.shown && imgCard.images === 2, 'both images are shown', st.images);
    const imgsLoaded = await page.eval('[...document.images].every((i) => i.complete && ' +
      'i.naturalWidth > 0)');
    check(imgsLoaded, 'the images decode');
    const loss = st.charts.find((c) => c.tag === 'loss');
    check(loss && loss.yExtent && loss.yExtent[1] < 1000,
      'ignore outliers (on by default) keeps the 1000 spike out of the y range',
      loss && loss.yExtent);
    check(st.smoothing === 0.6 && st.x === 'step' && st.outliers === true,
      'TensorBoard\'s defaults: smoothing 0.6, x by step, outliers ignored', st);
    // The run table's point counts, as text in the page.
    const tableCounts = await page.eval('Object.fromEntries([...document.querySelectorAll(' +
      '"#runs tr[data-run]")].map((r) => [r.dataset.run, Number(r.cells[4].textContent)]))');
    const exportCounts = {};
    for (const row of parseCsv(run(args.board, ['export', logdir]).out))
      exportCounts[row[0]] = (exportCounts[row[0]] || 0) + 1;
    check(JSON.stringify(tableCounts) === JSON.stringify(exportCounts),
      'the run table shows export\'s number of points per run', [tableCounts, exportCounts]);

    // A CSV button really downloads export's bytes.
    const downloads = path.join(out, 'downloads');
    fs.mkdirSync(downloads, { recursive: true });
    await browser.send('Browser.setDownloadBehavior', { behavior: 'allow',
      downloadPath: downloads });
    await page.eval('[...document.querySelectorAll(".card.scalars[data-tag=\\"loss\\"] ' +
      '.links button")].find((b) => b.textContent === "b/c.csv").click()');
    const file = path.join(downloads, 'run-b_c-tag-loss.csv');
    const end = Date.now() + 20000;
    while (!fs.existsSync(file) && Date.now() < end) await sleep(100);
    check(fs.existsSync(file) && fs.readFileSync(file, 'utf8') === run(args.board,
      ['export', logdir, '--run', 'b/c', '--tag', 'loss']).out,
    'the b/c.csv button downloads what export --run b/c --tag loss prints', fs.readdirSync(
      downloads));
    await page.eval('[...document.querySelectorAll(".card.scalars[data-tag=\\"loss\\"] ' +
      '.links button")].find((b) => b.textContent === "b/c.json")?.click()');
    const jfile = path.join(downloads, 'run-b_c-tag-loss.json');
    const jend = Date.now() + 20000;
    while (!fs.existsSync(jfile) && Date.now() < jend) await sleep(100);
    const jwant = run(args.board, ['export', logdir, '--run', 'b/c', '--tag', 'loss',
      '--format', 'json']).out;
    check(fs.existsSync(jfile) && fs.readFileSync(jfile, 'utf8') === jwant,
      'the b/c.json button downloads what export --run b/c --tag loss --format json prints',
      fs.existsSync(jfile) ? fs.readFileSync(jfile, 'utf8').slice(0, 300) : fs.readdirSync(
        downloads));
    const jsonWrong = [];
    for (const { run: run0, tag: tag0 } of seriesOf(run(args.board, ['export', logdir]).out)
      .values()) {
      const want = run(args.board, ['export', logdir, '--run', run0, '--tag', tag0, '--format',
        'json']).out;
      const got = await page.eval('quern.json && quern.json(' + JSON.stringify(run0) + ',' +
        JSON.stringify(tag0) + ')');
      if (got !== want) jsonWrong.push({ run: run0, tag: tag0, got: (got || '').slice(0, 300),
        want: want.slice(0, 300) });
    }
    check(jsonWrong.length === 0, 'each series\' JSON equals export --format json', jsonWrong);

    // The hover read-out: every run's point nearest to the pointer.
    const box = await page.eval('(() => { const r = document.querySelector(' +
      '".card.scalars[data-tag=\\"loss\\"] .plot").getBoundingClientRect(); ' +
      'return [r.left, r.top, r.width, r.height]; })()');
    await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: box[0] + box[2] / 2,
      y: box[1] + box[3] / 2 });
    const readout = await page.waitFor('(() => { const rows = [...document.querySelectorAll(' +
      '".card.scalars[data-tag=\\"loss\\"] .readout tr")].slice(1).map((r) => ' +
      'r.cells[0].textContent); return rows.length ? rows : null; })()', 10000);
    check(JSON.stringify(readout) === JSON.stringify(['train', 'b/c', 'eval', 'damaged']),
      'the hover read-out has every run\'s value', readout);
    await page.screenshot(path.join(out, 'report.png'));

    // Interactions: filters, smoothing and axes change what is drawn.
    await page.eval('(() => { const e = document.getElementById("tag-re"); e.value = ' +
      '"^loss$"; e.dispatchEvent(new Event("input")); })()');
    let s2 = await page.eval('quern.selftest()');
    check(s2.charts.filter((c) => c.shown).map((c) => c.tag).join() === 'loss' &&
      !s2.histograms.some((h) => h.shown), 'the tag filter leaves only loss',
    s2.charts.map((c) => [c.tag, c.shown]));
    const hashOf = () => page.eval('Object.fromEntries([...new URLSearchParams(' +
      'location.hash.slice(1))].map(([k, v], i) => [k === "hide" ? k + i : k, v]))');
    let hash = await hashOf();
    check(hash.tag === '^loss$', 'the address follows a typed tag filter', hash);
    await page.eval('(() => { const e = document.getElementById("run-re"); e.value = ' +
      '"^(train|eval)$"; e.dispatchEvent(new Event("input")); })()');
    s2 = await page.eval('quern.selftest()');
    const lossRuns = s2.charts.find((c) => c.tag === 'loss').series.map((s) => s.run);
    check(JSON.stringify(lossRuns) === '["train","eval"]', 'the run filter leaves train and eval',
      lossRuns);
    await page.eval('(() => { const e = document.getElementById("run-re"); e.value = "(";' +
      'e.dispatchEvent(new Event("input")); })()');
    const err = await page.eval('document.getElementById("filter-error").textContent');
    check(err.startsWith('runs: '), 'a bad regular expression is named, not thrown', err);
    hash = await hashOf();
    const invalid = await page.eval('document.getElementById("run-re").classList.contains(' +
      '"invalid")');
    check(hash.run === '(' && invalid, 'a bad typed expression is marked invalid and kept in ' +
      'the address', [hash, invalid]);
    await page.eval('(() => { const e = document.getElementById("smoothing-n"); e.value = ' +
      '"0.9"; e.dispatchEvent(new Event("change")); })()');
    const series = seriesOf(run(args.board, ['export', logdir, '--run', 'train', '--tag',
      'loss']).out).get('train\u0000loss');
    const got = await page.eval('JSON.stringify(quern.smoothedAt("train", "loss", [0, 150, 300])' +
      '.map(String))');
    const want = tbSmooth(series.values, 0.9);
    check(got === JSON.stringify([0, 150, 300].map((x) => String(want[series.steps.indexOf(x)]))),
      'smoothing 0.9 set in the page is TensorBoard\'s', got);
    for (const x of ['relative', 'wall'])
      await page.eval('(() => { const e = document.getElementById("x-axis"); e.value = "' + x +
        '"; e.dispatchEvent(new Event("change")); })()');
    await page.eval('(() => { const e = document.getElementById("log-y"); e.checked = true;' +
      'e.dispatchEvent(new Event("change")); })()');
    await page.eval('(() => { const e = document.getElementById("outliers"); e.checked = ' +
      'false; e.dispatchEvent(new Event("change")); })()');
    await page.eval('(() => { const e = document.getElementById("run-re"); e.value = "";' +
      'e.dispatchEvent(new Event("input")); })()');
    s2 = await page.eval('quern.selftest()');
    check(s2.x === 'wall' && s2.log === true && s2.smoothing === 0.9 && s2.outliers === false,
      'x axis, log y and outliers switch', s2);
    await page.eval('(() => { const e = document.querySelector("#runs tr[data-run=\\"eval\\"] ' +
      'input"); e.checked = false; e.dispatchEvent(new Event("change")); })()');
    hash = await hashOf();
    check(JSON.stringify(hash) === JSON.stringify({ smoothing: '0.9', x: 'wall', log: '1',
      outliers: '0', tag: '^loss$', hide5: 'eval' }), 'the address follows every change of ' +
      'the view (smoothing, x axis, log y, outliers, filters, hidden runs)', hash);
    // Wall-time ticks are clock times: HH:MM:SS over train's minute.
    const ticks = (p, tag) => p.eval('[...document.querySelectorAll(".card.scalars[data-tag=' +
      '\\"' + tag + '\\"] .dygraph-axis-label-x")].map((e) => e.textContent)');
    const wallTicks = await ticks(page, 'loss');
    check(wallTicks.length > 1 && wallTicks.every((t) => /^\d\d:\d\d:\d\d$/.test(t)),
      'wall-time ticks over a minute read HH:MM:SS', wallTicks);
    // The whole view comes back from the address.
    const viewUrl = await page.eval('location.href');
    const restored = await browser.open(viewUrl);
    const rs = await restored.eval('quern.selftest()');
    const controls = await restored.eval('[document.getElementById("tag-re").value, ' +
      'document.getElementById("x-axis").value, document.querySelector("#runs ' +
      'tr[data-run=\\"eval\\"] input").checked]');
    check(rs.smoothing === 0.9 && rs.x === 'wall' && rs.log && !rs.outliers &&
      JSON.stringify(controls) === JSON.stringify(['^loss$', 'wall', false]) &&
      rs.charts.filter((c) => c.shown).map((c) => c.tag).join() === 'loss' &&
      rs.charts.find((c) => c.tag === 'loss').series.every((x) => x.run !== 'eval'),
    'the address (' + viewUrl.replace(/^.*#/, '#') + ') restores the view', [rs, controls]);
    // The main line is the smoothed one: its top is the smoothed spike.
    const lossChart = s2.charts.find((c) => c.tag === 'loss');
    const top = lossChart.series.find((x) => x.run === 'train').lastSmoothed;
    check(lossChart.yExtent && lossChart.yExtent[1] === top && top > 50,
      'with outliers shown the y range reaches the (smoothed) spike', [lossChart.yExtent, top]);
    checkNoProblems(page, (u) => u === url || u.startsWith('data:') || u.startsWith('blob:'),
      'html after the interactions');

    // Exact text for every kind of float value and double wall time.
    const numbers = path.join(out, 'numbers');
    const made2 = run(args.helper, ['numbers', numbers, '20000']);
    const h3 = run(args.board, ['html', numbers, '-o', path.join(out, 'numbers.html')]);
    check(made2.status === 0 && h3.status === 0, 'a page of random bit patterns is written',
      [made2.err, h3.err]);
    const nurl = 'file://' + path.resolve(path.join(out, 'numbers.html'));
    const npage = await browser.open(nurl);
    const ncsv = await npage.eval('quern.csv("numbers", "x")');
    const nwant = run(args.board, ['export', numbers]).out;
    const pageLines = (ncsv || '').split('\n');
    const firstDiff = nwant.split('\n').findIndex((l, i) => l !== pageLines[i]);
    check(ncsv === nwant, 'the CSV of 20,000 random floats and wall times equals export ' +
      '(%.9g values, shortest round-trip wall times)', firstDiff < 0 ? '' :
      { line: firstDiff, export: nwant.split('\n')[firstDiff],
        page: pageLines[firstDiff] });
    checkNoProblems(npage, (u) => u === nurl, 'random bit patterns');

    // TB-2: a run restored from its checkpoint at step 100: the page shows
    // each step once, as export prints it, and says what was purged.
    const restartDir = path.join(out, 'restarted');
    const made6 = run(args.helper, ['big', restartDir, '1', '1', '300']);
    const made7 = run(args.helper, ['restart', path.join(restartDir, 'run0',
      'events.out.tfevents.1700000000.testhost'), '100', '30']);
    const h6 = run(args.board, ['html', restartDir, '-o', path.join(out, 'restarted.html')]);
    check(made6.status === 0 && made7.status === 0 && h6.status === 0,
      'TB-2 html: a page of a restarted run is written', [made6.err, made7.err, h6.err]);
    const rurl = 'file://' + path.resolve(path.join(out, 'restarted.html'));
    const rpage = await browser.open(rurl);
    await checkAgainstExport(rpage, args.board, restartDir, 'TB-2 html of a restarted run');
    const rcsv = await rpage.eval('quern.csv("run0", "group/tag0")') || '';
    const rsteps = rcsv.trim().split('\n').slice(1).map((l) => Number(l.split(',')[2]));
    check(rsteps.length === 100 && rsteps.every((st, i) => st === i),
      'TB-2 html: the restarted run keeps steps 0..99 of its first life, once each',
      rsteps.slice(95, 105));
    const rtable = await rpage.eval('document.getElementById("runs").textContent');
    check(rtable.includes('purged 200 points: restarted at step 100'),
      'TB-2 html: the run table says "purged 200 points: restarted at step 100"',
      rtable.slice(0, 300));
    checkNoProblems(rpage, (u) => u === rurl, 'TB-2 html of a restarted run');

    // Many tags: cards are drawn as they come into view.
    const many = path.join(out, 'many');
    const made3 = run(args.helper, ['big', many, '2', '300', '20']);
    const h4 = run(args.board, ['html', many, '-o', path.join(out, 'many.html')]);
    check(made3.status === 0 && h4.status === 0, 'a page of 300 tags is written',
      [made3.err, h4.err]);
    const murl = 'file://' + path.resolve(path.join(out, 'many.html'));
    const mpage = await browser.open(murl);
    const drawnCount = 'document.querySelectorAll(".card.scalars .plot canvas").length';
    const early = await mpage.eval(drawnCount);
    check(early > 0 && early < 300 * 2, 'with 300 tags only the cards near the window are ' +
      'drawn at first', early);
    await mpage.eval('[...document.querySelectorAll(".card.scalars")].pop().scrollIntoView()');
    let lastDrawn = false;
    try {
      lastDrawn = await mpage.waitFor('[...document.querySelectorAll(".card.scalars")].pop()' +
        '.querySelector("canvas") !== null', 20000);
    } catch (e) { /* reported below */ }
    check(lastDrawn, 'the last card is drawn when it is scrolled to');
    const mst = await mpage.eval('quern.selftest()');
    check(mst.charts.length === 300 && mst.charts.every((c) => c.series.length === 2 &&
      c.series.every((x) => x.points === 20) && c.pixels.run0 > 0 && c.pixels.run1 > 0),
    'all 300 charts have both runs, their points and colours', mst.charts.length);
    checkNoProblems(mpage, (u) => u === murl, '300 tags');

    // A link with settings in its fragment.
    const page2b = await browser.open(url + '#smoothing=0.9&x=relative&log=1&run=^b/&selftest');
    const s3 = JSON.parse(await page2b.eval('document.getElementById("quern-selftest")' +
      '.textContent'));
    check(s3.smoothing === 0.9 && s3.x === 'relative' && s3.log === true &&
      s3.charts.filter((c) => c.shown).every((c) => c.series.every((s) => s.run === 'b/c')),
    'settings in the address\'s fragment apply', s3);
    checkNoProblems(page2b, (u) => u.startsWith(url) || u.startsWith('data:'), 'html#fragment');
    // A bad expression in the address is shown as a typed one.
    const page2c = await browser.open(url + '#run=(&tag=^loss$');
    const bad = await page2c.eval('[document.getElementById("run-re").value, ' +
      'document.getElementById("run-re").classList.contains("invalid"), ' +
      'document.getElementById("filter-error").textContent, quern.selftest().charts.filter(' +
      '(c) => c.shown).map((c) => c.tag).join()]');
    check(bad[0] === '(' && bad[1] && bad[2].startsWith('runs: ') && bad[3] === 'loss',
      'a bad expression in the address is in the box, marked invalid and named', bad);

    // Wall-time ticks over about a second (run0's and run1's 0.19 s, 1 s apart):
    // clock times with milliseconds.
    const spage = await browser.open(murl + '#x=wall&tag=^group/tag0$');
    await spage.eval('quern.flush()');
    const shortTicks = await ticks(spage, 'group/tag0');
    check(shortTicks.length > 1 && shortTicks.every((t) => /^\d\d:\d\d:\d\d\.\d{3}$/.test(t)) &&
      new Set(shortTicks).size === shortTicks.length,
    'wall-time ticks over about a second read HH:MM:SS.mmm', shortTicks);
    const labels = await spage.eval('quern.clockLabel && [quern.clockLabel(Date.UTC(2024, 0, 1, 23, 59, 58), ' +
      '[Date.UTC(2024, 0, 1, 23, 0), Date.UTC(2024, 0, 2, 1, 0)]), quern.clockLabel(' +
      'Date.UTC(2024, 0, 3), [Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 9)])]');
    check(JSON.stringify(labels) === JSON.stringify(['01-01 23:59:58', '2024-01-03']),
      'wall-time ticks over days carry the date', labels);

    // Markdown in text summaries, and a run at the log directory's root.
    const mdDir = path.join(out, 'notes-logs');
    const made5 = run(args.helper, ['markdown', mdDir]);
    const h5 = run(args.board, ['html', mdDir, '-o', path.join(out, 'markdown.html')]);
    check(made5.status === 0 && h5.status === 0, 'a page of a root run with markdown is ' +
      'written', [made5.err, h5.err]);
    const mdurl = 'file://' + path.resolve(path.join(out, 'markdown.html'));
    const mdpage = await browser.open(mdurl);
    await mdpage.eval('quern.flush()');
    await sleep(500); // time for an onerror that should not be there
    const md = await mdpage.eval('quern.selftest()');
    const html = ((md.texts[0] || {}).html || [''])[0];
    check(/<strong>lr<\/strong>/.test(html) && /<em>0\.1<\/em>/.test(html) &&
      /<table>[\s\S]*<th>a<\/th>[\s\S]*<td>2<\/td>/.test(html),
    'markdown in a text summary is rendered (bold, emphasis, a table)', html);
    const pwned = await mdpage.eval('[typeof window.__pwned, document.querySelectorAll(' +
      '"td.markdown script, td.markdown [onerror]").length]');
    check(pwned[0] === 'undefined' && pwned[1] === 0 && !/script|onerror/i.test(html),
      'a <script> or onerror in a text summary does not run (sanitized away)', [pwned, html]);
    check(JSON.stringify(md.runs.map((r) => r.name)) === '["notes-logs"]',
      'the run at the log directory\'s root is named after it', md.runs);
    const buttons = await mdpage.eval('[...document.querySelectorAll(".links button")]' +
      '.map((b) => b.textContent)');
    check(JSON.stringify(buttons) === '["notes-logs.csv","notes-logs.json"]',
      'the root run\'s downloads are named after the log directory', buttons);
    const mdInspect = run(args.board, ['inspect', mdDir]);
    const mdExport = run(args.board, ['export', mdDir]);
    const mdDot = run(args.board, ['export', mdDir, '--run', '.']);
    check(mdInspect.out.includes('\nRun: notes-logs\n') &&
      mdExport.out.split('\n')[1].startsWith('notes-logs,loss,0,') &&
      mdDot.status === 0 && mdDot.out === mdExport.out,
    'inspect and export name the root run after the log directory (--run . still selects ' +
      'it)', [mdInspect.out.slice(0, 200), mdExport.out.slice(0, 200), mdDot]);
    const mdProblems = mdpage.problems().filter((p) =>
      !/image '[^']*\/x' violates the following Content Security Policy directive: "img-src/
        .test(p));
    check(mdProblems.length === 0, 'markdown page: no console error or exception (the ' +
      'summary\'s image is refused by the page\'s policy)', mdProblems);

    await checkHparamsPage(browser, out);

    // The pipeline view of a run with telemetry (TB-3, TB-4).
    const pipeDir = path.join(out, 'pipeline-logs');
    const madeP = run(args.helper, ['pipeline', pipeDir]);
    const hP = run(args.board, ['html', pipeDir, '-o', path.join(out, 'pipeline.html')]);
    check(madeP.status === 0 && hP.status === 0, 'a page of a run with telemetry is written',
      [madeP.err, hP.err]);
    const purl = 'file://' + path.resolve(path.join(out, 'pipeline.html'));
    const ppage = await browser.open(purl);
    await checkPipelineView(ppage, 'html');
    const spanned = await browser.open(purl + '#from=140&to=180');
    const sp = await pipelineOf(spanned);
    check(JSON.stringify(sp.span) === '[140,180]' && JSON.stringify(sp.stagesDrawn.filter(
      (s) => s.limiting).map((s) => s.name)) === '["batch"]',
    'TB-3 html: a span in the address is the view\'s span', sp);
    await ppage.screenshot(path.join(out, 'pipeline.png'));
    checkNoProblems(ppage, (u) => u === purl || u.startsWith('data:') || u.startsWith('blob:'),
      'pipeline page');
  } finally {
    await browser.close();
  }
}

// -- the pipeline view (TB-3, TB-4) --

// The pipeline view of a page over the helper's `pipeline` log directory
// (run train: produce -> raw -> decode -> decoded -> batch -> batches -> the
// trainer, decode limiting at steps 0..120, batch at 140..180; run plain:
// no telemetry). Returns the page's selftest.
async function pipelineOf(page) {
  await page.eval('quern.flush()');
  return (await page.eval('quern.selftest()')).pipeline;
}

async function checkPipelineView(page, label) {
  let p = await pipelineOf(page);
  const view = p.views.find((v) => v.run === 'train');
  check(p.section && p.views.length === 1 && view && !view.error,
    'TB-3 ' + label + ': the pipeline view is drawn for the run with telemetry only', p.views);
  if (!view) return;
  const drawn = p.stagesDrawn.map((s) => s.name).sort().join();
  check(drawn === 'batch,decode,produce',
    'TB-3 ' + label + ': its stages are the nodes of the graph', p.stagesDrawn);
  // The queues are the edges: raw and decoded between stages, batches to
  // the trainer.
  const queues = p.queuesDrawn.map((q) => q.name).sort().join();
  check(queues === 'batches,decoded,raw' && view.edges === 3,
    'TB-3 ' + label + ': its queues are the edges, one each', [p.queuesDrawn, view.edges]);
  // Over every step: decode is limiting in 7 of the 10 readings, and the
  // shares are the means of the scalars written (TL-6, TL-9).
  const limiting = p.stagesDrawn.filter((s) => s.limiting).map((s) => s.name);
  check(JSON.stringify(limiting) === '["decode"]' && view.limiting === 'decode',
    'TB-3 ' + label + ': the stage the verdicts named most is marked limiting', p.stagesDrawn);
  const decode = p.stagesDrawn.find((s) => s.name === 'decode');
  const want = Array.from({ length: 10 }, (_, i) => i < 7 ? Math.fround(0.95 - 0.001 * i) :
    Math.fround(0.2)).reduce((a, b) => a + b, 0) / 10;
  check(decode && Math.abs(Number(decode.busy) - want) < 1e-12,
    'TB-3 ' + label + ': a stage\'s busy share is the mean of runner/<name>/busy over the ' +
    'span', [decode, want]);
  const raw = p.queuesDrawn.find((q) => q.name === 'raw');
  check(raw && Math.abs(Number(raw.fill) - (7 * 1 + 3 * 0.75) / 10) < 1e-12,
    'TB-3 ' + label + ': a queue\'s fill is the mean of queue/<name>/fill over the span', raw);
  check(raw && Math.abs(Number(raw.enqueue_wait) -
    (7 * Math.fround(0.02) + 3 * Math.fround(0.001)) / 10) < 1e-12 &&
    Number(raw.dequeue_wait) === 0 && /enqueue waited 14\.3 ms for room/.test(raw.title),
  'TB-3 TL-11 ' + label + ': a queue\'s waits at the queue are the means of ' +
    'queue/<name>/enqueue_wait_seconds and dequeue_wait_seconds, in its tooltip', raw);
  check(view.verdict && view.verdict.includes('stage `batch`'),
    'TB-3 ' + label + ': the last verdict of the span is shown', view.verdict);
  // The exposed wait beside the loss, at the top.
  check(JSON.stringify(p.order) === JSON.stringify(['pipeline/graph', 'loss',
    'consumer/batches/wait_fraction']),
  'TB-4 ' + label + ': the exposed-wait chart is beside the loss, under the pipeline view',
  p.order);
  const wait = p.charts.find((c) => c.tag === 'consumer/batches/wait_fraction');
  check(wait && wait.shown && wait.series.length === 1 && wait.series[0].points === 10 &&
    (wait.pixels.train || 0) > 0,
  'TB-4 ' + label + ': the exposed-wait chart draws the run\'s 10 readings', wait);
  const loss = p.charts.find((c) => c.tag === 'loss');
  check(loss && loss.shown && loss.series.length === 2,
    'TB-4 ' + label + ': the loss beside it has every run', loss);
  // A span of steps: from 140 on, batch limits (3 readings of 3).
  await page.eval('(() => { const i = document.getElementById("pipe-from"); i.value = ' +
    '"140"; i.dispatchEvent(new Event("change")); return true; })()');
  p = await pipelineOf(page);
  const late = p.stagesDrawn.filter((s) => s.limiting).map((s) => s.name);
  const lateView = p.views[0] || {};
  const batch = (lateView.stages || []).find((s) => s.name === 'batch') || {};
  check(JSON.stringify(late) === '["batch"]' && batch.readings === 3 && batch.limiting === 1,
    'TB-3 ' + label + ': over steps 140.. the limiting stage is batch', [p.stagesDrawn, batch]);
  check((await page.eval('location.hash')).includes('from=140'),
    'TB-3 ' + label + ': the span goes into the address');
  await page.eval('(() => { const i = document.getElementById("pipe-from"); i.value = ' +
    '""; i.dispatchEvent(new Event("change")); return true; })()');
}

// -- hparams (TB-1) --

// The hparams table of a page at `url` over the helper's `hparams` log
// directory: three runs of different hparams, one with HTML for a name and a
// value. Returns the page's selftest.
async function hparamsTable(page) {
  await page.eval('quern.flush()');
  return (await page.eval('quern.selftest()')).hparams;
}

async function checkHparamsPage(browser, out) {
  const dir = path.join(out, 'hparams-logs');
  const made = run(args.helper, ['hparams', dir]);
  const file = path.join(out, 'hparams.html');
  const h = run(args.board, ['html', dir, '-o', file]);
  check(made.status === 0 && h.status === 0, 'a page of three runs with hparams is written',
    [made.err, h.err]);
  const url = 'file://' + path.resolve(file);
  const page = await browser.open(url);
  await sleep(300); // time for an onerror that should not be there
  let t = await hparamsTable(page);
  const hostileName = '<b onmouseover="window.__pwned=4">name</b>';
  const hostileValue = '<img src=x onerror="window.__pwned=3">';
  check(JSON.stringify(t.columns) === JSON.stringify(['run', 'h:' + hostileName,
    'h:batch_size', 'h:learning_rate', 'h:optimizer', 'h:shuffle', 'm:loss', 'min:loss']),
  'TB-1 the hparams table has a column per hyper-parameter and per metric (last, min)',
  t.columns);
  check(JSON.stringify(t.rows) === JSON.stringify([
    ['adam', '', '32', '0.1', 'adam', 'true', '0.5', '0.400000006'],
    ['sgd', '', '64', '0.01', 'sgd', 'false', '0.25', '0.25'],
    ['odd', 'x', '128', '0.001', hostileValue, '', '1', '1']]),
  'TB-1 one row per run, in run order, with its values and its metric\'s last and lowest',
  t.rows);
  const exported = run(args.board, ['export', dir, '--hparams']);
  const csvRows = parseCsv(exported.out); // header dropped
  check(exported.status === 0 && JSON.stringify(csvRows) === JSON.stringify(t.rows) &&
    exported.out.startsWith('run,"' + hostileName.replace(/"/g, '""') + '",batch_size,'),
  'TB-1 export --hparams prints the page\'s table, cell for cell', [exported, csvRows]);
  const pwned = await page.eval('[typeof window.__pwned, document.querySelectorAll(' +
    '"#hparams img, #hparams b, #hparams [onerror], #hparams [onmouseover]").length]');
  check(pwned[0] === 'undefined' && pwned[1] === 0 && t.html.includes('&lt;img src=x') &&
    t.html.includes('&lt;b onmouseover='),
  'TB-1 hparam names and values are shown as text, never as HTML', [pwned, t.html.slice(0, 300)]);

  // Sorting: a click on a column sorts by it, a second click reverses.
  const click = (key) => page.eval('(() => { const th = [...document.querySelectorAll(' +
    '"#hparams th.sortable")].find((x) => x.dataset.key === ' + JSON.stringify(key) +
    '); th.click(); return true; })()');
  await click('h:batch_size');
  t = await hparamsTable(page);
  check(JSON.stringify(t.rows.map((r) => r[0])) === '["adam","sgd","odd"]',
    'TB-1 sorted by batch_size (numbers by value: 32 < 64 < 128)', t.rows);
  await click('h:batch_size');
  t = await hparamsTable(page);
  check(JSON.stringify(t.rows.map((r) => r[0])) === '["odd","sgd","adam"]',
    'TB-1 a second click sorts the other way', t.rows);
  await click('min:loss');
  t = await hparamsTable(page);
  check(JSON.stringify(t.rows.map((r) => r[0])) === '["sgd","adam","odd"]',
    'TB-1 sorted by the metric\'s lowest value', t.rows);
  await click('h:optimizer');
  t = await hparamsTable(page);
  check(JSON.stringify(t.rows.map((r) => r[0])) === '["odd","adam","sgd"]',
    'TB-1 sorted by a text column', t.rows);

  // Filtering: text in a run's name or values; kept in the address.
  await page.eval('(() => { const i = document.getElementById("hp-filter"); i.value = "SGD"; ' +
    'i.dispatchEvent(new Event("input")); return true; })()');
  t = await hparamsTable(page);
  check(JSON.stringify(t.rows.map((r) => r[0])) === '["sgd"]',
    'TB-1 the filter keeps the runs with the text in a name or value (any case)', t.rows);
  await page.eval('(() => { const i = document.getElementById("hp-filter"); i.value = "0.00"; ' +
    'i.dispatchEvent(new Event("input")); return true; })()');
  t = await hparamsTable(page);
  check(JSON.stringify(t.rows.map((r) => r[0])) === '["odd"]',
    'TB-1 the filter matches values as shown', t.rows);
  const hash = await page.eval('location.hash');
  check(hash === '#hp=0.00&hpsort=h%3Aoptimizer', 'TB-1 the address holds the filter and the ' +
    'sort', hash);
  const page2 = await browser.open(url + hash);
  const t2 = await hparamsTable(page2);
  const filterText = await page2.eval('document.getElementById("hp-filter").value');
  check(JSON.stringify(t2.rows.map((r) => r[0])) === '["odd"]' && filterText === '0.00' &&
    t2.columns.length === 8,
  'TB-1 opening the address restores the filter and the sort', [t2.rows, filterText]);

  // A run's check box in the table hides it in the charts, as the run table's does.
  await page2.eval('(() => { const cb = document.querySelector(\'#hparams tr.hprow ' +
    'input[type=checkbox]\'); cb.click(); return true; })()');
  const after = await page2.eval('quern.selftest()');
  const loss = after.charts.find((c) => c.tag === 'loss');
  check(loss && !loss.series.some((s) => s.run === 'odd') &&
    (await page2.eval('location.hash')).includes('hide=odd'),
  'TB-1 unticking a run in the hparams table hides it in the charts', loss);
  const problems = page.problems().concat(page2.problems()).filter((p) =>
    !/image '[^']*\/x' violates the following Content Security Policy directive: "img-src/
      .test(p));
  check(problems.length === 0, 'hparams page: no console error or exception', problems);
  return dir;
}

// -- serve --

function httpGet(port, target, opts = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method: opts.method ||
      'GET', headers: opts.headers || {}, timeout: 30000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
        body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function rawRequest(port, text) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.setTimeout(30000, () => s.destroy(new Error('timeout')));
    s.on('connect', () => s.write(text));
    s.on('data', (d) => { data += d; });
    s.on('end', () => resolve(data));
    s.on('close', () => resolve(data));
    s.on('error', reject);
  });
}

function startServer(logdir) {
  const proc = spawn(args.board, ['serve', logdir, '--port', '0', '--reload', '0.3'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => proc.on('exit', (code, sig) => r({ code, sig })));
  const port = new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('serve printed no address in 30 s: ' + err)),
      30000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) { clearTimeout(t); resolve(Number(m[1])); }
    });
    proc.on('exit', () => reject(new Error('serve ended: ' + err)));
  });
  return { proc, port, exited, output: () => out, errors: () => err };
}

async function stopServer(server, signal, label) {
  server.proc.kill(signal);
  const t = setTimeout(() => server.proc.kill('SIGKILL'), 10000);
  const r = await server.exited;
  clearTimeout(t);
  check(r.code === 0, label + ': ' + signal + ' ends serve cleanly (exit 0)', r);
}

// The addresses listening on `port` (from /proc/net/tcp{,6}).
function listeners(port) {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const out = [];
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = fs.readFileSync(f, 'utf8'); } catch (e) { continue; }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 3 && cols[3] === '0A' && cols[1].endsWith(':' + hex))
        out.push(cols[1]);
    }
  }
  return out;
}

async function testServe() {
  const out = args.out;
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const logdir = path.join(out, 'logs');
  const made = run(args.helper, ['full', logdir]);
  if (!check(made.status === 0, 'the test log directory is written', made.err)) return;
  const server = startServer(logdir);
  let browser = null;
  try {
    const port = await server.port;
    check(true, 'serve prints its address (port ' + port + ')');
    const addrs = listeners(port);
    check(addrs.length > 0 && addrs.every((a) => a === '0100007F:' +
      port.toString(16).toUpperCase().padStart(4, '0')), 'serve listens on 127.0.0.1 only',
    addrs);
    const index = await httpGet(port, '/');
    check(index.status === 200 && /text\/html/.test(index.headers['content-type']),
      'GET / answers the page', index.status);
    const data = await httpGet(port, '/data');
    const version = data.status === 200 && JSON.parse(data.body.toString()).version;
    check(version, 'GET /data answers the data');
    const same = await httpGet(port, '/data?have=' + encodeURIComponent(version));
    check(same.status === 204, 'GET /data?have=<current version> answers 204', same.status);
    const exportCsv = await httpGet(port, '/export.csv?run=train&tag=loss');
    check(exportCsv.body.toString() === run(args.board, ['export', logdir, '--run', 'train',
      '--tag', 'loss']).out, '/export.csv is export\'s text');
    const exportJson = await httpGet(port, '/export.json?run=train&tag=loss');
    check(exportJson.status === 200 && /application\/json/.test(
      exportJson.headers['content-type']) && exportJson.body.toString() === run(args.board,
      ['export', logdir, '--run', 'train', '--tag', 'loss', '--format', 'json']).out,
    '/export.json is export --format json\'s text');
    const trainFile = fs.readdirSync(path.join(logdir, 'train'))[0];
    const raw = await httpGet(port, '/logdir/train/' + trainFile);
    check(raw.status === 200 && raw.body.equals(fs.readFileSync(path.join(logdir, 'train',
      trainFile))), 'a file of LOGDIR is served as it is');
    const statuses = {};
    for (const [what, target, opts] of [
      ['unknown page', '/nothing', {}],
      ['a file not in LOGDIR', '/logdir/none', {}],
      ['..', '/../../etc/passwd', {}],
      ['encoded ..', '/logdir/..%2f..%2f..%2fetc%2fpasswd', {}],
      ['an absolute path', '/logdir//etc/passwd', {}],
      ['a bad escape', '/logdir/%zz', {}],
      ['POST', '/', { method: 'POST' }],
      ['a foreign Host', '/', { headers: { Host: 'evil.example:80' } }],
    ]) statuses[what] = (await httpGet(port, target, opts)).status;
    check(statuses['unknown page'] === 404 && statuses['a file not in LOGDIR'] === 404 &&
      statuses['..'] === 403 && statuses['encoded ..'] === 403 &&
      statuses['an absolute path'] >= 400 && statuses['an absolute path'] < 500 &&
      statuses['a bad escape'] === 400 && statuses.POST === 405 &&
      statuses['a foreign Host'] === 403,
    'bad requests get 4xx; paths outside LOGDIR are refused', statuses);
    const head = await rawRequest(port, 'HEAD / HTTP/1.1\r\nHost: 127.0.0.1:' + port +
      '\r\n\r\n');
    const length = Number((/content-length: (\d+)/i.exec(head) || [])[1]);
    check(/^HTTP\/1\.1 200/.test(head) && length === index.body.length &&
      head.endsWith('\r\n\r\n'), 'HEAD / answers the headers of GET / and no body',
    head.slice(0, 200));
    const busy = run(args.board, ['serve', logdir, '--port', String(port)], { timeout: 20000 });
    check(busy.status === 1 && busy.err.includes('cannot listen on 127.0.0.1:' + port +
      ': Address already in use'), 'a port in use is named, exit 1', busy);
    const garbage = await rawRequest(port, 'THIS IS NOT HTTP\r\n\r\n');
    check(/^HTTP\/1\.1 400/.test(garbage), 'a malformed request gets 400', garbage.slice(0, 80));

    const chromium = chromiumPath();
    if (!chromium) return;
    browser = new Browser(chromium, false);
    const origin = 'http://127.0.0.1:' + port + '/';
    const page = await browser.open(origin);
    await checkAgainstExport(page, args.board, logdir, 'serve');
    checkNoProblems(page, (u) => u.startsWith(origin) || u.startsWith('data:'), 'serve');
    // Events appended while the page is open reach it.
    const before = await page.eval('quern.selftest().charts.find((c) => c.tag === "loss")' +
      '.series.find((s) => s.run === "train").points');
    const appended = run(args.helper, ['append', path.join(logdir, 'train', trainFile),
      '1000', '25']);
    check(appended.status === 0, 'events are appended to train', appended.err);
    let after = null;
    try {
      after = await page.waitFor('(() => { const c = quern.selftest().charts.find((c) => ' +
        'c.tag === "loss").series.find((s) => s.run === "train"); return c.points === ' +
        (before + 25) + ' && c.points; })()', 30000);
    } catch (e) { /* reported below */ }
    check(after === before + 25, 'the open page picks up the 25 appended events (' + before +
      ' -> ' + (before + 25) + ')', after);
    const deltas = await page.eval('quern.selftest().deltas');
    check(deltas >= 1, 'the page got only the new points (' + deltas + ' update(s))', deltas);
    const csv = await page.eval('quern.csv("train", "loss")');
    check(csv === run(args.board, ['export', logdir, '--run', 'train', '--tag', 'loss']).out,
      'after the reload the CSV still equals export');
    await checkAgainstExport(page, args.board, logdir, 'serve after the update');
    const coloursBefore = await page.eval('Object.fromEntries(quern.selftest().runs.map(' +
      '(r) => [r.name, r.color]))');
    // A new run is more than new points: the page takes all the data again.
    const late = run(args.helper, ['big', path.join(logdir, 'late'), '1', '1', '10']);
    check(late.status === 0, 'a new run is written', late.err);
    let runs = null;
    try {
      runs = await page.waitFor('(() => { const r = quern.selftest().runs.map((x) => x.name);' +
        ' return r.length === 5 && r; })()', 30000);
    } catch (e) { /* reported below */ }
    check(runs && runs.includes('late/run0'), 'the open page picks up a new run', runs);
    const colours = await page.eval('Object.fromEntries(quern.selftest().runs.map((r) => ' +
      '[r.name, r.color]))');
    check(colours.train === coloursBefore.train && colours.eval === coloursBefore.eval &&
      !Object.values(coloursBefore).includes(colours['late/run0']),
    'runs keep their colours when a new run appears; the new one gets a colour of its own',
    [coloursBefore, colours]);
    if (runs) await checkAgainstExport(page, args.board, logdir, 'serve with a new run');
    // TB-2: the job is restored from its checkpoint at step 200 (a START,
    // then steps 200.. again): the open page loses every point the restart
    // orphaned, as export does, and its line goes on without a zigzag.
    const restarted = run(args.helper, ['restart', path.join(logdir, 'train', trainFile),
      '200', '30']);
    check(restarted.status === 0, 'TB-2 serve: train is restored at step 200', restarted.err);
    let resumed = null;
    try {
      resumed = await page.waitFor('(() => { const c = quern.selftest().charts.find((c) => ' +
        'c.tag === "loss").series.find((s) => s.run === "train"); return c.points === 230 && ' +
        'c.points; })()', 30000);
    } catch (e) { /* reported below */ }
    check(resumed === 230, 'TB-2 serve: the open page drops the points after step 200 ' +
      'and shows the 30 new ones (200 + 30 points)', resumed);
    const rcsv = await page.eval('quern.csv("train", "loss")') || '';
    const rsteps = rcsv.trim().split('\n').slice(1).map((l) => Number(l.split(',')[2]));
    check(rsteps.length === 230 && rsteps.every((st, i) => st === i),
      'TB-2 serve: train\'s loss goes 0..229 once each (no zigzag)', rsteps.slice(195, 205));
    check(rcsv === run(args.board, ['export', logdir, '--run', 'train', '--tag', 'loss']).out,
      'TB-2 serve: after the restart the CSV still equals export');
    const said = /purged \d+ points: restarted at step 200/.exec(
      run(args.board, ['inspect', logdir]).out);
    const table = await page.eval('document.getElementById("runs").textContent');
    check(said && table.includes(said[0]), 'TB-2 serve: the run table says what inspect ' +
      'says (' + (said && said[0]) + ')', table.slice(0, 300));
    await checkAgainstExport(page, args.board, logdir, 'TB-2 serve after the restart');
    checkNoProblems(page, (u) => u.startsWith(origin) || u.startsWith('data:'),
      'serve after the reload');
    await page.screenshot(path.join(out, 'serve.png'));
  } finally {
    if (browser) await browser.close();
    await stopServer(server, 'SIGTERM', 'serve');
  }
  await testServeEmpty();
  await testServeHparams();
  await testServePipeline();
  // SIGINT (Ctrl-C) too, with a connection left open.
  const second = startServer(logdir);
  const port2 = await second.port;
  const idle = net.connect(port2, '127.0.0.1');
  idle.on('error', () => {});
  await sleep(200);
  await stopServer(second, 'SIGINT', 'serve with an idle connection');
  idle.destroy();
}

// The hparams table on a served page: the same rows, sorting and filtering.
async function testServeHparams() {
  const dir = path.join(args.out, 'hparams-logs');
  fs.rmSync(dir, { recursive: true, force: true });
  const made = run(args.helper, ['hparams', dir]);
  check(made.status === 0, 'serve: a log directory of three runs with hparams', made.err);
  const server = startServer(dir);
  let browser = null;
  try {
    const port = await server.port;
    const chromium = chromiumPath();
    if (!chromium) return;
    browser = new Browser(chromium, false);
    const origin = 'http://127.0.0.1:' + port + '/';
    const page = await browser.open(origin + '#hpsort=m%3Aloss&hpdesc=1');
    let t = await hparamsTable(page);
    check(JSON.stringify(t.rows.map((r) => [r[0], r[6]])) ===
      '[["odd","1"],["adam","0.5"],["sgd","0.25"]]',
    'TB-1 serve: the hparams table, sorted by the address (last loss, descending)', t.rows);
    await page.eval('(() => { const i = document.getElementById("hp-filter"); i.value = ' +
      '"adam"; i.dispatchEvent(new Event("input")); return true; })()');
    t = await hparamsTable(page);
    check(JSON.stringify(t.rows.map((r) => r[0])) === '["adam"]' &&
      (await page.eval('location.hash')).includes('hp=adam'),
    'TB-1 serve: the filter acts and goes into the address', t.rows);
    checkNoProblems(page, (u) => u.startsWith(origin) || u.startsWith('data:'),
      'serve hparams');
  } finally {
    if (browser) await browser.close();
    await stopServer(server, 'SIGTERM', 'serve of the hparams log directory');
  }
}

// The pipeline view served, and a run with telemetry written while the page
// is open appearing on it (TB-3).
async function testServePipeline() {
  const dir = path.join(args.out, 'pipeline-logs');
  const later = path.join(args.out, 'pipeline-later');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(later, { recursive: true, force: true });
  const made = run(args.helper, ['pipeline', dir]);
  const made2 = run(args.helper, ['pipeline', later]);
  check(made.status === 0 && made2.status === 0, 'serve: log directories with telemetry',
    [made.err, made2.err]);
  const server = startServer(dir);
  let browser = null;
  try {
    const port = await server.port;
    const chromium = chromiumPath();
    if (!chromium) return;
    browser = new Browser(chromium, false);
    const origin = 'http://127.0.0.1:' + port + '/';
    const page = await browser.open(origin);
    await checkPipelineView(page, 'serve');
    fs.renameSync(path.join(later, 'train'), path.join(dir, 'train2'));
    let views = [];
    for (let i = 0; i < 100 && views.length < 2; i++) {
      await sleep(200);
      views = (await pipelineOf(page)).views;
    }
    check(views.length === 2 && views.every((v) => v.limiting === 'decode'),
      'TB-3 serve: a run with telemetry written later gets its view on the open page',
      views.map((v) => [v.run, v.limiting]));
    checkNoProblems(page, (u) => u.startsWith(origin) || u.startsWith('data:'),
      'serve pipeline');
  } finally {
    if (browser) await browser.close();
    await stopServer(server, 'SIGTERM', 'serve of the pipeline log directory');
  }
}

// serve started on an empty log directory, and on one not made yet: the
// page says "no runs yet", and runs written after it started appear.
async function testServeEmpty() {
  const empty = path.join(args.out, 'empty-logs');
  fs.mkdirSync(empty, { recursive: true });
  const server = startServer(empty);
  let browser = null;
  try {
    const port = await server.port;
    check(true, 'serve starts on an empty log directory (port ' + port + ')');
    const chromium = chromiumPath();
    if (!chromium) return;
    browser = new Browser(chromium, false);
    const origin = 'http://127.0.0.1:' + port + '/';
    const page = await browser.open(origin);
    const shown = await page.eval('[document.getElementById("status").textContent, ' +
      'document.getElementById("runs").textContent]');
    check(/no runs yet/.test(shown[0]) && /No runs yet/.test(shown[1]),
      'the page of an empty log directory says "no runs yet"', shown);
    const made = run(args.helper, ['big', empty, '1', '2', '10']);
    check(made.status === 0, 'a run is written after serve started', made.err);
    let runs = null;
    try {
      // The reload interval is 0.3 s: well within 10 s.
      runs = await page.waitFor('(() => { const r = quern.selftest(); return r.runs.length &&' +
        ' r.charts.filter((c) => c.shown).length === 2 && r.runs.map((x) => x.name); })()',
      10000);
    } catch (e) { /* reported below */ }
    check(JSON.stringify(runs) === '["run0"]', 'the page shows the run written after serve ' +
      'started, with its charts', runs);
    const status = await page.eval('document.getElementById("status").textContent');
    check(/^1 run/.test(status), 'the status counts it', status);
    if (runs) await checkAgainstExport(page, args.board, empty, 'serve of a new run');
    checkNoProblems(page, (u) => u.startsWith(origin) || u.startsWith('data:'), 'serve empty');
  } finally {
    if (browser) await browser.close();
    await stopServer(server, 'SIGTERM', 'serve of an empty log directory');
  }
  // A log directory made after serve started (a root run: named after it).
  const missing = path.join(args.out, 'later-logs');
  fs.rmSync(missing, { recursive: true, force: true });
  const later = startServer(missing);
  try {
    const port = await later.port;
    check(true, 'serve starts on a log directory not made yet (port ' + port + ')');
    const first = JSON.parse((await httpGet(port, '/data')).body.toString());
    check(first.runs.length === 0 && first.title === 'later-logs', 'its data has no runs yet',
      first);
    check(run(args.helper, ['markdown', missing]).status === 0, 'the log directory is made');
    let names = null;
    const end = Date.now() + 10000;
    while (Date.now() < end) {
      const d = JSON.parse((await httpGet(port, '/data')).body.toString());
      if (d.runs.length) { names = d.runs.map((r) => r.name); break; }
      await sleep(200);
    }
    check(JSON.stringify(names) === '["later-logs"]', 'the runs of a log directory made after ' +
      'serve started are served', names);
    const file = fs.readdirSync(missing)[0];
    const raw = await httpGet(port, '/logdir/' + file);
    check(raw.status === 200, 'its files are served', raw.status);
  } finally {
    await stopServer(later, 'SIGTERM', 'serve of a log directory made later');
  }
}

// -- flagship --

async function testFlagship() {
  const out = args.out;
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  if (!check(args.example && fs.existsSync(args.example), 'the flagship example is built',
    args.example)) return;
  const logdir = path.join(out, 'runs', 'csv_pipeline');
  // The run takes a fraction of a second: telemetry every 5 ms gives it
  // readings to draw (the default, 10 s, would write none).
  const ex = run(args.example, ['--logdir', logdir, '--telemetry-every', '0.005'],
    { cwd: out });
  if (!check(ex.status === 0, 'the flagship example runs', ex.err)) return;
  const report = path.join(logdir, 'index.html');
  const h = run(args.board, ['html', logdir]);
  check(h.status === 0 && fs.existsSync(report), 'html writes LOGDIR/index.html', h);
  const chromium = chromiumPath();
  if (!chromium) return;
  const browser = new Browser(chromium, canIsolate());
  try {
    const url = 'file://' + path.resolve(report);
    const page = await browser.open(url);
    const { st } = await checkAgainstExport(page, args.board, logdir, 'flagship',
      { exportStatus: 0 });
    check(st.charts.length > 0, 'the flagship report has charts (' + st.charts.length + ')');
    await checkFlagshipPipeline(page, logdir);
    checkNoProblems(page, (u) => u === url || u.startsWith('data:') || u.startsWith('blob:'),
      'flagship');
    await checkSmoothingReference(page);
    await page.screenshot(path.join(out, 'flagship.png'));
    check(fs.statSync(path.join(out, 'flagship.png')).size > 1000,
      'a screenshot of the flagship report is kept: ' + path.join(out, 'flagship.png'));
  } finally {
    await browser.close();
  }
}

// The flagship's pipeline view (TB-3, TB-4): its stages as the run's
// pipeline/graph names them, the limiting stage the one whose
// runner/<name>/limiting has the highest mean above 0 in export's numbers
// (none when the pipeline kept up), and the exposed wait beside the loss.
async function checkFlagshipPipeline(page, logdir) {
  const p = await pipelineOf(page);
  const view = p.views[0] || {};
  check(p.views.length === 1 && !view.error && p.stagesDrawn.length >= 2 &&
    p.queuesDrawn.length >= 2,
  'TB-3 flagship: the pipeline view draws its stages and queues', p);
  const names = p.stagesDrawn.map((s) => s.name).sort();
  const tags = run(args.board, ['export', logdir]).out.split('\n').slice(1)
    .filter((l) => /^[^,]*,runner\/[^,]*\/limiting,/.test(l));
  const sums = new Map();
  for (const l of tags) {
    const [, tag, , , value] = l.split(',');
    const name = tag.slice('runner/'.length, -'/limiting'.length);
    const e = sums.get(name) || { sum: 0, n: 0 };
    e.sum += Number(value);
    e.n++;
    sums.set(name, e);
  }
  check(JSON.stringify([...sums.keys()].sort()) === JSON.stringify(names),
    'TB-3 flagship: a stage is drawn for every runner/<name>/limiting series', [names,
      [...sums.keys()]]);
  let want = '', best = 0;
  for (const [name, e] of sums) if (e.sum / e.n > best) { best = e.sum / e.n; want = name; }
  const marked = p.stagesDrawn.filter((s) => s.limiting).map((s) => s.name);
  check(view.limiting === want && JSON.stringify(marked) === JSON.stringify(want ? [want] : []),
    'TB-3 flagship: the stage marked limiting is the one the verdicts named most (' +
    (want || 'none: the pipeline kept up') + ')', [marked, want, view.verdict]);
  const wait = p.charts.find((c) => c.tag === 'consumer/shuffle_batch_join/wait_fraction');
  check(p.order[1] === 'loss' && wait && wait.shown && wait.series.length === 1 &&
    wait.series[0].points > 0 && (Object.values(wait.pixels)[0] || 0) > 0,
  'TB-4 flagship: the exposed-wait chart is drawn beside the loss', [p.order, wait]);
}

const tests = { html: testHtml, serve: testServe, flagship: testFlagship };
if (!tests[args.mode]) {
  console.error('unknown mode ' + args.mode);
  process.exit(2);
}
tests[args.mode]().catch((e) => {
  check(false, 'the test ran to its end', e.stack || String(e));
}).finally(() => {
  clearTimeout(watchdog);
  console.log(failures ? failures + ' check(s) failed' : 'all checks passed');
  process.exit(failures ? 1 : 0);
});
