// kilnd's dashboard: a read-only view of the JSON API on this origin, refreshed every second.
'use strict';

let token = sessionStorage.getItem('kiln-token') || '';
let timer = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

async function api(path) {
  const headers = token ? {Authorization: 'Bearer ' + token} : {};
  const response = await fetch(path, {headers, cache: 'no-store'});
  if (response.status === 401) {
    showLogin((await response.json()).error);
    throw new Error('unauthenticated');
  }
  if (!response.ok) throw new Error((await response.json()).error || response.statusText);
  return response.json();
}

function showLogin(message) {
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = token ? message : '';
  document.getElementById('view').replaceChildren();
}

function when(ms) {
  return ms && ms !== '0' ? new Date(Number(ms)).toLocaleString() : '-';
}

function ms(seconds) {
  return seconds ? (Number(seconds) * 1e3).toFixed(4) : '-';
}

function stateCell(state) {
  const name = state.replace('JOB_STATE_', '').toLowerCase();
  return el('td', {class: 'state-' + name}, name);
}

function kindName(kind) {
  return kind.replace('JOB_KIND_', '').toLowerCase();
}

function table(headings, rows) {
  return el('table', {}, el('tr', {}, ...headings.map(h => el('th', {}, h))), ...rows);
}

async function jobsView(view, params) {
  const filters = el('div', {class: 'filters'});
  const state = el('select', {id: 'filter-state'},
                   ...['', 'queued', 'running', 'succeeded', 'failed', 'cancelled'].map(
                       s => el('option', {value: s}, s || 'every state')));
  const kind = el('select', {id: 'filter-kind'},
                  ...['', 'compile', 'profile', 'inference', 'tune', 'quantize'].map(
                      k => el('option', {value: k}, k || 'every kind')));
  state.value = params.get('state') || '';
  kind.value = params.get('kind') || '';
  const go = () => { location.hash = '#/?state=' + state.value + '&kind=' + kind.value; };
  state.onchange = go;
  kind.onchange = go;
  filters.append('Show ', state, ' ', kind);
  const data = await api('/api/jobs?state=' + state.value + '&kind=' + kind.value);
  const rows = data.jobs.map(j => el('tr', {class: 'job', 'data-id': j.id},
      el('td', {}, el('a', {href: '#/job/' + j.id}, j.id)), el('td', {}, kindName(j.kind)),
      stateCell(j.state), el('td', {}, when(j.created_unix_ms)),
      el('td', {}, j.module_name || j.device_key || ''),
      el('td', {}, j.reason || (j.cache_hit ? 'cache hit' : ''))));
  view.replaceChildren(el('h2', {}, 'Jobs'), filters,
      table(['job', 'kind', 'state', 'created', 'model / device', 'detail'], rows));
}

// The tuning curve: estimated model latency against trials, as an SVG polyline.
function curvePlot(curve) {
  const w = 480, h = 200, pad = 40;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('class', 'curve');
  svg.setAttribute('width', w);
  svg.setAttribute('height', h);
  svg.setAttribute('id', 'tune-curve');
  if (curve.length === 0) return svg;
  const xs = curve.map(p => Number(p.trials)), ys = curve.map(p => Number(p.estimated_seconds));
  const xmax = Math.max(1, ...xs), ymin = Math.min(...ys), ymax = Math.max(...ys);
  const span = ymax - ymin || ymax || 1;
  const points = curve.map((p, i) =>
      (pad + xs[i] / xmax * (w - 2 * pad)).toFixed(1) + ',' +
      (h - pad - (ys[i] - ymin) / span * (h - 2 * pad)).toFixed(1)).join(' ');
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  line.setAttribute('points', points);
  svg.append(line);
  const label = (x, y, text) => {
    const t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
    t.setAttribute('x', x);
    t.setAttribute('y', y);
    t.textContent = text;
    svg.append(t);
  };
  label(pad, h - 10, 'trials: 0 … ' + xmax);
  label(4, 14, 'est. model ' + (ymax * 1e3).toFixed(4) + ' ms');
  label(4, h - pad + 14, (ymin * 1e3).toFixed(4) + ' ms');
  return svg;
}

// SQNR in dB, as protobuf's JSON writes a double (a number, or "Infinity" where exact).
function db(v) {
  const x = Number(v);
  return isFinite(x) ? x.toFixed(1) : 'exact';
}

// A quantize job's accuracy: each output against float, then each int8 layer's output as the next
// layer reads it (cumulative, so the lowest names where the accuracy goes).
function quantizeReport(q) {
  const n = q.eval_inputs || 0;
  const on = q.held_out ? n + ' held-out inputs'
                        : 'the ' + n + ' calibration inputs (none held out)';
  const parts = [el('h3', {}, 'int8 accuracy on ' + on),
                 el('p', {}, 'Calibrated with ' + q.method + ' on ' + q.calibration_inputs +
                                 ' inputs; the int8 model is ' + (q.model_size || 0) + ' bytes.'),
                 table(['output', 'SQNR dB', 'max error', 'top-1 agrees'],
                       (q.outputs || []).map(o => el('tr', {class: 'quantize-output'},
                           el('td', {}, o.name), el('td', {class: 'num'}, db(o.sqnr_db)),
                           el('td', {class: 'num'}, Number(o.max_abs_error || 0).toPrecision(3)),
                           el('td', {class: 'num'},
                              o.top1_total ? (o.top1_agree || 0) + ' / ' + o.top1_total : ''))))];
  let worst = 0;
  q.layers.forEach((l, i) => { if (Number(l.sqnr_db) < Number(q.layers[worst].sqnr_db)) worst = i; });
  parts.push(table(['int8 layer', 'op', 'SQNR dB', ''],
                   q.layers.map((l, i) => el('tr', {class: 'quantize-layer'}, el('td', {}, l.name),
                       el('td', {}, l.op_type), el('td', {class: 'num'}, db(l.sqnr_db)),
                       el('td', {}, i === worst && q.layers.length > 1 ? 'lowest' : '')))));
  if (q.float_layers && q.float_layers.length) {
    parts.push(el('p', {}, 'Kept in float: ' + q.float_layers.join(', ')));
  }
  return parts;
}

async function jobView(view, id) {
  const data = await api('/api/jobs/' + encodeURIComponent(id));
  const j = data.job;
  const facts = el('dl', {});
  const fact = (k, v) => { if (v !== undefined && v !== '' && v !== '0') facts.append(el('dt', {}, k), el('dd', {}, v)); };
  fact('kind', kindName(j.kind));
  fact('state', j.state.replace('JOB_STATE_', '').toLowerCase());
  fact('reason', j.reason);
  fact('client', j.client);
  fact('model', j.module_name);
  fact('target', j.target);
  fact('device', j.device_key);
  fact('agent', j.agent_id);
  fact('artifact', j.artifact_digest);
  fact('created', when(j.created_unix_ms));
  fact('finished', when(j.finished_unix_ms));
  const parts = [el('h2', {}, 'Job ' + j.id), facts];
  if (j.profile && j.profile.seconds_per_call.length) {
    const p = j.profile;
    parts.push(el('h3', {}, 'Timings of ' + p.function),
               table(['median ms', 'mean ms', 'min ms', 'max ms', 'calls per repeat', 'repeats'],
                     [el('tr', {id: 'timings'}, el('td', {class: 'num'}, ms(p.median_seconds)),
                         el('td', {class: 'num'}, ms(p.mean_seconds)),
                         el('td', {class: 'num'}, ms(p.min_seconds)),
                         el('td', {class: 'num'}, ms(p.max_seconds)),
                         el('td', {class: 'num'}, p.number),
                         el('td', {class: 'num'}, p.seconds_per_call.length))]));
    if (p.emulated) parts.push(el('p', {class: 'note'}, 'Measured on an emulated CPU (qemu-user).'));
    if (p.kernels && p.kernels.length) {
      parts.push(el('h3', {}, 'Per kernel: ' + (100 * (p.kernel_coverage || 0)).toFixed(1) +
                                  ' % of each call'),
                 table(['kernel', 'calls', 'median ms', 'share', 'GFLOP/s', 'arith', 'operators'],
                       p.kernels.map(k => el('tr', {class: 'kernel'}, el('td', {}, k.name),
                           el('td', {class: 'num'}, k.calls),
                           el('td', {class: 'num'}, ms(k.median_seconds)),
                           el('td', {class: 'num'}, (100 * (k.share || 0)).toFixed(1) + ' %'),
                           el('td', {class: 'num'},
                              k.gflops_per_second ? k.gflops_per_second.toFixed(2) : ''),
                           // int8 kernels (relax.qnn.*) beside float ones; their rate counts
                           // int8 operations.
                           el('td', {}, (k.fused_ops || []).some(o => o.startsWith('relax.qnn.'))
                                            ? 'int8' : 'float'),
                           el('td', {}, (k.fused_ops || []).join(' '))))));
    }
  }
  if (j.tune && (j.tune.tasks.length || j.tune.curve.length)) {
    const t = j.tune;
    parts.push(el('h3', {}, 'Tuning: ' + t.trials + ' of ' + t.budget + ' trials'),
               curvePlot(t.curve),
               table(['task', 'weight', 'trials', 'default ms', 'best ms', 'speedup'],
                     t.tasks.map(x => el('tr', {class: 'tune-task'}, el('td', {}, x.name),
                         el('td', {class: 'num'}, x.weight), el('td', {class: 'num'}, x.trials),
                         el('td', {class: 'num'}, ms(x.default_seconds)),
                         el('td', {class: 'num'}, ms(x.best_seconds)),
                         el('td', {class: 'num'}, !x.best_seconds || !x.default_seconds ? '-'
                             // A record within 3 % of the untuned kernel is not applied.
                             : x.record_applied ? (x.default_seconds / x.best_seconds).toFixed(2) + 'x'
                             : 'default kept')))));
  }
  if (j.quantize && j.quantize.layers && j.quantize.layers.length) {
    parts.push(...quantizeReport(j.quantize));
  }
  parts.push(el('h3', {}, 'Events'),
             table(['time', 'state', 'message'], data.events.map(e => el('tr', {class: 'event'},
                 el('td', {}, when(e.unix_ms)), stateCell(e.state), el('td', {}, e.message)))));
  view.replaceChildren(...parts);
}

async function devicesView(view) {
  const data = await api('/api/devices');
  const now = Date.now();
  const rows = data.devices.map(d => {
    const a = d.attributes || {};
    const seen = Number(d.last_seen_unix_ms);
    const health = d.agents_connected > 0 ? (now - seen < 10000 ? 'healthy' : 'silent')
                                          : 'no agent';
    return el('tr', {class: 'device', 'data-key': d.key}, el('td', {}, d.key),
              el('td', {class: 'num'}, d.agents_connected), el('td', {}, health),
              el('td', {}, a.target_triple || ''),
              el('td', {}, (a.cpu_model || '') + (a.emulated ? ' (emulated)' : '')),
              el('td', {}, (a.cpu_features || []).join(' ')),
              el('td', {class: 'num'}, a.cores || ''),
              el('td', {class: 'num'}, a.memory_bytes ? (a.memory_bytes / 2 ** 30).toFixed(1) : ''),
              el('td', {class: 'num'}, d.tasks_queued), el('td', {}, when(d.last_seen_unix_ms)));
  });
  view.replaceChildren(el('h2', {}, 'Devices'),
      table(['key', 'agents', 'health', 'triple', 'CPU', 'features', 'cores', 'memory GiB', 'queued',
             'last seen'], rows));
}

async function refreshStatus() {
  const s = await api('/api/status');
  document.getElementById('status').textContent =
      'workers ' + s.workers_busy + '/' + s.workers + ' busy · queues: compile ' +
      s.compile_queue + ', devices ' + s.device_queue + ' · agents ' + s.agents_connected +
      ' · cache ' + s.cache.hits + ' hits, ' + s.cache.misses + ' misses, ' +
      (s.cache.bytes / 2 ** 20).toFixed(1) + ' MiB';
}

async function render() {
  const view = document.getElementById('view');
  const [path, query] = (location.hash.slice(1) || '/').split('?');
  const params = new URLSearchParams(query || '');
  try {
    await refreshStatus();
    document.getElementById('login').hidden = true;
    if (path.startsWith('/job/')) await jobView(view, path.slice(5));
    else if (path === '/devices') await devicesView(view);
    else await jobsView(view, params);
  } catch (e) {
    if (e.message !== 'unauthenticated') {
      view.replaceChildren(el('p', {class: 'error', id: 'error'}, e.message));
    }
  }
}

function start() {
  clearInterval(timer);
  render();
  timer = setInterval(render, 1000);
}

window.addEventListener('hashchange', start);
window.addEventListener('DOMContentLoaded', () => {
  document.getElementById('login').addEventListener('submit', event => {
    event.preventDefault();
    token = document.getElementById('token').value;
    sessionStorage.setItem('kiln-token', token);
    start();
  });
  start();
});
