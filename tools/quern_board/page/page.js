// quern-board's page: TensorBoard's scalar view over the data inlined in
// #quern-data (or, when served, fetched again from the server), drawn with
// dygraphs. Every number is computed on every point; only what is drawn is
// thinned.
'use strict';
(function () {
  // Colours that stand apart from each other and from dygraphs' grey grid.
  const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
    '#e377c2', '#17becf', '#bcbd22', '#393b79', '#ad494a', '#637939'];
  // Buckets per series when thinning what is drawn (first, min, max and last
  // of each bucket are kept, so spikes survive).
  const DRAW_BUCKETS = 600;
  const TB_DEFAULT_SMOOTHING = 0.6;

  const state = {
    smoothing: TB_DEFAULT_SMOOTHING,
    x: 'step',
    log: false,
    outliers: true,
    runRegex: '',
    tagRegex: '',
    // The filters as typed (a bad expression stays here, shown as invalid,
    // while the last good one filters).
    runText: '',
    tagText: '',
    hidden: new Set(),
    // The hparams table: a text filter on runs and values, the column it is
    // sorted by ('' for run order) and the direction.
    hpText: '',
    hpSort: '',
    hpDesc: false,
    // The pipeline view's span of steps (null: from the first, to the last).
    pipeFrom: null,
    pipeTo: null,
  };
  let data = null;
  let model = null;
  const charts = new Map(); // tag -> {g, div, readout}
  const quern = { reloads: 0, deltas: 0, firstChartMs: null, errors: [] };
  window.quern = quern;

  // -- decoding (the encodings of tools/quern_board/page.cpp) --

  function unbase64(s) {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  // The pairs of tools/quern_board/page.cpp (pair_encoder): per point,
  // varint(zigzag(low difference) * 2 + high changed), then
  // varint(zigzag(high difference)) if it changed. Plain numbers are exact
  // here (all below 2^53).
  function decodePairs(b64, n, each) {
    const bytes = unbase64(b64);
    let p = 0;
    const varint = () => {
      let v = 0, mul = 1, b;
      do {
        b = bytes[p++];
        v += (b & 127) * mul;
        mul *= 128;
      } while (b & 128);
      return v;
    };
    const unzigzag = (v) => v % 2 === 1 ? -(v + 1) / 2 : v / 2;
    let hi = 0, lo = 0;
    for (let i = 0; i < n; i++) {
      const v = varint();
      const changed = v % 2;
      lo += unzigzag((v - changed) / 2);
      if (changed) hi += unzigzag(varint());
      each(i, hi, lo);
    }
  }

  // Steps as numbers (exact below 2^53) and, for the text of larger ones,
  // their high and low 32 bits.
  function decodeSteps(b64, n) {
    const steps = new Float64Array(n);
    let big = null;
    decodePairs(b64, n, (i, hi, lo) => {
      steps[i] = hi * 4294967296 + lo;
      if (Math.abs(hi) >= 2097152) {
        if (!big) big = new Map();
        big.set(i, (BigInt(hi) << 32n) + BigInt(lo));
      }
    });
    return { steps, text: (i) => big && big.has(i) ? big.get(i).toString() :
      String(steps[i]) };
  }

  function decodeWalls(b64, n) {
    const out = new Float64Array(n);
    const dv = new DataView(new ArrayBuffer(8));
    decodePairs(b64, n, (i, hi, lo) => {
      dv.setUint32(0, lo, true);
      dv.setUint32(4, hi, true);
      out[i] = dv.getFloat64(0, true);
    });
    return out;
  }

  function decodeValues(b64, n) {
    const bytes = unbase64(b64);
    const dv = new DataView(bytes.buffer);
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
    return out;
  }

  // -- TensorBoard's numbers --

  // classicSmoothing (TensorBoard line_chart_v2/data_transformer.ts): a
  // debiased exponential moving average; non-finite points pass through
  // and are not counted; a constant series is returned as it is.
  function smooth(ys, weight) {
    let w = Number(weight);
    if (!Number.isFinite(w)) w = 0;
    w = Math.min(Math.max(w, 0), 1);
    const n = ys.length;
    const out = new Float64Array(n);
    let constant = true;
    for (let i = 1; i < n; i++) if (ys[i] !== ys[0]) { constant = false; break; }
    let last = 0, count = 0;
    for (let i = 0; i < n; i++) {
      const y = ys[i];
      if (constant || !Number.isFinite(y)) {
        out[i] = y;
        continue;
      }
      last = last * w + (1 - w) * y;
      count++;
      out[i] = last / (w === 1 ? 1 : 1 - Math.pow(w, count));
    }
    return out;
  }

  // Puts the k-th smallest of a[left..right] at a[k], smaller ones before it
  // and larger ones after it (Hoare's selection: linear time, no sort).
  function select(a, k, left, right) {
    while (right > left) {
      const x = a[left], y = a[(left + right) >> 1], z = a[right];
      const pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
      let i = left, j = right;
      while (i <= j) {
        while (a[i] < pivot) i++;
        while (a[j] > pivot) j--;
        if (i <= j) {
          const t = a[i];
          a[i] = a[j];
          a[j] = t;
          i++;
          j--;
        }
      }
      if (k <= j) right = j;
      else if (k >= i) left = i;
      else return;
    }
  }

  function minFrom(a, from) {
    let m = Infinity;
    for (let i = from; i < a.length; i++) if (a[i] < m) m = a[i];
    return m;
  }

  // computeDataSeriesExtent: with ignore outliers, the y extent of the
  // values between the 5th and 95th percentiles (d3's R-7 quantiles) of
  // every visible point. The quantiles need four order statistics, found
  // by selection: the same numbers as sorting, several times faster.
  function yExtent(arrays, ignoreOutliers, positiveOnly) {
    let total = 0;
    for (const a of arrays) total += a.length;
    let ys = new Float64Array(total);
    let n = 0;
    for (const a of arrays)
      for (let i = 0; i < a.length; i++) {
        const y = a[i];
        if (Number.isFinite(y) && (!positiveOnly || y > 0)) ys[n++] = y;
      }
    ys = ys.subarray(0, n);
    if (n === 0) return null;
    if (!ignoreOutliers || n <= 2) {
      let lo = Infinity, hi = -Infinity;
      for (let i = 0; i < n; i++) {
        if (ys[i] < lo) lo = ys[i];
        if (ys[i] > hi) hi = ys[i];
      }
      return [lo, hi];
    }
    // quantile p = a + (h - floor h)(b - a) with a, b the floor(h)-th and
    // next order statistics; the kept values then start at the smallest one
    // >= that quantile and end at the largest one <= the other.
    const h1 = (n - 1) * 0.05, l1 = Math.floor(h1);
    select(ys, l1, 0, n - 1);
    const a0 = ys[l1], a1 = minFrom(ys, l1 + 1);
    const aY = a0 + (h1 - l1) * (a1 - a0);
    const h2 = (n - 1) * 0.95, l2 = Math.floor(h2);
    select(ys, l2, l2 > l1 ? l1 + 1 : 0, n - 1);
    const b0 = ys[l2], b1 = l2 + 1 < n ? minFrom(ys, l2 + 1) : b0;
    const bY = l2 + 1 < n ? b0 + (h2 - l2) * (b1 - b0) : b0;
    return [aY <= a0 ? a0 : a1, bY >= b1 ? b1 : b0];
  }

  // -- the exact text of `quern-board export` --

  function csvField(s) {
    if (!/[,"\n\r]/.test(s)) return s;
    return '"' + s.replace(/"/g, '""') + '"';
  }

  function exactParts(ax) {
    const dv = new DataView(new ArrayBuffer(8));
    dv.setFloat64(0, ax);
    const hi = dv.getUint32(0), lo = dv.getUint32(4);
    const bexp = (hi >>> 20) & 0x7ff;
    let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
    if (bexp === 0) return [mant, -1074];
    return [mant | (1n << 52n), bexp - 1075];
  }

  // Whether the decimal "d.ddde±x" is exactly the double ax.
  function exactlyEquals(ax, text) {
    const m = /^(\d)\.(\d+)e([+-]\d+)$/.exec(text);
    const p = parseInt(m[3], 10) - m[2].length;
    let [L, q] = exactParts(ax);
    let R = BigInt(m[1] + m[2]);
    if (q >= 0) L <<= BigInt(q); else R <<= BigInt(-q);
    if (p >= 0) R *= 10n ** BigInt(p); else L *= 10n ** BigInt(-p);
    return L === R;
  }

  // printf("%.9g"): JavaScript rounds exact ties away from zero, C to even.
  function formatValue(x) {
    if (Number.isNaN(x)) return 'nan';
    if (x === Infinity) return 'inf';
    if (x === -Infinity) return '-inf';
    if (x === 0) return Object.is(x, -0) ? '-0' : '0';
    const neg = x < 0, ax = Math.abs(x);
    let s = ax.toExponential(8);
    const t = ax.toExponential(9);
    if (t[10] === '5' && parseInt(t[9], 10) % 2 === 0 && exactlyEquals(ax, t))
      s = t.slice(0, 10) + t.slice(11);
    const e = s.indexOf('e');
    const exp = parseInt(s.slice(e + 1), 10);
    const digits = s[0] + s.slice(2, e);
    let out;
    if (exp < -4 || exp >= 9) {
      const mant = (digits[0] + '.' + digits.slice(1)).replace(/\.?0+$/, '');
      out = mant + 'e' + (exp < 0 ? '-' : '+') + String(Math.abs(exp)).padStart(2, '0');
    } else if (exp >= 0) {
      const ip = digits.slice(0, exp + 1), fp = digits.slice(exp + 1).replace(/0+$/, '');
      out = fp ? ip + '.' + fp : ip;
    } else {
      out = '0.' + '0'.repeat(-exp - 1) + digits.replace(/0+$/, '');
    }
    return (neg ? '-' : '') + out;
  }

  // std::to_chars(fixed): the shortest digits that read back the same,
  // never in exponent form.
  function formatWall(x) {
    if (Number.isNaN(x)) return 'nan';
    if (x === Infinity) return 'inf';
    if (x === -Infinity) return '-inf';
    if (Object.is(x, -0)) return '-0';
    if (Math.abs(x) >= 2 ** 53) return BigInt(x).toString();
    const s = String(x);
    const e = s.indexOf('e');
    if (e < 0) return s;
    const neg = s[0] === '-';
    const m = s.slice(neg ? 1 : 0, e), exp = parseInt(s.slice(e + 1), 10);
    const dot = m.indexOf('.');
    const digits = dot < 0 ? m : m.slice(0, dot) + m.slice(dot + 1);
    const point = (dot < 0 ? m.length : dot) + exp;
    let out;
    if (point <= 0) out = '0.' + '0'.repeat(-point) + digits;
    else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length);
    else out = digits.slice(0, point) + '.' + digits.slice(point);
    return (neg ? '-' : '') + out;
  }

  function seriesCsv(s) {
    const head = csvField(model.runs[s.run].name) + ',' + csvField(s.tag) + ',';
    const lines = ['run,tag,step,wall_time,value'];
    for (let i = 0; i < s.n; i++)
      lines.push(head + s.stepText(i) + ',' + formatWall(s.walls[i]) + ',' +
        formatValue(s.values[i]));
    return lines.join('\n') + '\n';
  }

  // json_string of tools/quern_board/text.cpp: the same escapes.
  function jsonString(s) {
    return '"' + s.replace(/["\\\n\r\t<\u0000-\u001f]/g, (c) => c === '"' ? '\\"' :
      c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : c === '\t' ? '\\t' :
        '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')) + '"';
  }

  // `quern-board export --format json` of one series.
  function seriesJson(s) {
    const head = '{"run": ' + jsonString(model.runs[s.run].name) + ', "tag": ' +
      jsonString(s.tag) + ', "step": ';
    const items = [];
    for (let i = 0; i < s.n; i++) {
      const w = s.walls[i], v = s.values[i];
      items.push(head + s.stepText(i) + ', "wall_time": ' +
        (Number.isFinite(w) ? formatWall(w) : 'null') + ', "value": ' +
        (Number.isFinite(v) ? formatValue(v) : 'null') + '}');
    }
    return items.length ? '[\n  ' + items.join(',\n  ') + '\n]\n' : '[]\n';
  }

  // -- the model --

  // A run keeps its colour for the life of the page: by run order at first,
  // the next free colour for runs that appear later (served pages).
  const colorOf = new Map();
  function assignColors(runs) {
    for (const r of runs) {
      if (!colorOf.has(r.name)) colorOf.set(r.name, PALETTE[colorOf.size % PALETTE.length]);
      r.color = colorOf.get(r.name);
    }
  }

  function buildModel(d) {
    const m = { runs: d.runs, byTag: new Map(), hist: new Map(), texts: new Map(),
      images: new Map() };
    assignColors(d.runs);
    for (const s of d.scalars) {
      const steps = decodeSteps(s.steps, s.n);
      const series = {
        // total: the points the series stands for (more than n when the
        // board kept only each bucket's first, lowest, highest and last).
        run: s.run, tag: s.tag, n: s.n, total: s.total || s.n, steps: steps.steps,
        walls: decodeWalls(s.walls, s.n), values: decodeValues(s.values, s.n),
        smoothCache: null,
        stepText: steps.text,
      };
      if (!m.byTag.has(s.tag)) m.byTag.set(s.tag, []);
      m.byTag.get(s.tag).push(series);
    }
    for (const [key, src] of [['hist', d.histograms], ['texts', d.texts], ['images', d.images]])
      for (const s of src) {
        if (!m[key].has(s.tag)) m[key].set(s.tag, []);
        m[key].get(s.tag).push(s);
      }
    return m;
  }

  function smoothed(s) {
    if (!s.smoothCache || s.smoothCache.w !== state.smoothing)
      s.smoothCache = { w: state.smoothing, ys: smooth(s.values, state.smoothing) };
    return s.smoothCache.ys;
  }

  function xOf(s, i) {
    if (state.x === 'relative') return s.walls[i] - model.runs[s.run].start;
    if (state.x === 'wall') return s.walls[i] * 1000;
    return s.steps[i];
  }

  function compile(text) {
    try {
      return { re: text ? new RegExp(text) : null, error: null };
    } catch (e) {
      return { re: null, error: e.message };
    }
  }

  function runVisible(i) {
    if (state.hidden.has(model.runs[i].name)) return false;
    const c = compile(state.runRegex);
    return !c.re || c.re.test(model.runs[i].name);
  }

  function tagVisible(tag) {
    const c = compile(state.tagRegex);
    return !c.re || c.re.test(tag);
  }

  // Indices of the points drawn: all of them, or per bucket the first, the
  // lowest, the highest and the last.
  function drawnIndices(ys) {
    const n = ys.length;
    if (n <= 4 * DRAW_BUCKETS) return null;
    const out = [];
    for (let b = 0; b < DRAW_BUCKETS; b++) {
      const lo = Math.floor(b * n / DRAW_BUCKETS), hi = Math.floor((b + 1) * n / DRAW_BUCKETS);
      if (hi <= lo) continue;
      let mn = lo, mx = lo;
      for (let i = lo; i < hi; i++) {
        if (ys[i] < ys[mn]) mn = i;
        if (ys[i] > ys[mx]) mx = i;
      }
      const pick = [lo, mn, mx, hi - 1].sort((a, b) => a - b);
      for (let k = 0; k < 4; k++) if (k === 0 || pick[k] !== pick[k - 1]) out.push(pick[k]);
    }
    return out;
  }

  // -- the charts --

  function fmt(v) {
    return Number.isFinite(v) ? Number(v.toPrecision(6)).toString() : String(v);
  }

  function isoTime(w) {
    return Number.isFinite(w) ? new Date(w * 1000).toISOString().replace('T', ' ') : '';
  }

  // What cannot be drawn (NaN, infinities; on a log axis, values <= 0) is a
  // gap in the line; read-outs and downloads still have the value.
  function drawable(y) {
    return Number.isFinite(y) && (!state.log || y > 0) ? y : NaN;
  }

  function chartData(tag) {
    const series = model.byTag.get(tag).filter((s) => runVisible(s.run));
    const withSmooth = state.smoothing > 0;
    const labels = ['x'];
    const colors = [];
    const opts = {};
    const cols = [];
    const mains = [];
    for (const s of series) {
      const run = model.runs[s.run];
      const sm = smoothed(s);
      mains.push(withSmooth ? sm : s.values);
      // Labels by run index: run names may be anything, labels must differ.
      const rawLabel = 'run ' + s.run;
      labels.push(rawLabel);
      colors.push(run.color);
      opts[rawLabel] = withSmooth ? { strokeWidth: 1, color: run.color + '40' } :
        { strokeWidth: 2, color: run.color };
      cols.push({ s: s, ys: s.values });
      if (withSmooth) {
        const label = 'run ' + s.run + ' smoothed';
        labels.push(label);
        colors.push(run.color);
        opts[label] = { strokeWidth: 2, color: run.color };
        cols.push({ s: s, ys: sm });
      }
    }
    // One row per x: every column's point at that x (null where it has none).
    const entries = [];
    let c0 = 0;
    for (const s of series) {
      // The values never change, so neither do the points drawn.
      if (s.drawn === undefined) s.drawn = drawnIndices(s.values);
      const idx = s.drawn;
      const ncols = withSmooth ? 2 : 1;
      const count = idx ? idx.length : s.n;
      for (let k = 0; k < count; k++) {
        const i = idx ? idx[k] : k;
        const x = xOf(s, i);
        if (!Number.isFinite(x)) continue; // no place on the axis
        entries.push([x, c0, drawable(s.values[i]),
          withSmooth ? drawable(smoothed(s)[i]) : null]);
      }
      c0 += ncols;
    }
    entries.sort((a, b) => a[0] - b[0]);
    const rows = [];
    for (const e of entries) {
      let row = rows.length ? rows[rows.length - 1] : null;
      if (!row || row[0] !== e[0] || row[e[1] + 1] !== null ||
          (withSmooth && row[e[1] + 2] !== null)) {
        row = new Array(cols.length + 1).fill(null);
        row[0] = e[0];
        rows.push(row);
      }
      row[e[1] + 1] = e[2];
      if (withSmooth) row[e[1] + 2] = e[3];
    }
    const ext = yExtent(mains, state.outliers, state.log);
    return { series, labels, colors, opts, rows, ext, drawn: entries.length };
  }

  function readout(card, x) {
    const rows = [];
    for (const s of card.d.series) {
      // The point of each run nearest to x.
      let best = -1, bd = Infinity;
      for (let i = 0; i < s.n; i++) {
        const dd = Math.abs(xOf(s, i) - x);
        if (dd < bd) { bd = dd; best = i; }
      }
      if (best < 0) continue;
      const run = model.runs[s.run];
      rows.push('<tr><td><span class="swatch" style="background:' + run.color + '"></span>' +
        esc(run.name) + '</td><td>' + fmt(smoothed(s)[best]) + '</td><td>' +
        fmt(s.values[best]) + '</td><td>' + s.stepText(best) + '</td><td>' +
        isoTime(s.walls[best]) + '</td><td>' + fmt(s.walls[best] - run.start) + ' s</td></tr>');
    }
    card.readout.innerHTML = rows.length ? '<table><tr><th>run</th><th>smoothed</th>' +
      '<th>value</th><th>step</th><th>time (UTC)</th><th>relative</th></tr>' +
      rows.join('') + '</table>' : '';
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
      '"': '&quot;' })[c]);
  }

  function download(name, text) {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], { type: name.endsWith('.json') ?
      'application/json' : 'text/csv' }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }

  function xLabel() {
    return state.x === 'step' ? 'step' : state.x === 'relative' ? 'relative time (s)' :
      'wall time';
  }

  // A wall-time tick (milliseconds, UTC) as a clock time: HH:MM:SS, with
  // milliseconds when the ticks are under a second apart (dygraphs'
  // granularity; without one, when the axis spans under 5 s), with the
  // date when the axis crosses midnight, the date alone for ticks days apart.
  function clockLabel(ms, range, gran) {
    const G = Dygraph.Granularity;
    const iso = new Date(ms).toISOString();
    const span = range[1] - range[0];
    const day = (t) => new Date(t).toISOString().slice(0, 10);
    const daily = gran !== undefined ? gran >= G.DAILY : span >= 3 * 86400000;
    if (daily)
      return iso.slice(11, 19) === '00:00:00' ? iso.slice(0, 10) :
        iso.slice(5, 10) + ' ' + iso.slice(11, 16);
    const withMs = gran !== undefined ? gran < G.SECONDLY : span < 5000;
    const time = withMs ? iso.slice(11, 23) : iso.slice(11, 19);
    return day(range[0]) !== day(range[1]) ? iso.slice(5, 10) + ' ' + time : time;
  }
  quern.clockLabel = clockLabel;

  // Wall time: milliseconds on a date axis (dygraphs' date ticks, labelled
  // as clock times); step and relative: numbers.
  function xAxisOptions() {
    if (state.x === 'wall')
      return { ticker: Dygraph.dateTicker, pixelsPerLabel: 110, axisLabelWidth: 100,
        axisLabelFormatter: (d, gran, opts, g) => clockLabel(d.getTime(), g.xAxisRange(), gran),
        valueFormatter: (ms) => isoTime(ms / 1000) };
    return { ticker: Dygraph.numericTicks, axisLabelFormatter: (v) => fmt(v),
      valueFormatter: (v) => fmt(v) };
  }

  function drawScalarCard(tag, card) {
    const d = chartData(tag);
    card.d = d;
    card.div.style.display = d.series.length ? '' : 'none';
    if (!d.series.length) return;
    let range = null;
    if (d.ext) {
      const [a, b] = d.ext;
      const pad = state.log ? 0 : (b - a) * 0.05 || Math.abs(a) * 0.1 || 1;
      range = state.log ? [a / 1.1, b * 1.1] : [a - pad, b + pad];
    }
    const options = {
      labels: d.labels, colors: d.colors, series: d.opts, file: d.rows,
      connectSeparatedPoints: true, legend: 'never', logscale: state.log, labelsUTC: true,
      valueRange: range, xlabel: xLabel(), animatedZooms: false,
      axes: { x: xAxisOptions(), y: { axisLabelWidth: 64,
        axisLabelFormatter: (v) => Number.isFinite(v) ? Number(v.toPrecision(4)).toString() :
          String(v) } },
      highlightCallback: (e, x) => readout(card, state.x === 'wall' ? x : x),
      unhighlightCallback: () => { card.readout.innerHTML = ''; },
      width: card.plot.clientWidth || 560, height: 300,
    };
    if (card.g) {
      card.g.updateOptions(options);
    } else {
      options.file = undefined;
      card.g = new Dygraph(card.plot, d.rows, options);
    }
    if (quern.firstChartMs === null) quern.firstChartMs = performance.now();
    // The download links: per run, CSV and JSON as `quern-board export`
    // (--format json) writes them.
    card.links.innerHTML = '';
    for (const s of d.series) {
      const name = model.runs[s.run].name;
      for (const [ext, make, flag] of [['csv', seriesCsv, ''],
        ['json', seriesJson, ' --format json']]) {
        if (s.total > s.n && data.live) {
          // A thinned series: all its points come from the server.
          const a = document.createElement('a');
          a.textContent = name + '.' + ext;
          a.href = 'export.' + ext + '?run=' + encodeURIComponent(name) + '&tag=' +
            encodeURIComponent(tag);
          a.title = s.total + ' points (the chart shows ' + s.n + ')';
          card.links.appendChild(a);
          continue;
        }
        const a = document.createElement('button');
        a.textContent = name + '.' + ext + (s.total > s.n ? ' (' + s.n + ' of ' + s.total +
          ' points)' : '');
        const cmd = 'quern-board export LOGDIR --run ' + name + ' --tag ' + tag + flag;
        a.title = s.total > s.n ? 'the points kept: each bucket\'s first, lowest, highest ' +
          'and last; ' + cmd + ' has all' : cmd;
        a.onclick = () => download('run-' + name.replace(/[^\w.-]+/g, '_') + '-tag-' +
          tag.replace(/[^\w.-]+/g, '_') + '.' + ext, make(s));
        card.links.appendChild(a);
      }
    }
  }

  function drawHistCard(tag, card) {
    card.body.innerHTML = '';
    card.gs = [];
    for (const h of model.hist.get(tag)) {
      if (!runVisible(h.run)) continue;
      const run = model.runs[h.run];
      const box = el('div', 'hist');
      box.appendChild(el('div', 'histtitle', run.name));
      const plot = el('div', 'plot small');
      box.appendChild(plot);
      card.body.appendChild(box);
      // TensorBoard's distribution view: nested bands between the basis
      // points (0/100, 6.68/93.32, 15.87/84.13, 30.85/69.15 %) around the median.
      const rows = h.points.map((p) => {
        const x = state.x === 'step' ? p[0] : state.x === 'wall' ? p[1] * 1000 : p[1] - run.start;
        const b = p.slice(2);
        return [x, [b[0], b[4], b[8]], [b[1], b[4], b[7]], [b[2], b[4], b[6]], [b[3], b[4], b[5]]];
      }).sort((a, b) => a[0] - b[0]);
      const g = new Dygraph(plot, rows, {
        labels: ['x', '0-100%', '6.68-93.32%', '15.87-84.13%', '30.85-69.15%'],
        customBars: true, fillAlpha: 0.2, colors: [run.color, run.color, run.color, run.color],
        legend: 'follow', xlabel: xLabel(), width: 360, height: 200, animatedZooms: false,
        labelsUTC: true,
        axes: { x: xAxisOptions() },
      });
      card.gs.push(g);
    }
    card.div.style.display = card.gs.length ? '' : 'none';
  }

  // A text summary as TensorBoard shows it: markdown (GitHub's, tables
  // included) rendered by marked, then sanitized by DOMPurify so that no
  // HTML or script of a summary runs.
  function markdown(text) {
    const html = marked.parse(text, { gfm: true, headerIds: false, mangle: false });
    // A DOM fragment, appended as it is: never parsed again as HTML.
    return DOMPurify.sanitize(html, { USE_PROFILES: { html: true },
      RETURN_DOM_FRAGMENT: true });
  }

  function drawTextCard(tag, card) {
    card.body.innerHTML = '';
    const table = el('table', 'text');
    const head = table.insertRow();
    for (const h of ['run', 'step', 'text']) head.appendChild(el('th', '', h));
    let rows = 0;
    for (const t of model.texts.get(tag)) {
      if (!runVisible(t.run)) continue;
      const run = model.runs[t.run];
      for (const p of t.points) {
        const tr = table.insertRow();
        tr.className = 'textrow';
        const who = tr.insertCell();
        const swatch = el('span', 'swatch');
        swatch.style.background = run.color;
        who.appendChild(swatch);
        who.appendChild(document.createTextNode(run.name));
        tr.insertCell().textContent = String(p[0]);
        const cell = tr.insertCell();
        cell.className = 'markdown';
        cell.appendChild(markdown(p[2]));
        rows++;
      }
    }
    if (rows) card.body.appendChild(table);
    card.div.style.display = rows ? '' : 'none';
  }

  function drawImageCard(tag, card) {
    card.body.innerHTML = '';
    let shown = 0;
    for (const t of model.images.get(tag)) {
      if (!runVisible(t.run)) continue;
      const run = model.runs[t.run];
      for (const p of t.points) {
        const f = el('figure');
        const img = document.createElement('img');
        img.src = p[4];
        img.title = p[2] + ' x ' + p[3];
        img.alt = tag + ' ' + run.name + ' step ' + p[0];
        f.appendChild(img);
        f.appendChild(el('figcaption', '', run.name + ', step ' + p[0]));
        card.body.appendChild(f);
        shown++;
      }
    }
    card.div.style.display = shown ? '' : 'none';
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // -- the pipeline view (docs/board.md, "The input pipeline"; TB-3, TB-4) --

  // What input_summaries::add_telemetry writes (docs/input.md, TL-6, TL-8,
  // TL-9): the structure as the text `pipeline/graph`, the figures as scalars
  // under each thing's `tag`, the verdict as the text `pipeline/verdict`.
  const GRAPH_TAG = 'pipeline/graph';
  const VERDICT_TAG = 'pipeline/verdict';
  const WAIT_RE = /^consumer\/.+\/wait_fraction$/;
  const SHARE_COLORS = { busy: '#2ca02c', input: '#1f77b4', room: '#ff7f0e' };
  const SVG_NS = 'http://www.w3.org/2000/svg';
  let arrowIds = 0;

  function inSpan(step) {
    return (state.pipeFrom === null || step >= state.pipeFrom) &&
      (state.pipeTo === null || step <= state.pipeTo);
  }

  // The mean of run `run`'s scalar `tag` over the points in the span, and
  // how many there were (null: none).
  function spanMean(run, tag) {
    const s = (model.byTag.get(tag) || []).find((x) => x.run === run);
    if (!s) return null;
    let sum = 0, n = 0;
    for (let i = 0; i < s.n; i++)
      if (inSpan(s.steps[i]) && Number.isFinite(s.values[i])) { sum += s.values[i]; n++; }
    return n ? { mean: sum / n, n } : null;
  }

  // The run's structure: the last `pipeline/graph` written at or before the
  // span's end (the first one if all are later).
  function graphOf(run) {
    const t = (model.texts.get(GRAPH_TAG) || []).find((x) => x.run === run);
    if (!t || !t.points.length) return null;
    let pick = t.points[0];
    for (const p of t.points) if (state.pipeTo === null || p[0] <= state.pipeTo) pick = p;
    try {
      const g = JSON.parse(pick[2]);
      for (const key of ['stages', 'queues', 'consumers'])
        if (!Array.isArray(g[key])) throw new Error('no "' + key + '" list');
      return { step: pick[0], g };
    } catch (e) {
      return { step: pick[0], error: e.message };
    }
  }

  function lastVerdict(run) {
    const t = (model.texts.get(VERDICT_TAG) || []).find((x) => x.run === run);
    let out = null;
    for (const p of t ? t.points : []) if (inSpan(p[0])) out = p;
    return out;
  }

  function pct(x) {
    return x === null || x === undefined ? 'n/a' : Math.round(100 * x) + ' %';
  }

  function millis(seconds) {
    return seconds === null || seconds === undefined ? 'n/a' :
      Number((1000 * seconds).toPrecision(3)) + ' ms';
  }

  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const k of Object.keys(attrs)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // The figures of one run's pipeline over the span: per stage its shares
  // and how often the verdict named it, per queue its fill, per consumer its
  // exposed wait; the limiting stage is the one the verdicts named most
  // often (none when no reading named a stage).
  function pipelineFigures(run, g) {
    const mean = (tag) => { const m = spanMean(run, tag); return m ? m.mean : null; };
    const stages = g.stages.map((s) => ({ name: String(s.name), input: String(s.input || ''),
      queue: String(s.queue), workers: (s.workers || []).length,
      busy: mean(s.tag + '/busy'), input_share: mean(s.tag + '/waiting_for_input'),
      room: mean(s.tag + '/waiting_for_room'), limiting: mean(s.tag + '/limiting'),
      readings: (spanMean(run, s.tag + '/busy') || { n: 0 }).n }));
    const queues = new Map(g.queues.map((q) => [String(q.name), { name: String(q.name),
      capacity: q.capacity, fill: mean(q.tag + '/fill'),
      enqueue_wait: mean(q.tag + '/enqueue_wait_seconds'),
      dequeue_wait: mean(q.tag + '/dequeue_wait_seconds') }]));
    const consumers = g.consumers.map((c) => ({ queue: String(c.queue),
      wait: mean(c.tag + '/wait_fraction') }));
    let limiting = null;
    for (const s of stages)
      if (s.limiting > 0 && (!limiting || s.limiting > limiting.limiting)) limiting = s;
    return { stages, queues, consumers, limiting: limiting ? limiting.name : '' };
  }

  // Lays the pipeline out with dagre (left to right: stages and the trainer
  // as boxes, each queue as the arrows from the stages feeding it to those
  // reading it, labelled with its fill) and draws it as SVG where dagre put
  // each box, arrow and label.
  function drawPipeline(f) {
    const NODE_W = 224, NODE_H = 78, LABEL_W = 124, LABEL_H = 30;
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: 'LR', nodesep: 24, ranksep: 40, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const s of f.stages) g.setNode('s:' + s.name, { width: NODE_W, height: NODE_H, stage: s });
    f.consumers.forEach((c, i) => g.setNode('c:' + i, { width: 150, height: 52, consumer: c }));
    let edges = 0;
    const queueNames = new Set([...f.queues.keys(), ...f.stages.map((s) => s.queue),
      ...f.stages.map((s) => s.input).filter((q) => q), ...f.consumers.map((c) => c.queue)]);
    for (const q of queueNames) {
      let from = f.stages.filter((s) => s.queue === q).map((s) => 's:' + s.name);
      let to = f.stages.filter((s) => s.input === q).map((s) => 's:' + s.name)
        .concat(f.consumers.map((c, i) => c.queue === q ? 'c:' + i : null).filter((x) => x));
      if (!from.length && !to.length) continue;
      // A queue fed or read outside the pipeline's stages still shows.
      if (!from.length) { from = ['o:' + q]; g.setNode(from[0], { width: 110, height: 30, outside: 'fed outside' }); }
      if (!to.length) { to = ['u:' + q]; g.setNode(to[0], { width: 110, height: 30, outside: 'read outside' }); }
      for (const a of from)
        for (const b of to) {
          // Wide enough for the queue's name (about 7 px a character).
          g.setEdge(a, b, { width: Math.max(LABEL_W, 7 * q.length + 10), height: LABEL_H,
            labelpos: 'c', queue: q }, q + '#' + edges);
          edges++;
        }
    }
    dagre.layout(g);
    const gr = g.graph();
    const svg = svgEl('svg', { width: Math.ceil(gr.width), height: Math.ceil(gr.height),
      class: 'pipeline-graph' });
    const defs = svgEl('defs', {});
    // One arrow head per drawing: ids must differ between the runs' views.
    const arrow = 'quern-arrow-' + (++arrowIds);
    const marker = svgEl('marker', { id: arrow, viewBox: '0 0 10 10', refX: 10, refY: 5,
      markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' });
    marker.appendChild(svgEl('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#777' }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    for (const e of g.edges()) {
      const ed = g.edge(e);
      const q = f.queues.get(ed.queue) || { name: ed.queue, fill: null, capacity: 0,
        enqueue_wait: null, dequeue_wait: null };
      const grp = svgEl('g', { class: 'queue' });
      grp.dataset.queue = q.name;
      grp.dataset.fill = q.fill === null ? '' : String(q.fill);
      // Its waits at the queue (TL-11), as the label's tooltip.
      for (const k of ['enqueue_wait', 'dequeue_wait'])
        grp.dataset[k] = q[k] === null ? '' : String(q[k]);
      grp.appendChild(svgEl('title', {}, 'queue ' + q.name + ': fill ' + pct(q.fill) +
        '; an enqueue waited ' + millis(q.enqueue_wait) + ' for room, a dequeue ' +
        millis(q.dequeue_wait) + ' for rows (means)'));
      grp.appendChild(svgEl('path', { d: ed.points.map((p, i) => (i ? 'L' : 'M') + p.x + ' ' +
        p.y).join(' '), fill: 'none', stroke: '#777', 'stroke-width': 1.5,
        'marker-end': 'url(#' + arrow + ')' }));
      const lw = ed.width, x = ed.x - lw / 2, y = ed.y - LABEL_H / 2;
      grp.appendChild(svgEl('rect', { x, y, width: lw, height: LABEL_H, rx: 3,
        fill: '#fff', stroke: '#bbb' }));
      grp.appendChild(svgEl('text', { x: x + 4, y: y + 12, class: 'qname' }, q.name));
      // The fill as a bar across the label, and as a number.
      grp.appendChild(svgEl('rect', { x: x + 4, y: y + 17, width: lw - 60, height: 8,
        fill: '#eee' }));
      grp.appendChild(svgEl('rect', { x: x + 4, y: y + 17, height: 8, fill: '#9467bd',
        width: Math.max(0, Math.min(1, q.fill || 0)) * (lw - 60) }));
      grp.appendChild(svgEl('text', { x: x + lw - 52, y: y + 25 }, 'fill ' + pct(q.fill)));
      svg.appendChild(grp);
    }
    for (const id of g.nodes()) {
      const n = g.node(id);
      const x = n.x - n.width / 2, y = n.y - n.height / 2;
      const grp = svgEl('g', {});
      if (n.stage) {
        const s = n.stage;
        const limiting = s.name === f.limiting;
        grp.setAttribute('class', 'stage' + (limiting ? ' limiting' : ''));
        grp.dataset.name = s.name;
        for (const k of ['busy', 'input_share', 'room', 'limiting'])
          grp.dataset[k] = s[k] === null ? '' : String(s[k]);
        grp.appendChild(svgEl('rect', { x, y, width: n.width, height: n.height, rx: 4,
          fill: limiting ? '#ffebee' : '#fff', stroke: limiting ? '#c62828' : '#888',
          'stroke-width': limiting ? 3 : 1 }));
        grp.appendChild(svgEl('text', { x: x + 6, y: y + 15, class: 'sname' }, s.name +
          (s.workers > 1 ? ' (' + s.workers + ' workers)' : '')));
        // The shares of the span as one bar: busy, waiting for input,
        // waiting for room, and the rest (idle) left empty.
        const W = n.width - 12;
        let bx = x + 6;
        grp.appendChild(svgEl('rect', { x: bx, y: y + 21, width: W, height: 12, fill: '#eee' }));
        for (const [k, key] of [['busy', 'busy'], ['input', 'input_share'], ['room', 'room']]) {
          const w = Math.max(0, Math.min(1, s[key] || 0)) * W;
          grp.appendChild(svgEl('rect', { x: bx, y: y + 21, width: w, height: 12,
            fill: SHARE_COLORS[k], class: 'share-' + k }));
          bx += w;
        }
        grp.appendChild(svgEl('text', { x: x + 6, y: y + 47 }, 'busy ' + pct(s.busy) +
          ', input ' + pct(s.input_share) + ', room ' + pct(s.room)));
        grp.appendChild(svgEl('text', { x: x + 6, y: y + 64, class: limiting ? 'limiting-note' :
          '' }, limiting ? 'limiting in ' + pct(s.limiting) + ' of ' + s.readings + ' readings' :
          s.readings + ' reading' + (s.readings === 1 ? '' : 's') + ' in the span'));
      } else if (n.consumer) {
        grp.setAttribute('class', 'consumer');
        grp.dataset.queue = n.consumer.queue;
        grp.appendChild(svgEl('rect', { x, y, width: n.width, height: n.height, rx: 4,
          fill: '#f5f5f5', stroke: '#888' }));
        grp.appendChild(svgEl('text', { x: x + 6, y: y + 18, class: 'sname' }, 'the trainer'));
        grp.appendChild(svgEl('text', { x: x + 6, y: y + 38 }, 'exposed wait ' +
          pct(n.consumer.wait)));
      } else {
        grp.setAttribute('class', 'outside');
        grp.appendChild(svgEl('rect', { x, y, width: n.width, height: n.height, rx: 4,
          fill: '#fafafa', stroke: '#bbb', 'stroke-dasharray': '4 3' }));
        grp.appendChild(svgEl('text', { x: x + 6, y: y + 19 }, n.outside));
      }
      svg.appendChild(grp);
    }
    return { svg, edges };
  }

  function legend() {
    const div = el('div', 'pipeline-legend');
    for (const [k, label] of [['busy', 'busy'], ['input', 'waiting for input'],
      ['room', 'waiting for room']]) {
      const sw = el('span', 'swatch');
      sw.style.background = SHARE_COLORS[k];
      div.appendChild(sw);
      div.appendChild(document.createTextNode(label + '  '));
    }
    div.appendChild(document.createTextNode('(the rest of each bar: idle); red: the limiting ' +
      'stage; arrows: queues, with their fill'));
    return div;
  }

  // One view per shown run that wrote its pipeline's structure.
  function drawPipelineCard(tag, card) {
    card.body.innerHTML = '';
    card.views = [];
    for (const t of model.texts.get(GRAPH_TAG) || []) {
      if (!runVisible(t.run)) continue;
      const run = model.runs[t.run];
      const box = el('div', 'pipeview');
      box.dataset.run = run.name;
      const title = el('div', 'histtitle');
      const sw = el('span', 'swatch');
      sw.style.background = run.color;
      title.appendChild(sw);
      title.appendChild(document.createTextNode(run.name));
      box.appendChild(title);
      const gr = graphOf(t.run);
      const view = { run: run.name, graphStep: gr ? gr.step : null };
      if (!gr || gr.error) {
        view.error = gr ? GRAPH_TAG + ' at step ' + gr.step + ' is not the structure ' +
          'quern writes: ' + gr.error : 'no ' + GRAPH_TAG;
        box.appendChild(el('p', 'problems', view.error));
      } else {
        const f = pipelineFigures(t.run, gr.g);
        const { svg, edges } = drawPipeline(f);
        box.appendChild(svg);
        const v = lastVerdict(t.run);
        const p = el('p', 'verdict', v ? 'verdict at step ' + v[0] + ': ' + v[2] :
          'no verdict in the span');
        box.appendChild(p);
        Object.assign(view, { limiting: f.limiting, edges, verdict: v ? v[2] : null,
          stages: f.stages, queues: [...f.queues.values()], consumers: f.consumers });
      }
      card.body.appendChild(box);
      card.views.push(view);
    }
    if (card.views.length) card.body.appendChild(legend());
    card.div.style.display = card.views.length ? '' : 'none';
  }

  // The loss the exposed wait is drawn beside: `loss`, or a tag ending in
  // `/loss`, or the first tag with `loss` in it.
  function lossTag() {
    const tags = [...model.byTag.keys()].sort();
    return tags.find((t) => t === 'loss') || tags.find((t) => /\/loss$/.test(t)) ||
      tags.find((t) => /loss/i.test(t)) || null;
  }

  // The section at the top of the page for runs with telemetry: the span
  // of steps, the pipeline view, and the exposed-wait charts beside the loss.
  function buildPipelineSection(main) {
    const waits = [...model.byTag.keys()].filter((t) => WAIT_RE.test(t)).sort();
    const hasGraph = model.texts.has(GRAPH_TAG);
    if (!waits.length && !hasGraph) return;
    const section = el('section', 'group pipeline');
    section.id = 'pipeline';
    section.appendChild(el('h2', '', 'input pipeline'));
    const span = el('div', 'pipeline-span');
    span.innerHTML = '<label>Steps from <input id="pipe-from" type="number" ' +
      'placeholder="first"></label> <label>to <input id="pipe-to" type="number" ' +
      'placeholder="last"></label> <span class="kind">the view shows the mean of each ' +
      'figure over the telemetry written in these steps</span>';
    section.appendChild(span);
    const add = (kind, tag, key, draw, label) => addCard(section, {
      kind, tag, key, draw, label, top: true,
      title: kind === 'pipeline' ? 'pipeline: stages and queues' : tag,
    });
    if (hasGraph)
      add('pipeline', GRAPH_TAG, 'pipeline:' + GRAPH_TAG, drawPipelineCard,
        'busy / waiting for input / waiting for room per stage, fill per queue');
    const loss = lossTag();
    if (loss && waits.length) add('scalars', loss, 'top:' + loss, drawScalarCard);
    for (const w of waits) add('scalars', w, 'top:' + w, drawScalarCard);
    main.appendChild(section);
    const $ = (id) => document.getElementById(id);
    $('pipe-from').value = state.pipeFrom === null ? '' : state.pipeFrom;
    $('pipe-to').value = state.pipeTo === null ? '' : state.pipeTo;
    const changed = () => {
      const num = (v) => v === '' || !Number.isFinite(Number(v)) ? null : Number(v);
      state.pipeFrom = num($('pipe-from').value);
      state.pipeTo = num($('pipe-to').value);
      writeFragment();
      const card = charts.get('pipeline:' + GRAPH_TAG);
      if (card && cardShown(card)) drawCard(card);
    };
    $('pipe-from').onchange = changed;
    $('pipe-to').onchange = changed;
  }

  // -- layout --

  // One card of `kind` for `tag` in `section`, drawn by `draw` when shown,
  // kept in `charts` under `key`; `top` marks the pipeline section's copies.
  function addCard(section, { kind, tag, key, draw, label, title, top }) {
    const div = el('div', 'card ' + kind + (top ? ' top' : ''));
    div.dataset.tag = tag;
    div.dataset.kind = kind;
    div.appendChild(el('h3', '', title));
    const card = { div, kind, draw, tag };
    if (top) card.top = true;
    if (kind === 'scalars') {
      card.plot = el('div', 'plot');
      card.readout = el('div', 'readout');
      card.links = el('div', 'links');
      div.appendChild(card.plot);
      div.appendChild(card.readout);
      div.appendChild(card.links);
    } else {
      div.appendChild(el('div', 'kind', label));
      card.body = el('div', 'body');
      div.appendChild(card.body);
    }
    section.appendChild(div);
    div.quernCard = card;
    observer.observe(div);
    charts.set(key, card);
  }

  function groupOf(tag) {
    const i = tag.indexOf('/');
    return i < 0 ? tag : tag.slice(0, i);
  }

  function buildCards() {
    const main = document.getElementById('cards');
    observer.disconnect();
    main.innerHTML = '';
    charts.clear();
    buildPipelineSection(main);
    const kinds = [['scalars', model.byTag, drawScalarCard, 'chart'],
      ['histograms', model.hist, drawHistCard, 'distribution over steps'],
      ['texts', model.texts, drawTextCard, 'text'], ['images', model.images, drawImageCard, 'images']];
    const groups = new Map();
    for (const [kind, map, draw, label] of kinds)
      for (const tag of map.keys()) {
        const g = groupOf(tag);
        if (!groups.has(g)) groups.set(g, []);
        groups.get(g).push({ kind, tag, draw, label });
      }
    for (const name of [...groups.keys()].sort()) {
      const section = el('section', 'group');
      section.appendChild(el('h2', '', name));
      const items = groups.get(name).sort((a, b) => a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0);
      for (const it of items)
        addCard(section, { ...it, key: it.kind + ':' + it.tag, title: it.tag, top: false });
      main.appendChild(section);
    }
  }

  function cardShown(card) {
    if (!tagVisible(card.tag)) return false;
    const map = { scalars: model.byTag, histograms: model.hist, texts: model.texts,
      images: model.images, pipeline: model.texts }[card.kind];
    return map.get(card.tag).some((s) => runVisible(s.run));
  }

  function drawCard(card) {
    card.dirty = false;
    try {
      card.draw(card.tag, card);
    } catch (e) {
      quern.errors.push(card.tag + ': ' + e.message);
      throw e;
    }
  }

  // Cards are drawn when they come near the window (a log directory may
  // have thousands of tags); force draws every shown card now.
  function drawAll(force) {
    const shown = [];
    for (const card of charts.values()) {
      const on = cardShown(card);
      card.div.style.display = on ? '' : 'none';
      card.dirty = on;
      if (on) shown.push(card);
    }
    for (const g of document.querySelectorAll('section.group')) {
      const any = [...g.querySelectorAll('.card')].some((c) => c.style.display !== 'none');
      g.style.display = any ? '' : 'none';
    }
    const h = window.innerHeight || 900;
    const now = force ? shown : shown.filter((c) => {
      const r = c.div.getBoundingClientRect();
      return r.bottom > -400 && r.top < h + 400;
    });
    for (const card of now) drawCard(card);
  }

  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const card = e.isIntersecting && e.target.quernCard;
      if (card && card.dirty) drawCard(card);
    }
  }, { rootMargin: '400px' });

  quern.flush = () => {
    for (const card of charts.values()) if (card.dirty) drawCard(card);
  };

  function buildRuns() {
    const div = document.getElementById('runs');
    if (!model.runs.length) {
      div.innerHTML = '<p class="empty">No runs yet: runs written under the log directory ' +
        (data.live ? 'appear here as they are written.' : 'appear on the page made after.') +
        '</p>';
      buildHparams();
      showStatus();
      return;
    }
    const rows = model.runs.map((r, i) => {
      const points = [...model.byTag.values()].flat().filter((s) => s.run === i)
        .reduce((a, s) => a + s.total, 0);
      const problems = r.problems.length ? '<ul class="problems">' +
        r.problems.map((p) => '<li>' + esc(p) + '</li>').join('') + '</ul>' : '';
      const other = Object.keys(r.other).map((k) => esc(k) + ' ' + r.other[k]).join(', ');
      // What a restart purged (TB-2), as inspect says it.
      const purged = (r.purged || []).length ? '<ul class="purged">' +
        r.purged.map((p) => '<li>' + esc(p) + '</li>').join('') + '</ul>' : '';
      return '<tr data-run="' + esc(r.name) + '"><td><input type="checkbox" data-i="' + i +
        '"' + (state.hidden.has(r.name) ? '' : ' checked') + '></td><td><span class="swatch"' +
        ' style="background:' + r.color + '"></span>' + esc(r.name) + '</td><td>' +
        isoTime(r.start) + '</td><td>' + r.files.length + '</td><td>' + points +
        '</td><td>' + other + purged + problems + '</td></tr>';
    });
    div.innerHTML = '<table><tr><th></th><th>run</th><th>started (UTC)</th><th>files</th>' +
      '<th>scalar points</th><th>notes</th></tr>' + rows.join('') + '</table>';
    for (const cb of div.querySelectorAll('input[type=checkbox]'))
      cb.onchange = () => {
        const name = model.runs[Number(cb.dataset.i)].name;
        if (cb.checked) state.hidden.delete(name); else state.hidden.add(name);
        writeFragment();
        buildHparams();
        drawAll();
      };
    buildHparams();
    showStatus();
  }

  // -- hparams (TensorBoard's hparams plugin) --

  // The columns: every hyper-parameter by name, then per metric its last
  // value and its lowest. Metrics: those the runs declare or, when none does,
  // as TensorBoard infers them, every scalar tag of the runs with hparams.
  function hparamsColumns() {
    const runs = model.runs.map((r, i) => ({ r, i })).filter((x) => x.r.hparams);
    const names = [...new Set(runs.flatMap((x) => Object.keys(x.r.hparams)))].sort();
    let metrics = [...new Set(runs.flatMap((x) => x.r.metrics))];
    if (!metrics.length)
      metrics = [...model.byTag.keys()].filter((t) =>
        model.byTag.get(t).some((s) => model.runs[s.run].hparams)).sort();
    const cols = [{ key: 'run', label: 'run' }];
    for (const n of names) cols.push({ key: 'h:' + n, label: n, hparam: n });
    for (const m of metrics) cols.push({ key: 'm:' + m, label: m, metric: m, last: true });
    for (const m of metrics) cols.push({ key: 'min:' + m, label: 'min(' + m + ')', metric: m });
    return { runs, cols };
  }

  // A cell: {text, num} (num for numbers and bools, for sorting), or null.
  function hparamsCell(col, run, i) {
    if (col.key === 'run') return { text: run.name, num: null };
    if (col.hparam !== undefined) {
      if (!Object.prototype.hasOwnProperty.call(run.hparams, col.hparam)) return null;
      const v = run.hparams[col.hparam];
      return typeof v === 'number' ? { text: formatHparam(v), num: v } :
        typeof v === 'boolean' ? { text: String(v), num: v ? 1 : 0 } : { text: String(v), num: null };
    }
    const s = (model.byTag.get(col.metric) || []).find((x) => x.run === i);
    if (!s || !s.n) return null;
    let v = s.values[s.n - 1];
    if (!col.last) {
      v = NaN;
      for (let k = 0; k < s.n; k++) {
        const y = s.values[k];
        if (!Number.isNaN(y) && !(y >= v)) v = y; // the first number, then lower ones
      }
    }
    return { text: formatValue(v), num: v };
  }

  function formatHparam(v) {
    // The shortest form that reads back as the same number.
    return String(v);
  }

  function buildHparams() {
    const div = document.getElementById('hparams');
    const { runs, cols } = hparamsColumns();
    div.innerHTML = '';
    if (!runs.length) return;
    div.appendChild(el('h2', '', 'hparams'));
    const label = el('label', '', 'Filter ');
    const input = el('input');
    input.id = 'hp-filter';
    input.placeholder = 'text in a run or a value';
    input.value = state.hpText;
    label.appendChild(input);
    div.appendChild(label);
    const table = el('table', 'hparams');
    const head = el('tr');
    head.appendChild(el('th', ''));
    for (const c of cols) {
      const th = el('th', 'sortable', c.label + (state.hpSort === c.key ? (state.hpDesc ?
        ' \u25bc' : ' \u25b2') : ''));
      th.dataset.key = c.key;
      th.title = 'sort by ' + c.label;
      th.onclick = () => {
        if (state.hpSort === c.key) state.hpDesc = !state.hpDesc;
        else { state.hpSort = c.key; state.hpDesc = false; }
        writeFragment();
        buildHparams();
      };
      head.appendChild(th);
    }
    table.appendChild(head);
    let rows = runs.map((x) => ({ x, cells: cols.map((c) => hparamsCell(c, x.r, x.i)) }));
    const needle = state.hpText.toLowerCase();
    if (needle)
      rows = rows.filter((row) => row.cells.some((c) => c && c.text.toLowerCase().includes(needle)));
    const k = cols.findIndex((c) => c.key === state.hpSort);
    if (k >= 0) {
      // Numbers by value, text by its order; empty cells last either way.
      const cmp = (a, b) => {
        if (a.num !== null && b.num !== null && !Number.isNaN(a.num) && !Number.isNaN(b.num))
          return a.num - b.num;
        return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
      };
      rows.sort((p, q) => {
        const a = p.cells[k], b = q.cells[k];
        if (!a || !b) return (a ? 0 : 1) - (b ? 0 : 1);
        return state.hpDesc ? cmp(b, a) : cmp(a, b);
      });
    }
    for (const row of rows) {
      const tr = el('tr', 'hprow');
      tr.dataset.run = row.x.r.name;
      const box = el('td');
      const cb = el('input');
      cb.type = 'checkbox';
      cb.checked = !state.hidden.has(row.x.r.name);
      cb.title = 'show this run in the charts';
      cb.onchange = () => {
        if (cb.checked) state.hidden.delete(row.x.r.name); else state.hidden.add(row.x.r.name);
        writeFragment();
        buildRuns();
        drawAll();
      };
      box.appendChild(cb);
      tr.appendChild(box);
      row.cells.forEach((c, j) => {
        const td = el('td', cols[j].key === 'run' ? 'run' : c && c.num !== null ? 'num' : '',
          c ? c.text : '');
        if (cols[j].key === 'run') {
          const sw = el('span', 'swatch');
          sw.style.background = row.x.r.color;
          td.prepend(sw);
        }
        tr.appendChild(td);
      });
      table.appendChild(tr);
    }
    div.appendChild(table);
    input.oninput = () => {
      state.hpText = input.value;
      writeFragment();
      buildHparams();
      const again = document.getElementById('hp-filter');
      again.focus();
      again.setSelectionRange(again.value.length, again.value.length);
    };
  }

  function showStatus() {
    const bad = model.runs.filter((r) => r.problems.length).length;
    document.getElementById('status').textContent = (model.runs.length ?
      model.runs.length + ' run' + (model.runs.length === 1 ? '' : 's') : 'no runs yet') +
      (bad ? ', ' + bad + ' with problems' : '') + (data.live ? ' - live' : '');
  }

  function buildControls() {
    const c = document.getElementById('controls');
    c.innerHTML =
      '<label>Runs <input id="run-re" placeholder="regular expression"></label>' +
      '<label>Tags <input id="tag-re" placeholder="regular expression"></label>' +
      '<label>Smoothing <input id="smoothing" type="range" min="0" max="0.999" step="0.001">' +
      '<input id="smoothing-n" type="number" min="0" max="0.999" step="0.001"></label>' +
      '<label>X axis <select id="x-axis"><option value="step">step</option>' +
      '<option value="relative">relative</option><option value="wall">wall time</option>' +
      '</select></label>' +
      '<label><input id="log-y" type="checkbox"> log y</label>' +
      '<label><input id="outliers" type="checkbox"> ignore outliers</label>' +
      '<span id="filter-error"></span>';
    const $ = (id) => document.getElementById(id);
    $('run-re').value = state.runText;
    $('tag-re').value = state.tagText;
    $('smoothing').value = state.smoothing;
    $('smoothing-n').value = state.smoothing;
    $('x-axis').value = state.x;
    $('log-y').checked = state.log;
    $('outliers').checked = state.outliers;
    // A bad expression (typed, or from the address) is marked and named;
    // the last good one goes on filtering. Either way the address follows.
    const filters = (initial) => {
      state.runText = $('run-re').value;
      state.tagText = $('tag-re').value;
      const r = compile(state.runText), t = compile(state.tagText);
      $('run-re').classList.toggle('invalid', !!r.error);
      $('tag-re').classList.toggle('invalid', !!t.error);
      $('filter-error').textContent = r.error ? 'runs: ' + r.error : t.error ? 'tags: ' +
        t.error : '';
      if (!initial) writeFragment();
      if (!r.error) state.runRegex = state.runText;
      if (!t.error) state.tagRegex = state.tagText;
      if (!initial && !r.error && !t.error) drawAll();
    };
    $('run-re').oninput = () => filters(false);
    $('tag-re').oninput = () => filters(false);
    const setSmoothing = (v) => {
      const w = Math.min(Math.max(Number(v) || 0, 0), 0.999);
      state.smoothing = w;
      $('smoothing').value = w;
      $('smoothing-n').value = w;
      writeFragment();
      drawAll();
    };
    $('smoothing').oninput = () => setSmoothing($('smoothing').value);
    $('smoothing-n').onchange = () => setSmoothing($('smoothing-n').value);
    const changed = (f) => () => { f(); writeFragment(); drawAll(); };
    $('x-axis').onchange = changed(() => { state.x = $('x-axis').value; });
    $('log-y').onchange = changed(() => { state.log = $('log-y').checked; });
    $('outliers').onchange = changed(() => { state.outliers = $('outliers').checked; });
    filters(true);
  }

  // The view in the address's fragment: #smoothing=0.9&x=relative&log=1&
  // outliers=0&run=REGEX&tag=REGEX&hide=RUN&hide=RUN (what differs from the
  // defaults). Every change of the view rewrites it (a link to the view);
  // loading it restores the view, a bad expression shown as a typed one.
  function readFragment() {
    const params = new URLSearchParams(location.hash.slice(1));
    Object.assign(state, { smoothing: TB_DEFAULT_SMOOTHING, x: 'step', log: false,
      outliers: true, runRegex: '', tagRegex: '', runText: '', tagText: '', hpText: '',
      hpSort: '', hpDesc: false, pipeFrom: null, pipeTo: null });
    state.hidden.clear();
    if (params.has('smoothing')) state.smoothing = Math.min(Math.max(
      Number(params.get('smoothing')) || 0, 0), 0.999);
    if (['step', 'relative', 'wall'].includes(params.get('x'))) state.x = params.get('x');
    if (params.has('log')) state.log = params.get('log') === '1';
    if (params.has('outliers')) state.outliers = params.get('outliers') !== '0';
    if (params.has('run')) state.runText = params.get('run');
    if (params.has('tag')) state.tagText = params.get('tag');
    for (const name of params.getAll('hide')) state.hidden.add(name);
    if (params.has('hp')) state.hpText = params.get('hp');
    if (params.has('hpsort')) state.hpSort = params.get('hpsort');
    if (params.has('hpdesc')) state.hpDesc = params.get('hpdesc') === '1';
    for (const [key, name] of [['pipeFrom', 'from'], ['pipeTo', 'to']])
      if (params.get(name) !== null && params.get(name) !== '' &&
          Number.isFinite(Number(params.get(name)))) state[key] = Number(params.get(name));
    return { selftest: params.has('selftest'), bench: params.has('bench') };
  }

  function writeFragment() {
    const params = new URLSearchParams();
    if (state.smoothing !== TB_DEFAULT_SMOOTHING) params.set('smoothing', state.smoothing);
    if (state.x !== 'step') params.set('x', state.x);
    if (state.log) params.set('log', '1');
    if (!state.outliers) params.set('outliers', '0');
    if (state.runText) params.set('run', state.runText);
    if (state.tagText) params.set('tag', state.tagText);
    for (const name of [...state.hidden].sort()) params.append('hide', name);
    if (state.hpText) params.set('hp', state.hpText);
    if (state.hpSort) params.set('hpsort', state.hpSort);
    if (state.hpDesc) params.set('hpdesc', '1');
    if (state.pipeFrom !== null) params.set('from', state.pipeFrom);
    if (state.pipeTo !== null) params.set('to', state.pipeTo);
    const hash = params.toString();
    if (hash === location.hash.slice(1)) return;
    const url = location.href.replace(/#.*$/, '') + (hash ? '#' + hash : '');
    try {
      history.replaceState(history.state, '', url);
    } catch (e) {
      location.replace(hash ? '#' + hash : '#');
    }
  }

  // -- what the tests read back --

  function hexRgb(c) {
    return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
  }

  // Pixels of each run's colour on a chart's canvas.
  function colourPixels(card) {
    const out = {};
    const canvas = card.g && card.g.hidden_;
    if (!canvas) return out;
    const ctx = canvas.getContext('2d');
    const img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    for (const s of card.d.series) {
      const run = model.runs[s.run];
      const [r, g, b] = hexRgb(run.color);
      let count = 0;
      for (let i = 0; i < img.length; i += 4)
        if (img[i + 3] === 255 && Math.abs(img[i] - r) <= 2 && Math.abs(img[i + 1] - g) <= 2 &&
            Math.abs(img[i + 2] - b) <= 2) count++;
      out[run.name] = count;
    }
    return out;
  }

  quern.state = state;
  quern.smooth = (ys, w) => Array.from(smooth(Float64Array.from(ys), w));
  quern.csv = (run, tag) => {
    const s = (model.byTag.get(tag) || []).find((x) => model.runs[x.run].name === run);
    return s ? seriesCsv(s) : null;
  };
  quern.json = (run, tag) => {
    const s = (model.byTag.get(tag) || []).find((x) => model.runs[x.run].name === run);
    return s ? seriesJson(s) : null;
  };
  quern.formatValue = formatValue;
  quern.yExtent = (ys) => yExtent([Float64Array.from(ys)], true, false);
  quern.formatWall = formatWall;
  // Smoothed values of a series at the given steps (the first point at each).
  quern.smoothedAt = (run, tag, steps) => {
    const s = (model.byTag.get(tag) || []).find((x) => model.runs[x.run].name === run);
    if (!s) return null;
    const sm = smoothed(s);
    return steps.map((st) => {
      for (let i = 0; i < s.n; i++) if (s.steps[i] === st) return sm[i];
      return null;
    });
  };
  quern.selftest = () => {
    quern.flush();
    const out = {
      title: data.title, version: data.version, reloads: quern.reloads, deltas: quern.deltas,
      firstChartMs: quern.firstChartMs, allChartsMs: quern.allChartsMs,
      smoothingChangeMs: quern.smoothingChangeMs, runFilterMs: quern.runFilterMs,
      smoothing: state.smoothing, x: state.x,
      log: state.log, outliers: state.outliers, errors: quern.errors,
      runs: model.runs.map((r) => ({ name: r.name, color: r.color, problems: r.problems })),
      charts: [], histograms: [], texts: [], images: [],
      pipeline: { span: [state.pipeFrom, state.pipeTo], views: [], charts: [],
        section: !!document.getElementById('pipeline'),
        stagesDrawn: [...document.querySelectorAll('#pipeline svg g.stage')].map((g) =>
          ({ name: g.dataset.name, limiting: g.classList.contains('limiting'),
            busy: g.dataset.busy, input: g.dataset.input_share, room: g.dataset.room })),
        queuesDrawn: [...document.querySelectorAll('#pipeline svg g.queue')].map((g) =>
          ({ name: g.dataset.queue, fill: g.dataset.fill,
            enqueue_wait: g.dataset.enqueue_wait, dequeue_wait: g.dataset.dequeue_wait,
            title: (g.querySelector('title') || {}).textContent })),
        order: [...document.querySelectorAll('#pipeline .card')].map((d) => d.dataset.tag) },
      hparams: {
        columns: [...document.querySelectorAll('#hparams th.sortable')].map((th) => th.dataset.key),
        rows: [...document.querySelectorAll('#hparams tr.hprow')].map((tr) =>
          [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)),
        html: document.getElementById('hparams').innerHTML,
      },
    };
    for (const card of charts.values()) {
      const shown = card.div.style.display !== 'none';
      if (card.kind === 'pipeline') {
        out.pipeline.views = shown ? card.views : [];
      } else if (card.top) {
        out.pipeline.charts.push({ tag: card.tag, shown,
          series: card.d ? card.d.series.map((s) => ({ run: model.runs[s.run].name, points: s.n,
            last: s.values[s.n - 1] })) : [],
          pixels: shown && card.g ? colourPixels(card) : {} });
      } else if (card.kind === 'scalars') {
        out.charts.push({
          tag: card.tag, shown,
          series: card.d ? card.d.series.map((s) => ({ run: model.runs[s.run].name, points: s.n,
            last: s.values[s.n - 1], lastSmoothed: smoothed(s)[s.n - 1] })) : [],
          drawn: card.d ? card.d.drawn : 0, rows: card.d ? card.d.rows.length : 0,
          yExtent: card.d ? card.d.ext : null,
          pixels: shown && card.g ? colourPixels(card) : {},
        });
      } else if (card.kind === 'histograms') {
        out.histograms.push({ tag: card.tag, shown, charts: (card.gs || []).length });
      } else if (card.kind === 'texts') {
        out.texts.push({ tag: card.tag, shown, rows: card.body.querySelectorAll('tr.textrow').length,
          html: [...card.body.querySelectorAll('td.markdown')].map((c) => c.innerHTML) });
      } else {
        out.images.push({ tag: card.tag, shown, images: card.body.querySelectorAll('img').length });
      }
    }
    return out;
  };

  // -- start, and (served) reload --

  function cardKeys(m) {
    return [['scalars', m.byTag], ['histograms', m.hist], ['texts', m.texts],
      ['images', m.images]].flatMap(([k, map]) => [...map.keys()].map((t) => k + ':' + t))
      .sort().join('\n');
  }

  function load(d) {
    const before = model ? cardKeys(model) : null;
    data = d;
    model = buildModel(d);
    buildRuns();
    // New data for the same tags redraws the charts in place, keeping the
    // user's zoom; new tags lay the cards out again.
    if (before !== cardKeys(model)) buildCards();
    drawAll();
  }

  function concat(a, b) {
    const out = new Float64Array(a.length + b.length);
    out.set(a);
    out.set(b, a.length);
    return out;
  }

  // New points for series the page has (serve's answer when nothing else
  // changed); false when they do not fit.
  function applyDelta(d) {
    if (d.base !== data.version || d.runs.length !== model.runs.length) return false;
    for (const a of d.append) {
      const s = (model.byTag.get(a.tag) || []).find((x) => x.run === a.run);
      if (!s) return false;
      const steps = decodeSteps(a.steps, a.n);
      const oldN = s.n, oldText = s.stepText;
      s.steps = concat(s.steps, steps.steps);
      s.walls = concat(s.walls, decodeWalls(a.walls, a.n));
      s.values = concat(s.values, decodeValues(a.values, a.n));
      s.n += a.n;
      s.total = s.n;
      s.stepText = (i) => i < oldN ? oldText(i) : steps.text(i - oldN);
      s.smoothCache = null;
      s.drawn = undefined;
    }
    assignColors(d.runs);
    data.runs = d.runs;
    model.runs = d.runs;
    data.version = d.version;
    quern.deltas++;
    buildRuns();
    drawAll();
    return true;
  }

  async function poll() {
    try {
      const r = await fetch('data?have=' + encodeURIComponent(data.version),
        { cache: 'no-store' });
      if (r.status === 200) {
        const d = await r.json();
        if (d.base === undefined) load(d);
        else if (!applyDelta(d)) data.version = ''; // ask for all the data next time
        quern.reloads++;
      } else if (r.status === 204) {
        showStatus();
      } else {
        document.getElementById('status').textContent = 'server: ' + (await r.text());
      }
    } catch (e) {
      document.getElementById('status').textContent = 'server unreachable: ' + e.message;
    }
    setTimeout(poll, data.reload);
  }

  const flags = readFragment();
  buildControls();
  load(JSON.parse(document.getElementById('quern-data').textContent));
  // An address edited by hand (or a link followed within the page).
  window.addEventListener('hashchange', () => {
    readFragment();
    for (const [id, v] of [['pipe-from', state.pipeFrom], ['pipe-to', state.pipeTo]]) {
      const input = document.getElementById(id);
      if (input) input.value = v === null ? '' : v;
    }
    buildControls();
    buildRuns();
    drawAll();
  });
  if (flags.bench) {
    // Every chart drawn, then how long the page takes to answer a change
    // of smoothing and a run filter on this data (bench_board reads these).
    quern.flush();
    quern.allChartsMs = performance.now();
    let t = performance.now();
    state.smoothing = 0.9;
    drawAll(true);
    quern.smoothingChangeMs = performance.now() - t;
    t = performance.now();
    state.runRegex = '[02468]$';
    drawAll(true);
    quern.runFilterMs = performance.now() - t;
    state.smoothing = TB_DEFAULT_SMOOTHING;
    state.runRegex = '';
    drawAll();
  }
  document.body.dataset.ready = '1';
  if (flags.selftest) {
    const pre = el('pre');
    pre.id = 'quern-selftest';
    pre.textContent = JSON.stringify(quern.selftest());
    document.body.appendChild(pre);
  }
  if (data.live) setTimeout(poll, data.reload);
})();
