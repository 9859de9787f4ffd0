// Validates Grafana dashboards offline: against the dashboard types of the npm package
// @grafana/schema (type-checked with the TypeScript compiler), and their Prometheus queries
// (parsed with the PromQL grammar of the Prometheus UI, @prometheus-io/lezer-promql).
//   node validate.cjs DASHBOARD.json...                       the schema, layout and query checks
//   node validate.cjs --metrics SCRAPE.txt DASHBOARD.json...  also: every metric a query names is in
//                                                             SCRAPE.txt (a node's /metrics text)
//   node validate.cjs --self-test                             broken dashboards must be refused
// Exit 0 when everything holds; 1 naming each problem; 2 on a usage error.
//
// What @grafana/schema offers is TypeScript types only (no JSON Schema, no CUE): `Dashboard`,
// `Panel`, `RowPanel`, `VariableModel`, `DataQuery`, and per panel plugin its `Options` and
// `FieldConfig` (dist/esm/raw/composable/<plugin>/panelcfg/x/...). The check writes each dashboard
// out as a TypeScript object literal (so that excess-property checks apply: a misspelt key is an
// error, unlike with an imported .json) and has tsc --strict --exactOptionalPropertyTypes assign
// it to `Dashboard`, and each panel to its plugin's own types: `Panel` itself types `options` and
// `targets` as any record. String enums of the schema (e.g. LegendDisplayMode) are checked as the
// union of their values, which is what a JSON file can hold. The package has no type for
// Prometheus queries: `PrometheusQuery` below is `DataQuery` plus the fields of the Prometheus
// data source's query.
'use strict';
const fs = require('fs');
const path = require('path');
const ts = require('typescript');
const {parser: promql} = require('@prometheus-io/lezer-promql');

const here = __dirname;

/// Grafana's panel plugin ids that have types in @grafana/schema, and the folder that holds them.
const panelPlugins = {
  timeseries: 'timeseries', stat: 'stat', gauge: 'gauge', bargauge: 'bargauge', table: 'table',
  text: 'text', piechart: 'piechart', heatmap: 'heatmap', histogram: 'histogram',
  barchart: 'barchart', 'state-timeline': 'statetimeline', 'status-history': 'statushistory',
};

/// The module of a plugin's types as the package exports it, and whether it has a FieldConfig.
function pluginModule(type) {
  const dir = panelPlugins[type];
  if (!dir)
    return null;
  const pkg = JSON.parse(fs.readFileSync(path.join(here, 'node_modules/@grafana/schema/package.json'), 'utf8'));
  const key = Object.keys(pkg.exports).find((k) => k.includes(`/raw/composable/${dir}/panelcfg/`));
  if (!key)
    return null;
  const dts = fs.readFileSync(path.join(here, 'node_modules/@grafana/schema', pkg.exports[key].types), 'utf8');
  return {specifier: '@grafana/schema' + key.slice(1), fieldConfig: /export interface FieldConfig\b/.test(dts)};
}

const prelude = `
import type { Dashboard, DataQuery, FieldConfig, FieldConfigSource, Panel, RowPanel } from '@grafana/schema';

/** What JSON can hold of T: a string enum is the union of its values. */
type Json<T> = T extends string ? \`\${T}\`
  : T extends number | boolean | null | undefined ? T
  : T extends ReadonlyArray<infer U> ? Array<Json<U>>
  : T extends object ? { [K in keyof T]: Json<T[K]> }
  : T;

/** The query of Grafana's Prometheus data source (not in @grafana/schema): DataQuery and its fields. */
interface PrometheusQuery extends DataQuery {
  expr: string;
  legendFormat?: string;
  instant?: boolean;
  range?: boolean;
  exemplar?: boolean;
  format?: 'time_series' | 'table' | 'heatmap';
  interval?: string;
  intervalFactor?: number;
  editorMode?: 'code' | 'builder';
}

/** A panel of one plugin: its options and custom field config typed by the plugin's types. */
type PanelOf<Type extends string, Options, Custom> =
  Omit<Panel, 'type' | 'options' | 'fieldConfig' | 'targets'> & {
    type: Type;
    options?: Options;
    fieldConfig?: Omit<FieldConfigSource, 'defaults'> & { defaults: Omit<FieldConfig, 'custom'> & { custom?: Custom } };
    targets?: PrometheusQuery[];
  };
`;

/// Every panel of the dashboard, rows' panels included: {panel, where}.
function panelsOf(dashboard) {
  const out = [];
  const visit = (list, where) => {
    if (!Array.isArray(list))
      return;
    list.forEach((p, i) => {
      const at = `${where}[${i}]`;
      out.push({panel: p, where: at});
      if (p && p.type === 'row')
        visit(p.panels, `${at}.panels`);
    });
  };
  visit(dashboard.panels, 'panels');
  return out;
}

function describePanel(p, where) {
  if (!p || typeof p !== 'object')
    return where;
  return `panel ${p.id === undefined ? where : p.id} (${JSON.stringify(p.title || '')}, ${p.type})`;
}

/// The TypeScript source that assigns the dashboard to `Dashboard` and each panel to its plugin's
/// type; `declarations` maps line ranges back to what they check. Problems found while writing
/// it (a panel type without types) are returned too.
function typeSource(dashboard) {
  const problems = [];
  const imports = new Map();
  const declarations = [];
  let body = '';
  let line = prelude.split('\n').length;  // the imports go before the prelude's own lines
  const declare = (label, type, value) => {
    const text = `export const check_${declarations.length}: ${type} = ${JSON.stringify(value, null, 2)};\n`;
    const lines = text.split('\n').length - 1;
    declarations.push({label, first: line, last: line + lines - 1});
    line += lines;
    body += text;
  };
  declare('the dashboard', 'Json<Dashboard>', dashboard);
  for (const {panel, where} of panelsOf(dashboard)) {
    if (!panel || typeof panel !== 'object' || typeof panel.type !== 'string')
      continue;  // the Dashboard check reports it
    if (panel.type === 'row') {
      declare(describePanel(panel, where), 'Json<RowPanel>', panel);
      continue;
    }
    const mod = pluginModule(panel.type);
    if (!mod) {
      problems.push(`${describePanel(panel, where)}: panel type "${panel.type}" has no types in @grafana/schema ` +
                    `(known: ${Object.keys(panelPlugins).join(', ')})`);
      continue;
    }
    const alias = `plugin_${panel.type.replace(/[^a-z]/g, '_')}`;
    imports.set(alias, mod.specifier);
    const custom = mod.fieldConfig ? `${alias}.FieldConfig` : 'never';
    declare(describePanel(panel, where), `Json<PanelOf<'${panel.type}', ${alias}.Options, ${custom}>>`, panel);
  }
  const head = [...imports].map(([alias, spec]) => `import type * as ${alias} from '${spec}';`);
  // Line numbers above count from the prelude's first line: shift them past the imports.
  for (const d of declarations) {
    d.first += head.length;
    d.last += head.length;
  }
  return {text: head.join('\n') + (head.length ? '\n' : '') + prelude + body, declarations, problems};
}

const compilerOptions = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ['lib.es2022.d.ts'],
  types: [],
};

/// Type-checks each dashboard of `dashboards` ({label, dashboard}) in one compiler run; returns
/// the problems of each, in order.
function typeCheck(dashboards) {
  const sources = dashboards.map((d, i) => ({
    file: path.join(here, `.dashboard-check-${process.pid}-${i}.ts`),
    ...typeSource(d.dashboard),
  }));
  const byFile = new Map(sources.map((s) => [s.file, s]));
  const host = ts.createCompilerHost(compilerOptions);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    byFile.has(name) ? ts.createSourceFile(name, byFile.get(name).text, version, true) : getSourceFile(name, version, ...rest);
  host.fileExists = (name) => byFile.has(name) || fileExists(name);
  host.readFile = (name) => (byFile.has(name) ? byFile.get(name).text : readFile(name));
  const program = ts.createProgram(sources.map((s) => s.file), compilerOptions, host);
  const problems = sources.map((s) => [...s.problems]);
  for (const diag of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diag.messageText, '\n    ');
    const index = diag.file ? sources.findIndex((s) => s.file === diag.file.fileName) : -1;
    if (index < 0) {
      // Not in a dashboard: the package or the prelude does not compile; every dashboard fails.
      problems.forEach((p) => p.push(`the schema check itself does not compile: ${message}`));
      continue;
    }
    const s = sources[index];
    const {line} = diag.file.getLineAndCharacterOfPosition(diag.start);
    const decl = s.declarations.find((d) => line + 1 >= d.first && line + 1 <= d.last);
    const text = s.text.split('\n')[line].trim();
    problems[index].push(`${decl ? decl.label : 'the check'}: ${message}\n    at: ${text}`);
  }
  return problems;
}

/// Grafana's interval variables, as a duration or a number where a query uses them.
const intervalVariables = {
  __interval: '1m', __rate_interval: '1m', __range: '1h', __auto: '1m',
  __interval_ms: '60000', __range_ms: '3600000', __range_s: '3600',
};

/// The template variables a text refers to ($x, ${x}, ${x:format}, [[x]]).
function variableRefs(text) {
  const refs = [];
  const re = /\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]/g;
  for (let m; (m = re.exec(text));)
    refs.push(m[1] || m[2] || m[3]);
  return refs;
}

/// Parses a PromQL expression (Grafana's interval variables replaced by durations, other
/// variables left where they are: inside a string they are label values). Returns
/// {error} or {selectors: [{name, labels}]}: each vector selector's metric name and the label
/// names it matches on.
function parsePromql(expr) {
  const text = expr.replace(/\$\{(__[a-z_]+)\}|\$(__[a-z_]+)/g, (all, a, b) => intervalVariables[a || b] || all);
  const tree = promql.parse(text);
  let error = null;
  const selectors = [];
  tree.iterate({
    enter(n) {
      if (n.type.isError && error === null)
        error = n.from;
      if (n.name !== 'VectorSelector')
        return;
      const id = n.node.getChild('Identifier');
      const labels = [];
      let name = id ? text.slice(id.from, id.to) : null;
      const matchers = n.node.getChild('LabelMatchers');
      for (const m of matchers ? matchers.getChildren('UnquotedLabelMatcher') : []) {
        const label = m.getChild('LabelName');
        const value = m.getChild('StringLiteral');
        const op = m.getChild('MatchOp');
        const labelName = text.slice(label.from, label.to);
        if (labelName === '__name__') {
          if (op && text.slice(op.from, op.to) === '=' && value)
            name = JSON.parse(text.slice(value.from, value.to).replace(/^'|'$/g, '"'));
          else
            name = name || '';  // a name matched by a regex: cannot be checked, reported below
        } else {
          labels.push(labelName);
        }
      }
      selectors.push({name, labels});
    },
  });
  if (error !== null)
    return {error: `does not parse as PromQL at column ${error + 1}: ${text.slice(0, error)} <here> ${text.slice(error)}`};
  return {selectors};
}

/// The queries of the dashboard: {where, expr} for PromQL expressions (panel targets, a query
/// variable's query_result or label_values selector), with the label a label_values reads.
function queriesOf(dashboard, problems) {
  const queries = [];
  for (const {panel, where} of panelsOf(dashboard)) {
    if (!panel || !Array.isArray(panel.targets))
      continue;
    panel.targets.forEach((t, i) => {
      const at = `${describePanel(panel, where)} target ${t && t.refId ? t.refId : i}`;
      if (!t || typeof t.expr !== 'string' || t.expr.trim() === '')
        problems.push(`${at}: no PromQL expression (expr)`);
      else
        queries.push({where: at, expr: t.expr});
    });
  }
  const variables = (dashboard.templating && dashboard.templating.list) || [];
  for (const v of Array.isArray(variables) ? variables : []) {
    if (!v || v.type !== 'query')
      continue;
    const q = typeof v.query === 'string' ? v.query : v.query && v.query.query;
    const at = `variable ${v.name}`;
    if (typeof q !== 'string') {
      problems.push(`${at}: no query`);
      continue;
    }
    // The Prometheus data source's variable queries.
    let m;
    if ((m = /^\s*label_values\s*\(\s*(.+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$/s.exec(q)))
      queries.push({where: at, expr: m[1], label: m[2]});
    else if ((m = /^\s*query_result\s*\(\s*(.+)\s*\)\s*$/s.exec(q)))
      queries.push({where: at, expr: m[1]});
    else if (!/^\s*(label_values\s*\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)|label_names\s*\(\s*\)|metrics\s*\(.*\))\s*$/s.test(q))
      problems.push(`${at}: not a query of the Prometheus data source (label_values, label_names, metrics, query_result): ${q}`);
  }
  return queries;
}

/// The metric families and series of a Prometheus text scrape: {types: name -> type,
/// labels: sample name -> Set of label names}.
function parseScrape(text) {
  const types = new Map();
  const labels = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    let m;
    if ((m = /^#\s+TYPE\s+([A-Za-z_:][A-Za-z0-9_:]*)\s+(\w+)/.exec(line))) {
      types.set(m[1], m[2]);
    } else if (line !== '' && !line.startsWith('#') && (m = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{([^}]*)\})?\s/.exec(line))) {
      const set = labels.get(m[1]) || new Set();
      for (const l of (m[3] || '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"/g))
        set.add(l[1]);
      labels.set(m[1], set);
    }
  }
  return {types, labels};
}

/// Why `name` is not a metric of the scrape, or null when it is: a sample's name, a declared
/// family, or a histogram's _bucket/_sum/_count (a summary's _sum/_count) of a declared family.
function unknownMetric(name, scrape) {
  if (scrape.labels.has(name) || scrape.types.has(name))
    return null;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (m) {
    const type = scrape.types.get(m[1]);
    if (type === 'histogram' || (type === 'summary' && m[2] !== 'bucket'))
      return null;
    if (type)
      return `${name} is not exported: ${m[1]} is a ${type}, not a histogram`;
  }
  return `${name} is not exported by the daemon (not in the scrape)`;
}

/// The labels the series of `name` carry in the scrape, or null when the scrape has none of them
/// (a family declared without samples: nothing to compare with).
function labelsOf(name, scrape) {
  if (scrape.labels.has(name))
    return scrape.labels.get(name);
  return null;
}

/// Labels Prometheus adds to every series of a scrape target.
const targetLabels = new Set(['instance', 'job']);

function checkQueries(dashboard, scrape, problems) {
  const defined = new Set(((dashboard.templating && dashboard.templating.list) || []).map((v) => v && v.name));
  let count = 0;
  for (const q of queriesOf(dashboard, problems)) {
    count++;
    for (const ref of variableRefs(q.expr))
      if (!ref.startsWith('__') && !defined.has(ref))
        problems.push(`${q.where}: the variable $${ref} is not defined`);
    const parsed = parsePromql(q.expr);
    if (parsed.error) {
      problems.push(`${q.where}: ${parsed.error}`);
      continue;
    }
    if (parsed.selectors.length === 0)
      problems.push(`${q.where}: names no metric: ${q.expr}`);
    for (const s of parsed.selectors) {
      if (!s.name) {
        problems.push(`${q.where}: a selector without a metric name: ${q.expr}`);
        continue;
      }
      if (!scrape)
        continue;
      const why = unknownMetric(s.name, scrape);
      if (why) {
        problems.push(`${q.where}: ${why}: ${q.expr}`);
        continue;
      }
      const have = labelsOf(s.name, scrape);
      const wanted = q.label && parsed.selectors.length === 1 ? [...s.labels, q.label] : s.labels;
      for (const label of wanted)
        if (have && !targetLabels.has(label) && !have.has(label))
          problems.push(`${q.where}: ${s.name} has no label ${label} in the scrape (it has: ${[...have].join(', ') || 'none'})`);
    }
  }
  return count;
}

/// What the types cannot say: unique ids, a layout on the 24-column grid without overlaps, the
/// Prometheus data source through the dashboard's `datasource` variable, variables that exist.
function checkStructure(dashboard, problems) {
  if (!dashboard || typeof dashboard !== 'object' || !Array.isArray(dashboard.panels)) {
    problems.push('no panels');
    return;
  }
  const variables = (dashboard.templating && Array.isArray(dashboard.templating.list)) ? dashboard.templating.list : [];
  const byName = new Map(variables.filter((v) => v && typeof v.name === 'string').map((v) => [v.name, v]));
  const ds = byName.get('datasource');
  if (!ds || ds.type !== 'datasource' || ds.query !== 'prometheus')
    problems.push('no variable "datasource" of type datasource choosing a Prometheus data source');
  const expectedDs = (where, ref) => {
    if (!ref || ref.type !== 'prometheus' || ref.uid !== '${datasource}')
      problems.push(`${where}: the data source is not {"type": "prometheus", "uid": "\${datasource}"}: ${JSON.stringify(ref)}`);
  };
  for (const v of variables)
    if (v && v.type === 'query')
      expectedDs(`variable ${v.name}`, v.datasource);

  const ids = new Map();
  const placed = [];
  for (const {panel, where} of panelsOf(dashboard)) {
    if (!panel || typeof panel !== 'object')
      continue;
    const name = describePanel(panel, where);
    if (typeof panel.id !== 'number')
      problems.push(`${name}: no numeric id`);
    else if (ids.has(panel.id))
      problems.push(`${name}: id ${panel.id} is also ${ids.get(panel.id)}'s`);
    else
      ids.set(panel.id, where);
    const g = panel.gridPos;
    if (!g || ![g.x, g.y, g.w, g.h].every(Number.isInteger) || g.x < 0 || g.y < 0 || g.w < 1 || g.h < 1 || g.x + g.w > 24)
      problems.push(`${name}: gridPos is not a place on the 24-column grid: ${JSON.stringify(g)}`);
    else if (!where.includes('.panels'))  // the top-level panels share the grid
      placed.push({name, g});
    const texts = [panel.title, ...(Array.isArray(panel.targets) ? panel.targets : []).map((t) => t && t.legendFormat)];
    for (const text of texts)
      for (const ref of typeof text === 'string' ? variableRefs(text) : [])
        if (!ref.startsWith('__') && !byName.has(ref))
          problems.push(`${name}: the variable $${ref} is not defined`);
    if (panel.repeat !== undefined) {
      const v = byName.get(panel.repeat);
      if (!v)
        problems.push(`${name}: repeats by the variable $${panel.repeat}, which is not defined`);
      else if (!v.multi && !v.includeAll)
        problems.push(`${name}: repeats by ${panel.repeat}, which takes one value only (neither multi nor includeAll)`);
    }
    if (panel.type === 'row') {
      if (panel.collapsed === false && Array.isArray(panel.panels) && panel.panels.length > 0)
        problems.push(`${name}: an open row keeps its panels in the dashboard's list, not in its own`);
      continue;
    }
    expectedDs(name, panel.datasource);
    const targets = Array.isArray(panel.targets) ? panel.targets : [];
    if (panel.type !== 'text' && targets.length === 0)
      problems.push(`${name}: no queries (targets)`);
    const refIds = new Set();
    for (const t of targets) {
      if (t && refIds.has(t.refId))
        problems.push(`${name}: two queries with refId ${t.refId}`);
      if (t)
        refIds.add(t.refId);
      if (t && t.datasource !== undefined)
        expectedDs(`${name} target ${t.refId}`, t.datasource);
    }
  }
  for (let i = 0; i < placed.length; i++)
    for (let j = i + 1; j < placed.length; j++) {
      const a = placed[i].g;
      const b = placed[j].g;
      if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h)
        problems.push(`${placed[i].name} overlaps ${placed[j].name}`);
    }
}

/// Every check of each dashboard ({label, dashboard}); the problems of each, in order, and how
/// many queries each has.
function validate(dashboards, scrape) {
  const typed = typeCheck(dashboards);
  return dashboards.map((d, i) => {
    const problems = [...typed[i]];
    checkStructure(d.dashboard, problems);
    const queries = checkQueries(d.dashboard, scrape, problems);
    return {problems, queries};
  });
}

// ---- the self-test: each broken dashboard must be refused for the reason given ----

function selfTestDashboard() {
  const ds = {type: 'prometheus', uid: '${datasource}'};
  return {
    title: 'self-test', uid: 'self-test', schemaVersion: 38,
    templating: {list: [
      {name: 'datasource', type: 'datasource', query: 'prometheus'},
      {name: 'node', type: 'query', datasource: ds, query: 'label_values(app_node_info, node)', multi: true, includeAll: true, refresh: 2},
    ]},
    panels: [
      {id: 1, type: 'row', title: 'Node $node', collapsed: false, repeat: 'node', panels: [], gridPos: {h: 1, w: 24, x: 0, y: 0}},
      {id: 2, type: 'timeseries', title: 'Requests', datasource: ds, gridPos: {h: 8, w: 12, x: 0, y: 1},
       fieldConfig: {defaults: {unit: 'ops', custom: {lineWidth: 1}}, overrides: []},
       options: {legend: {calcs: [], displayMode: 'list', placement: 'bottom', showLegend: true}, tooltip: {mode: 'multi', sort: 'desc'}},
       targets: [{refId: 'A', expr: 'sum by (instance, code) (rate(app_requests_total[$__rate_interval])) * on(instance) group_left(node) app_node_info{node=~"$node"}', legendFormat: '{{node}} {{code}}'}]},
      {id: 3, type: 'timeseries', title: 'Latency p95', datasource: ds, gridPos: {h: 8, w: 12, x: 12, y: 1},
       targets: [{refId: 'A', expr: 'histogram_quantile(0.95, sum by (le) (rate(app_latency_seconds_bucket[5m])))'}]},
    ],
  };
}

const selfTestScrape = [
  '# TYPE app_requests_total counter', 'app_requests_total{code="200"} 3',
  '# TYPE app_latency_seconds histogram', 'app_latency_seconds_bucket{le="+Inf"} 3', 'app_latency_seconds_sum 1', 'app_latency_seconds_count 3',
  '# TYPE app_node_info gauge', 'app_node_info{node="n1",version="1.0.0"} 1',
  '# TYPE app_backlog gauge', 'app_backlog 0', '',
].join('\n');

/// Each case: a name, a change to the valid dashboard, and what the refusal must say.
const selfTestCases = [
  ['a field of the wrong type (gridPos.h "8")', (d) => { d.panels[1].gridPos.h = '8'; },
   /Type 'string' is not assignable to type 'number'/],
  ['a misspelt panel field (target)', (d) => { d.panels[2].target = d.panels[2].targets; delete d.panels[2].targets; },
   /Object literal may only specify known properties, and '"target"' does not exist/],
  ['an unknown panel type', (d) => { d.panels[2].type = 'graph-ish'; }, /panel type "graph-ish" has no types/],
  ['a panel without a type', (d) => { delete d.panels[2].type; }, /Property 'type' is missing/],
  ['a legend displayMode that Grafana does not have', (d) => { d.panels[1].options.legend.displayMode = 'sideways'; },
   /"sideways"' is not assignable to type '"hidden" \| "list" \| "table"'/],
  ['timeseries options missing the tooltip', (d) => { delete d.panels[1].options.tooltip; }, /Property 'tooltip' is missing/],
  ['a custom field config the plugin does not have', (d) => { d.panels[1].fieldConfig.defaults.custom.lineWidht = 1; },
   /'"lineWidht"' does not exist/],
  ['a query without refId', (d) => { delete d.panels[2].targets[0].refId; }, /Property 'refId' is missing/],
  ['a query whose expr is a number', (d) => { d.panels[2].targets[0].expr = 5; },
   /Type 'number' is not assignable to type 'string'/],
  ['a variable of an unknown type', (d) => { d.templating.list[1].type = 'querry'; }, /"querry"' is not assignable/],
  ['an open row holding panels', (d) => { d.panels[0].panels = [d.panels[2]]; d.panels.splice(2, 1); },
   /an open row keeps its panels in the dashboard's list/],
  ['PromQL that does not parse', (d) => { d.panels[2].targets[0].expr = 'sum(rate(app_latency_seconds_bucket[5m])'; },
   /does not parse as PromQL/],
  ['an unknown PromQL function', (d) => { d.panels[2].targets[0].expr = 'rated(app_requests_total[5m])'; },
   /does not parse as PromQL/],
  ['an undefined variable', (d) => { d.panels[1].targets[0].expr = 'app_backlog{instance=~"$nodes"}'; },
   /the variable \$nodes is not defined/],
  ['a repeat by an undefined variable', (d) => { d.panels[0].repeat = 'nodes'; },
   /repeats by the variable \$nodes, which is not defined/],
  ['another data source', (d) => { d.panels[2].datasource = {type: 'loki', uid: 'x'}; }, /the data source is not/],
  ['overlapping panels', (d) => { d.panels[2].gridPos.x = 6; }, /overlaps/],
  ['two panels with one id', (d) => { d.panels[2].id = 2; }, /id 2 is also/],
  ['a metric the scrape does not have', (d) => { d.panels[2].targets[0].expr = 'sum(rate(app_requests_totl[5m]))'; },
   /app_requests_totl is not exported/],
  ['_bucket of a gauge', (d) => { d.panels[2].targets[0].expr = 'histogram_quantile(0.9, rate(app_backlog_bucket[5m]))'; },
   /app_backlog is a gauge, not a histogram/],
  ['a variable query on a metric the scrape does not have', (d) => { d.templating.list[1].query = 'label_values(app_nodes_info, node)'; },
   /variable node: app_nodes_info is not exported/],
  ['a variable query reading a label the metric does not have', (d) => { d.templating.list[1].query = 'label_values(app_node_info, host)'; },
   /app_node_info has no label host/],
  ['a matcher on a label the metric does not have', (d) => { d.panels[2].targets[0].expr = 'app_requests_total{stage="x"}'; },
   /app_requests_total has no label stage/],
];

function selfTest() {
  const scrape = parseScrape(selfTestScrape);
  const dashboards = [{label: 'the valid dashboard', dashboard: selfTestDashboard()}];
  for (const [name, change] of selfTestCases) {
    const d = selfTestDashboard();
    change(d);
    dashboards.push({label: name, dashboard: d});
  }
  const results = validate(dashboards, scrape);
  let failed = 0;
  if (results[0].problems.length > 0) {
    console.error(`self-test: the valid dashboard is refused:\n  ${results[0].problems.join('\n  ')}`);
    failed++;
  } else {
    console.log('self-test: the valid dashboard passes');
  }
  selfTestCases.forEach(([name, , expected], i) => {
    const problems = results[i + 1].problems;
    const hit = problems.find((p) => expected.test(p));
    if (hit) {
      console.log(`self-test: refused, ${name}: ${hit.split('\n')[0]}`);
    } else {
      console.error(`self-test: NOT refused as expected (${expected}), ${name}: ${problems.join(' | ') || 'no problem found'}`);
      failed++;
    }
  });
  console.log(`${selfTestCases.length + 1 - failed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

function main(args) {
  if (args[0] === '--self-test' && args.length === 1)
    return selfTest();
  let scrape = null;
  if (args[0] === '--metrics') {
    if (args.length < 3) {
      console.error('usage: validate.cjs [--metrics SCRAPE.txt] DASHBOARD.json... | --self-test');
      return 2;
    }
    scrape = parseScrape(fs.readFileSync(args[1], 'utf8'));
    if (scrape.types.size === 0) {
      console.error(`${args[1]}: no metric family (# TYPE) in the scrape`);
      return 1;
    }
    args = args.slice(2);
  }
  if (args.length === 0) {
    console.error('usage: validate.cjs [--metrics SCRAPE.txt] DASHBOARD.json... | --self-test');
    return 2;
  }
  const dashboards = [];
  let failed = 0;
  for (const file of args) {
    try {
      dashboards.push({label: file, dashboard: JSON.parse(fs.readFileSync(file, 'utf8'))});
    } catch (e) {
      console.error(`${file}: ${e.message}`);
      failed++;
    }
  }
  const results = validate(dashboards, scrape);
  dashboards.forEach((d, i) => {
    const {problems, queries} = results[i];
    if (problems.length > 0) {
      for (const p of problems)
        console.error(`${d.label}: ${p}`);
      const unknown = new Set(problems.map((p) => / (\S+) is not exported/.exec(p)).filter(Boolean).map((m) => m[1]));
      if (unknown.size > 0)
        console.error(`${d.label}: metrics not in the scrape: ${[...unknown].sort().join(', ')}`);
      failed++;
    } else {
      const panels = panelsOf(d.dashboard).length;
      console.log(`${d.label}: ok (${panels} panels, ${queries} queries${scrape ? ', every metric in the scrape' : ''})`);
    }
  });
  return failed > 0 ? 1 : 0;
}

process.exit(main(process.argv.slice(2)));
