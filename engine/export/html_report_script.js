(function () {
  'use strict';
  const holder = document.getElementById('pipescope-data');
  const explorer = document.getElementById('explorer');
  if (!holder || !explorer) return;
  const data = JSON.parse(holder.textContent);
  if (!data.steps || data.steps.length === 0) return;
  document.documentElement.classList.add('js');
  explorer.hidden = false;

  const LABEL_W = 136, AXIS_H = 26, ROW_H = 22, NCCL_H = 12, RIGHT = 14, MIN_SPAN = 100;
  const IDLE = '#f6c9c4', WAIT = '#f1a340', TRANSFER = '#7b3294', COMM_WAIT = '#cfcfcf';
  const canvas = document.getElementById('timeline-canvas');
  const wrap = canvas.parentNode;
  const tip = document.getElementById('tip');
  const rangeText = document.getElementById('range');
  const picker = document.getElementById('step-pick');
  const showBottleneck = document.getElementById('show-bottleneck');
  const showCritical = document.getElementById('show-critical');
  const ctx = canvas.getContext('2d');
  const types = data.types, devices = data.devices, steps = data.steps;

  // ---- figures as the engine writes them (numeric/units.h) ----
  function fixed3(m, unit) {
    const th = unit >= 1000 ? Math.floor((m + Math.floor(unit / 2000)) / (unit / 1000)) : m * (1000 / unit);
    return Math.floor(th / 1000) + '.' + String(th % 1000).padStart(3, '0');
  }
  function dur(ns) {
    const sign = ns < 0 ? '-' : '';
    const a = Math.abs(ns);
    if (a < 1e3) return sign + a + ' ns';
    if (a < 1e6) return sign + fixed3(a, 1e3) + ' us';
    if (Math.floor((a + 500) / 1000) < 1e6) return sign + fixed3(a, 1e6) + ' ms';
    return sign + fixed3(a, 1e9) + ' s';
  }
  function pct(r) { return (r * 100).toFixed(1) + '%'; }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
  }
  function axisLabel(t, tick) {
    if (t === 0) return '0';
    const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'us']];
    const a = Math.abs(t);
    for (const [ns, name] of units) {
      if (tick >= ns || a >= ns) {
        let decimals = 0;
        for (let step = ns; decimals < 3 && tick % step !== 0; step /= 10) ++decimals;
        return (t / ns).toFixed(decimals) + ' ' + name;
      }
    }
    return t + ' ns';
  }
  function niceTick(span, target) {
    const raw = span / target;
    const base = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (base * m >= raw) return Math.max(1, Math.round(base * m));
    return Math.round(base * 10);
  }

  // ---- per-step structures, made when a step is first shown ----
  const prepared = new Map();
  function prepare(e) {
    if (prepared.has(e)) return prepared.get(e);
    const step = steps[e];
    const p = {rows: [], lo: 0, hi: step.window, critical: new Set(), path: []};
    step.devices.forEach((dev, d) => {
      const n = dev.start.length;
      const maxEnd = new Array(n);
      let m = -Infinity;
      for (let i = 0; i < n; ++i) {
        const end = dev.start[i] + dev.dur[i];
        m = Math.max(m, end);
        maxEnd[i] = m;
        p.lo = Math.min(p.lo, dev.start[i]);
        p.hi = Math.max(p.hi, end);
      }
      const comm = new Map();
      for (let c = 0; c < dev.comm.length; c += 7) comm.set(dev.comm[c], c);
      const foreign = new Map();
      for (let f = 0; f < dev.foreign.length; f += 2) foreign.set(dev.foreign[f], dev.foreign[f + 1]);
      p.rows.push({dev: dev, maxEnd: maxEnd, comm: comm, foreign: foreign});
    });
    for (let c = 0; c < step.critical.length; c += 4) {
      p.critical.add(step.critical[c] + ':' + step.critical[c + 1]);
      p.path.push({d: step.critical[c], l: step.critical[c + 1], wait: step.critical[c + 2], via: step.critical[c + 3] === 1});
    }
    prepared.set(e, p);
    return p;
  }
  // The first index whose job may end after t (jobs sorted by start).
  function firstEnding(row, t) {
    let lo = 0, hi = row.maxEnd.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (row.maxEnd[mid] > t) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  // ---- geometry ----
  const hasNccl = devices.map((_, d) => steps.some((s) => s.devices[d].nccl.length > 0));
  // A device folded into another's row (its figures agree within 1%) or past
  // the row limit has no row (rowTop -1) and no jobs in the data.
  const drawn = devices.map((dev) => dev.row !== false);
  const rowTop = [];
  let rowsHeight = 0;
  devices.forEach((_, d) => {
    if (!drawn[d]) { rowTop.push(-1); return; }
    rowTop.push(AXIS_H + rowsHeight);
    rowsHeight += ROW_H + (hasNccl[d] ? NCCL_H : 0);
  });
  const bottleneckStage = data.bottleneck ? data.bottleneck.stage : null;
  const view = {e: 0, t0: 0, t1: 1, width: 800, hover: null, drag: null};
  function plotW() { return Math.max(50, view.width - LABEL_W - RIGHT); }
  function xOf(t) { return LABEL_W + (t - view.t0) / (view.t1 - view.t0) * plotW(); }
  function tOf(x) { return view.t0 + (x - LABEL_W) / plotW() * (view.t1 - view.t0); }
  function rowAt(y) {
    for (let d = 0; d < devices.length; ++d) {
      const top = rowTop[d];
      if (top < 0) continue;
      if (y >= top && y < top + ROW_H) return {d: d, nccl: false};
      if (hasNccl[d] && y >= top + ROW_H && y < top + ROW_H + NCCL_H) return {d: d, nccl: true};
    }
    return null;
  }

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    view.width = Math.max(600, wrap.clientWidth);
    const h = AXIS_H + rowsHeight + 8;
    canvas.style.width = view.width + 'px';
    canvas.style.height = h + 'px';
    canvas.width = Math.round(view.width * dpr);
    canvas.height = Math.round(h * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  // ---- labels of jobs ----
  function jobName(t, mb) {
    const type = types[t];
    return (type ? type.name : '?') + ' mb' + mb;
  }
  function boxLabel(t, mb) {
    const type = types[t];
    if (!type || !type.chunked || !(type.role === 'forward' || type.role === 'backward' || type.role === 'weight')) return String(mb);
    const letter = type.role === 'forward' ? 'F' : type.role === 'backward' ? 'B' : 'W';
    return letter + mb + '\u00b7c' + type.chunk;
  }
  function deviceName(d) {
    const dev = devices[d];
    return dev.label + (dev.stage >= 0 ? ' \u00b7 stage ' + dev.stage : '') +
      (dev.alike ? ' (drawn for ' + dev.alike + ')' : '');
  }

  // ---- drawing ----
  function draw() {
    const step = steps[view.e];
    const p = prepare(view.e);
    const W = view.width, H = AXIS_H + rowsHeight + 8, pw = plotW();
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    // Bottleneck rows.
    if (showBottleneck.checked && bottleneckStage !== null) {
      ctx.fillStyle = '#fff3c4';
      devices.forEach((dev, d) => {
        if (drawn[d] && dev.stage === bottleneckStage) ctx.fillRect(0, rowTop[d], LABEL_W + pw, ROW_H + (hasNccl[d] ? NCCL_H : 0));
      });
    }
    // Axis and grid.
    const tick = niceTick(view.t1 - view.t0, Math.max(2, Math.round(pw / 120)));
    ctx.strokeStyle = '#e4e4e4';
    ctx.fillStyle = '#666';
    ctx.textAlign = 'center';
    ctx.lineWidth = 1;
    for (let t = Math.ceil(view.t0 / tick) * tick; t <= view.t1; t += tick) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H - 4);
      ctx.lineTo(x, AXIS_H + rowsHeight);
      ctx.stroke();
      ctx.fillText(axisLabel(t, tick), x, 11);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, pw, rowsHeight);
    ctx.clip();
    // Outside the step's window.
    ctx.fillStyle = 'rgba(0,0,0,0.05)';
    if (view.t0 < 0) ctx.fillRect(LABEL_W, AXIS_H, xOf(0) - LABEL_W, rowsHeight);
    if (view.t1 > step.window) ctx.fillRect(xOf(step.window), AXIS_H, LABEL_W + pw - xOf(step.window), rowsHeight);
    const critical = showCritical.checked && p.path.length > 0;
    p.rows.forEach((row, d) => {
      if (!drawn[d]) return;
      const dev = row.dev, y = rowTop[d];
      // Bubbles.
      ctx.fillStyle = IDLE;
      for (let b = 0; b < dev.bubbles.length; b += 8) {
        const s = dev.bubbles[b], e = s + dev.bubbles[b + 1];
        if (e < view.t0 || s > view.t1) continue;
        const x0 = xOf(s), x1 = xOf(e);
        if (x1 - x0 >= 0.5) ctx.fillRect(x0, y + 2, x1 - x0, ROW_H - 4);
      }
      // Jobs: a box per job, sub-pixel ones of one colour sharing a pixel drawn once.
      let lastPixel = -1, lastColor = '';
      for (let i = firstEnding(row, view.t0); i < dev.start.length && dev.start[i] <= view.t1; ++i) {
        const s = dev.start[i], e = s + dev.dur[i];
        if (e < view.t0) continue;
        const type = types[dev.type[i]];
        const color = type ? type.color : '#b07aa1';
        let x0 = xOf(s), x1 = xOf(e);
        if (x1 - x0 < 1) {
          const px = Math.floor(x0);
          if (px === lastPixel && color === lastColor) continue;
          lastPixel = px;
          lastColor = color;
          x1 = x0 + 1;
        }
        const dim = row.foreign.has(i) || (critical && !p.critical.has(d + ':' + i));
        ctx.globalAlpha = dim ? 0.35 : 1;
        ctx.fillStyle = color;
        const w = Math.max(1, x1 - x0 - (x1 - x0 > 3 ? 0.6 : 0));
        ctx.fillRect(x0, y + 2, w, ROW_H - 4);
        const c = row.comm.get(i);
        if (c !== undefined && dev.comm[c + 1] > 0) {
          // A comm job's wait, lighter.
          ctx.fillStyle = COMM_WAIT;
          ctx.fillRect(x0, y + 2, Math.min(w, xOf(s + dev.comm[c + 1]) - x0), ROW_H - 4);
        }
        if (w >= 16) {
          const label = boxLabel(dev.type[i], dev.mb[i]);
          if (w >= Math.max(16, 6 * label.length)) {
            ctx.fillStyle = c !== undefined ? '#222' : '#fff';
            ctx.font = '600 10px system-ui, sans-serif';
            ctx.fillText(label, x0 + w / 2, y + ROW_H / 2 + 0.5);
            ctx.font = '11px system-ui, sans-serif';
          }
        }
      }
      ctx.globalAlpha = 1;
      // NCCL kernels: wait, then transfer.
      for (let n = 0; n < dev.nccl.length; n += 5) {
        const s = dev.nccl[n], m = dev.nccl[n + 1], e = dev.nccl[n + 2];
        if (e < view.t0 || s > view.t1) continue;
        const yn = y + ROW_H + 1;
        ctx.fillStyle = WAIT;
        if (m > s) ctx.fillRect(xOf(s), yn, Math.max(1, xOf(m) - xOf(s)), NCCL_H - 3);
        ctx.fillStyle = TRANSFER;
        if (e > m) ctx.fillRect(xOf(m), yn, Math.max(1, xOf(e) - xOf(m)), NCCL_H - 3);
      }
    });
    // The critical path: its jobs outlined, its hops between devices drawn.
    if (critical) {
      ctx.strokeStyle = '#111';
      ctx.lineWidth = 1.5;
      let prev = null;
      for (const j of p.path) {
        const dev = p.rows[j.d].dev;
        const s = dev.start[j.l], e = s + dev.dur[j.l];
        const y = rowTop[j.d];
        ctx.strokeRect(xOf(s), y + 1.5, Math.max(1, xOf(e) - xOf(s)), ROW_H - 3);
        if (prev && prev.d !== j.d) {
          const pd = p.rows[prev.d].dev;
          ctx.save();
          ctx.strokeStyle = '#d62728';
          ctx.beginPath();
          ctx.moveTo(xOf(pd.start[prev.l] + pd.dur[prev.l]), rowTop[prev.d] + ROW_H / 2);
          ctx.lineTo(xOf(s), y + ROW_H / 2);
          ctx.stroke();
          ctx.restore();
        }
        prev = j;
      }
    }
    // What the pointer is on.
    const h = view.hover;
    if (h) {
      const r = hoverRect(h);
      ctx.strokeStyle = '#000';
      ctx.lineWidth = 2;
      ctx.strokeRect(r.x, r.y, Math.max(2, r.w), r.h);
    }
    // A range being dragged out.
    if (view.drag && view.drag.mode === 'select') {
      const a = Math.min(view.drag.x0, view.drag.x1), b = Math.max(view.drag.x0, view.drag.x1);
      ctx.fillStyle = 'rgba(78,121,167,0.18)';
      ctx.fillRect(a, AXIS_H, b - a, rowsHeight);
      ctx.strokeStyle = '#4e79a7';
      ctx.lineWidth = 1;
      ctx.strokeRect(a + 0.5, AXIS_H + 0.5, b - a, rowsHeight - 1);
    }
    ctx.restore();
    // Row labels.
    ctx.textAlign = 'right';
    devices.forEach((dev, d) => {
      if (!drawn[d]) return;
      const slow = showBottleneck.checked && dev.stage === bottleneckStage && bottleneckStage !== null;
      ctx.font = (slow ? '700 ' : '') + '11px system-ui, sans-serif';
      ctx.fillStyle = slow ? '#8a5a00' : '#333';
      ctx.fillText(dev.label + (slow ? ' \u25b2' : ''), LABEL_W - 8, rowTop[d] + ROW_H / 2);
      if (hasNccl[d]) {
        ctx.font = '10px system-ui, sans-serif';
        ctx.fillStyle = '#777';
        ctx.fillText('NCCL', LABEL_W - 8, rowTop[d] + ROW_H + NCCL_H / 2);
      }
    });
    canvas.dataset.step = step.label;
    canvas.dataset.t0 = String(Math.round(view.t0));
    canvas.dataset.t1 = String(Math.round(view.t1));
    rangeText.textContent = 'step ' + step.label + ': ' + axisOffset(view.t0) + ' to ' + axisOffset(view.t1) +
        ' of ' + dur(step.window) + (view.t0 <= 0 && view.t1 >= step.window ? '' : ' (zoomed)');
  }
  function axisOffset(t) { return Math.round(t) === 0 ? '0' : (t < 0 ? '-' : '+') + dur(Math.round(Math.abs(t))); }

  function hoverRect(h) {
    const dev = steps[view.e].devices[h.d];
    const y = rowTop[h.d];
    if (h.kind === 'job') {
      const s = dev.start[h.i];
      return {x: xOf(s), y: y + 1, w: xOf(s + dev.dur[h.i]) - xOf(s), h: ROW_H - 2};
    }
    if (h.kind === 'bubble') {
      const s = dev.bubbles[h.i];
      return {x: xOf(s), y: y + 1, w: xOf(s + dev.bubbles[h.i + 1]) - xOf(s), h: ROW_H - 2};
    }
    const s = dev.nccl[h.i];
    return {x: xOf(s), y: y + ROW_H, w: xOf(dev.nccl[h.i + 2]) - xOf(s), h: NCCL_H - 1};
  }

  // ---- hit testing ----
  function hit(x, y) {
    if (x < LABEL_W || x > LABEL_W + plotW()) return null;
    const at = rowAt(y);
    if (!at) return null;
    const p = prepare(view.e);
    const dev = p.rows[at.d].dev;
    const t = tOf(x), slack = 3 * (view.t1 - view.t0) / plotW();
    if (at.nccl) {
      let best = null;
      for (let n = 0; n < dev.nccl.length; n += 5) {
        if (dev.nccl[n] - slack <= t && t <= dev.nccl[n + 2] + slack) {
          if (best === null || dev.nccl[n + 2] - dev.nccl[n] < dev.nccl[best + 2] - dev.nccl[best]) best = n;
        }
      }
      return best === null ? null : {kind: 'nccl', d: at.d, i: best};
    }
    // The shortest job under the pointer, else the nearest within 3 px.
    let inside = null, near = null, nearDist = Infinity;
    const row = p.rows[at.d];
    for (let i = firstEnding(row, t - slack); i < dev.start.length && dev.start[i] <= t + slack; ++i) {
      const s = dev.start[i], e = s + dev.dur[i];
      if (e < t - slack) continue;
      if (s <= t && t <= e) {
        if (inside === null || dev.dur[i] < dev.dur[inside]) inside = i;
      } else {
        const dist = t < s ? s - t : t - e;
        if (dist < nearDist) { near = i; nearDist = dist; }
      }
    }
    if (inside !== null || near !== null) return {kind: 'job', d: at.d, i: inside !== null ? inside : near};
    for (let b = 0; b < dev.bubbles.length; b += 8) {
      if (dev.bubbles[b] <= t && t <= dev.bubbles[b] + dev.bubbles[b + 1]) return {kind: 'bubble', d: at.d, i: b};
    }
    return null;
  }

  // ---- what the tooltip says ----
  function jobRef(e, d, l) {
    const dev = steps[e].devices[d];
    return jobName(dev.type[l], dev.mb[l]) + ' on ' + deviceName(d);
  }
  function describe(h) {
    const e = view.e, step = steps[e], dev = step.devices[h.d];
    const lines = [];
    if (h.kind === 'job') {
      const i = h.i, p = prepare(e);
      lines.push('<b>' + esc(jobName(dev.type[i], dev.mb[i])) + '</b> (' + esc(types[dev.type[i]] ? types[dev.type[i]].kind : '?') + ')');
      lines.push(esc(deviceName(h.d)) + ', micro-batch ' + dev.mb[i]);
      lines.push('start ' + axisOffset(dev.start[i]) + ' in step ' + esc(step.label) + ', duration ' + dur(dev.dur[i]));
      const own = p.rows[h.d].foreign.get(i);
      if (own !== undefined) lines.push('a job of ' + (own >= 0 && step.foreign_labels[own] !== undefined ? 'step ' + esc(step.foreign_labels[own]) : 'no step') + ' (overlaps this window)');
      const c = p.rows[h.d].comm.get(i);
      if (c !== undefined) {
        const cm = dev.comm;
        lines.push('wait ' + dur(cm[c + 1]) + ', transfer ' + dur(cm[c + 2]));
        if (cm[c + 5] >= 0) lines.push('peer: ' + esc(jobRef(e, cm[c + 5], cm[c + 6])) + ', started ' + axisOffset(steps[e].devices[cm[c + 5]].start[cm[c + 6]]));
        else lines.push('peer: not logged' + (cm[c + 1] > 0 ? ' (waited for its data to be made)' : ''));
        if (cm[c + 3] >= 0) lines.push('data: ' + esc(jobRef(e, cm[c + 3], cm[c + 4])));
      }
      if (p.critical.has(h.d + ':' + i)) {
        const j = p.path.find((x) => x.d === h.d && x.l === i);
        lines.push('on the critical path' + (j && j.via ? ', entered from another stage' : '') + (j && j.wait > 0 ? ' (waited ' + dur(j.wait) + ')' : ''));
      }
      if (dev.line[i] > 0) lines.push(esc(devices[h.d].path) + ':' + dev.line[i]);
      const fields = {kind: 'job', device: devices[h.d].index, type: types[dev.type[i]] ? types[dev.type[i]].name : '?',
        mb: dev.mb[i], start: dev.start[i], dur: dev.dur[i], stage: devices[h.d].stage};
      if (c !== undefined) {
        const cm = dev.comm;
        fields.wait = cm[c + 1];
        fields.transfer = cm[c + 2];
        if (cm[c + 5] >= 0) {
          fields.peer_device = devices[cm[c + 5]].index;
          fields.peer_start = steps[e].devices[cm[c + 5]].start[cm[c + 6]];
        }
      }
      setTip(lines, fields);
    } else if (h.kind === 'bubble') {
      const b = dev.bubbles, i = h.i, kinds = ['fill', 'interior', 'drain'];
      lines.push('<b>' + kinds[b[i + 2]] + ' bubble</b>, ' + dur(b[i + 1]));
      lines.push(esc(deviceName(h.d)) + ', ' + axisOffset(b[i]) + ' to ' + axisOffset(b[i] + b[i + 1]));
      if (b[i + 3] >= 0) lines.push('inherent ' + dur(b[i + 3]) + ', excess ' + dur(b[i + 1] - b[i + 3]));
      else lines.push(data.split ? 'inherent/excess: not split (incomplete step)' : 'inherent/excess: unknown (no job list for this schedule)');
      if (b[i + 4] >= 0) lines.push('after ' + esc(jobName(dev.type[b[i + 4]], dev.mb[b[i + 4]])));
      if (b[i + 5] >= 0) {
        let waits = 'waits for ' + esc(jobName(dev.type[b[i + 5]], dev.mb[b[i + 5]]));
        if (b[i + 6] >= 0) {
          const src = steps[e].devices[b[i + 6]];
          waits += ', whose input is ' + esc(jobRef(e, b[i + 6], b[i + 7])) + ', ending ' + axisOffset(src.start[b[i + 7]] + src.dur[b[i + 7]]);
        }
        lines.push(waits);
      }
      setTip(lines, {kind: 'bubble', device: devices[h.d].index, bubble: kinds[b[i + 2]], start: b[i], dur: b[i + 1],
        inherent: b[i + 3]});
    } else {
      const n = dev.nccl, i = h.i;
      lines.push('<b>' + esc(data.ops[n[i + 4]] || 'nccl') + '</b> (NCCL kernel)');
      lines.push(esc(deviceName(h.d)) + (devices[h.d].global_rank >= 0 ? ', rank ' + devices[h.d].global_rank : ''));
      lines.push('start ' + axisOffset(n[i]) + ', duration ' + dur(n[i + 2] - n[i]));
      lines.push('wait ' + dur(n[i + 1] - n[i]) + (n[i + 3] >= 0 ? ' (for rank ' + n[i + 3] + ')' : '') + ', transfer ' + dur(n[i + 2] - n[i + 1]));
      setTip(lines, {kind: 'nccl', device: devices[h.d].index, start: n[i], wait: n[i + 1] - n[i], transfer: n[i + 2] - n[i + 1],
        waited_on: n[i + 3]});
    }
  }
  function setTip(lines, fields) {
    tip.innerHTML = lines.join('<br>');
    for (const k of Object.keys(tip.dataset)) delete tip.dataset[k];
    for (const [k, v] of Object.entries(fields)) tip.dataset[k] = String(v);
  }
  function showTip(h, x, y) {
    if (!h) { tip.hidden = true; return; }
    describe(h);
    tip.hidden = false;
    const w = tip.offsetWidth, ww = wrap.clientWidth;
    tip.style.left = Math.max(0, x + 16 + w > ww ? x - 16 - w : x + 16) + 'px';
    tip.style.top = (y + 18) + 'px';
  }

  // ---- zoom and pan ----
  function setRange(t0, t1) {
    const p = prepare(view.e);
    const lo = Math.min(p.lo, 0), hi = Math.max(p.hi, steps[view.e].window, lo + MIN_SPAN);
    let span = Math.min(Math.max(t1 - t0, MIN_SPAN), hi - lo);
    t0 = Math.min(Math.max(t0, lo), hi - span);
    view.t0 = t0;
    view.t1 = t0 + span;
    draw();
  }
  function zoomAt(x, factor) {
    const t = tOf(x);
    setRange(t - (t - view.t0) * factor, t + (view.t1 - t) * factor);
  }
  function whole() {
    const step = steps[view.e];
    setRange(0, Math.max(step.window, MIN_SPAN));
  }
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left;
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      const d = (ev.shiftKey ? ev.deltaY : ev.deltaX) / plotW() * (view.t1 - view.t0);
      setRange(view.t0 + d, view.t1 + d);
    } else {
      zoomAt(Math.max(LABEL_W, x), Math.pow(1.0015, ev.deltaY));
    }
  }, {passive: false});
  canvas.addEventListener('mousedown', (ev) => {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (x < LABEL_W) return;
    const pan = ev.shiftKey || ev.button === 1 || y < AXIS_H;
    view.drag = {mode: pan ? 'pan' : 'select', x0: x, x1: x, t0: view.t0, t1: view.t1};
    ev.preventDefault();  // no text selection; the keys still reach the timeline:
    canvas.focus({preventScroll: true});
  });
  window.addEventListener('mousemove', (ev) => {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (view.drag) {
      view.drag.x1 = x;
      if (view.drag.mode === 'pan') {
        const d = (view.drag.x0 - x) / plotW() * (view.drag.t1 - view.drag.t0);
        setRange(view.drag.t0 + d, view.drag.t1 + d);
      } else {
        draw();
      }
      return;
    }
    if (x < 0 || y < 0 || x > r.width || y > r.height) {
      if (view.hover) { view.hover = null; tip.hidden = true; draw(); }
      return;
    }
    const h = hit(x, y);
    const same = h && view.hover && h.kind === view.hover.kind && h.d === view.hover.d && h.i === view.hover.i;
    if (!same) { view.hover = h; draw(); }
    showTip(h, x, y);
  });
  window.addEventListener('mouseup', () => {
    const drag = view.drag;
    if (!drag) return;
    view.drag = null;
    if (drag.mode === 'select' && Math.abs(drag.x1 - drag.x0) >= 4) {
      const a = tOf(Math.min(drag.x0, drag.x1)), b = tOf(Math.max(drag.x0, drag.x1));
      setRange(a, b);
    } else {
      draw();
    }
  });
  canvas.addEventListener('dblclick', whole);
  canvas.tabIndex = 0;
  canvas.addEventListener('keydown', (ev) => {
    const mid = LABEL_W + plotW() / 2, span = view.t1 - view.t0;
    if (ev.key === '+' || ev.key === '=') zoomAt(mid, 0.5);
    else if (ev.key === '-') zoomAt(mid, 2);
    else if (ev.key === '0') whole();
    else if (ev.key === 'ArrowLeft' && ev.shiftKey) setRange(view.t0 - span / 4, view.t1 - span / 4);
    else if (ev.key === 'ArrowRight' && ev.shiftKey) setRange(view.t0 + span / 4, view.t1 + span / 4);
    else if (ev.key === 'ArrowLeft') pick(view.e - 1);
    else if (ev.key === 'ArrowRight') pick(view.e + 1);
    else return;
    ev.preventDefault();
  });
  document.getElementById('zoom-reset').addEventListener('click', whole);
  document.getElementById('step-prev').addEventListener('click', () => pick(view.e - 1));
  document.getElementById('step-next').addEventListener('click', () => pick(view.e + 1));
  showBottleneck.addEventListener('change', draw);
  showCritical.addEventListener('change', draw);
  if (bottleneckStage === null) showBottleneck.parentNode.hidden = true;
  if (!steps.some((s) => s.critical.length > 0)) showCritical.parentNode.hidden = true;

  // ---- the step picker, the step table and the step chart ----
  const table = document.getElementById('step-table');
  const MAX_ROWS = 400;
  function stepRow(e) {
    const s = steps[e];
    return '<tr data-e="' + e + '"' + (e === view.e ? ' class="selected"' : '') + '><td>' + esc(s.label) +
        '</td><td>' + axisOffset(s.start) + '</td><td>' + dur(s.window) + '</td><td>' + pct(s.bubble_ratio) +
        '</td><td>' + (s.inherent >= 0 ? dur(s.inherent) : '-') + '</td><td>' + s.jobs + '</td><td>' +
        (s.complete ? '' : 'incomplete') + '</td></tr>';
  }
  function fillTable() {
    let from = 0, to = steps.length;
    if (steps.length > MAX_ROWS) {
      from = Math.max(0, Math.min(view.e - MAX_ROWS / 2, steps.length - MAX_ROWS));
      to = from + MAX_ROWS;
    }
    let html = '<tr><th>step</th><th>start</th><th>duration</th><th>bubble ratio</th><th>inherent idle</th>' +
        '<th>jobs drawn</th><th></th></tr>';
    for (let e = from; e < to; ++e) html += stepRow(e);
    table.innerHTML = html;
    table.dataset.from = String(from);
    const note = document.getElementById('step-table-note');
    note.textContent = steps.length > MAX_ROWS
      ? 'Steps ' + steps[from].label + ' to ' + steps[to - 1].label + ' of the ' + steps.length + ' embedded are listed (the table follows the step picked).'
      : 'Click a step to draw it.';
  }
  table.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-e]');
    if (tr) pick(Number(tr.dataset.e));
  });
  const useSelect = steps.length <= 5000;
  if (useSelect) {
    let options = '';
    steps.forEach((s, e) => {
      options += '<option value="' + e + '">step ' + esc(s.label) + ' \u2014 ' + dur(s.window) + ', bubble ' + pct(s.bubble_ratio) +
          (s.index === data.median ? ' (median)' : '') + (s.index === data.slowest ? ' (slowest)' : '') + '</option>';
    });
    picker.innerHTML = options;
    picker.addEventListener('change', () => pick(Number(picker.value)));
  } else {
    const input = document.createElement('input');
    input.type = 'text';
    input.id = 'step-pick';
    input.size = 10;
    input.title = 'a step number (' + steps.length + ' steps embedded)';
    picker.replaceWith(input);
    input.addEventListener('change', () => {
      const e = steps.findIndex((s) => s.label === input.value.trim());
      if (e >= 0) pick(e); else input.value = steps[view.e].label;
    });
  }
  // Step chart bars: a click picks the first embedded step of the bar.
  const byIndex = new Map();
  steps.forEach((s, e) => byIndex.set(s.index, e));
  const bars = Array.from(document.querySelectorAll('rect.step-bar[data-first]'));
  for (const bar of bars) {
    bar.style.cursor = 'pointer';
    bar.addEventListener('click', () => {
      for (let k = Number(bar.dataset.first); k <= Number(bar.dataset.last); ++k) {
        if (byIndex.has(k)) { pick(byIndex.get(k)); return; }
      }
    });
  }

  function pick(e) {
    if (e < 0 || e >= steps.length) return;
    view.e = e;
    view.hover = null;
    tip.hidden = true;
    const step = steps[e];
    const field = document.getElementById('step-pick');
    field.value = useSelect ? String(e) : step.label;
    for (const bar of bars) {
      bar.classList.toggle('selected', Number(bar.dataset.first) <= step.index && step.index <= Number(bar.dataset.last));
    }
    const from = Number(table.dataset.from || 0);
    if (steps.length > MAX_ROWS && (e < from || e >= from + MAX_ROWS)) fillTable();
    for (const tr of table.querySelectorAll('tr.selected')) tr.classList.remove('selected');
    const tr = table.querySelector('tr[data-e="' + e + '"]');
    if (tr) {
      tr.classList.add('selected');
      const box = table.parentNode;
      if (tr.offsetTop < box.scrollTop || tr.offsetTop + tr.offsetHeight > box.scrollTop + box.clientHeight) {
        box.scrollTop = tr.offsetTop - box.clientHeight / 2;
      }
    }
    whole();
  }

  window.pipescopeReport = {
    pick: pick,
    view: () => ({step: steps[view.e].label, index: steps[view.e].index, t0: view.t0, t1: view.t1}),
    xOf: (t) => canvas.getBoundingClientRect().left + xOf(t),
    yOf: (d, nccl) => canvas.getBoundingClientRect().top + rowTop[d] + (nccl ? ROW_H + NCCL_H / 2 : ROW_H / 2),
    setRange: setRange
  };
  window.addEventListener('resize', () => { resize(); draw(); });
  resize();
  fillTable();
  // The median-duration step when it is among the drawn ones, else the first drawn.
  const median = data.drawn.find((e) => steps[e].index === data.median);
  pick(median !== undefined ? median : data.drawn.length > 0 ? data.drawn[0] : 0);
  requestAnimationFrame(() => performance.mark('pipescope-drawn'));
})();
