// Validates Kubernetes manifests offline against the Kubernetes API schema (the npm package
// kubernetes-models: kubectl needs a server even for a client dry-run).
//   node validate.cjs FILE.yaml...   every document of each file; exit 1 naming what is invalid
//   node validate.cjs --self-test    a known-bad object must fail (the check can fail at all)
// kubernetes-models checks types, required fields and formats, not unknown fields (a misspelt
// key passes): what the drain depends on is checked by name below, for a Deployment "ingestd".
'use strict';
const fs = require('fs');
const YAML = require('yaml');

function modelOf(doc) {
  if (!doc || typeof doc.apiVersion !== 'string' || typeof doc.kind !== 'string')
    throw new Error('a document without apiVersion and kind');
  let mod;
  try {
    mod = require(`kubernetes-models/${doc.apiVersion}`);
  } catch (e) {
    throw new Error(`unknown apiVersion ${doc.apiVersion}`);
  }
  const Model = mod[doc.kind];
  if (!Model)
    throw new Error(`unknown kind ${doc.kind} in ${doc.apiVersion}`);
  return new Model(doc);
}

function validate(doc) {
  modelOf(doc).validate();  // throws with the schema's complaint
}

function describe(doc) {
  return `${doc && doc.kind}/${doc && doc.metadata && doc.metadata.name}`;
}

/// The drain's requirements: each pod a node named after it, a preStop hook that
/// drains through the registry and waits, a termination grace that covers the drain bound, and a
/// PodDisruptionBudget over the Deployment's pods. Returns the problems.
function ingestdChecks(docs) {
  const problems = [];
  const deployment = docs.find((d) => d && d.kind === 'Deployment' && d.metadata && d.metadata.name === 'ingestd');
  if (!deployment)
    return problems;
  const configMap = docs.find((d) => d && d.kind === 'ConfigMap' && d.data && d.data['ingestd.json']);
  const cfg = configMap ? JSON.parse(configMap.data['ingestd.json']) : {};
  const worker = cfg.worker || {};
  const grace = worker.shutdown_grace_seconds || 600;
  const lease = worker.lease_seconds || 15;
  const heartbeat = worker.heartbeat_rate_seconds || Math.floor(lease / 3);
  // Seen within a heartbeat, then the node is gone at most grace + 30 s later (the watchdog).
  const bound = heartbeat + grace + 30;
  const pod = deployment.spec.template.spec;
  const container = (pod.containers || []).find((c) => c.name === 'ingestd');
  if (!container)
    return ['Deployment ingestd has no container "ingestd"'];
  const idEnv = (container.env || []).find((e) => e.name === 'INGESTD_WORKER__ID');
  if (!idEnv || !idEnv.valueFrom || !idEnv.valueFrom.fieldRef || idEnv.valueFrom.fieldRef.fieldPath !== 'metadata.name')
    problems.push('INGESTD_WORKER__ID is not the pod name (valueFrom.fieldRef metadata.name)');
  const preStop = container.lifecycle && container.lifecycle.preStop && container.lifecycle.preStop.exec;
  const command = preStop ? (preStop.command || []).join(' ') : '';
  const timeout = /--timeout (\d+)/.exec(command);
  if (!/ drain /.test(command) || !/--wait/.test(command) || !/INGESTD_WORKER__ID/.test(command))
    problems.push(`the preStop hook does not run "ingestd drain $INGESTD_WORKER__ID --wait": ${command || 'none'}`);
  else if (!timeout || Number(timeout[1]) < bound)
    problems.push(`the preStop hook waits less than the drain bound (${bound} s): ${command}`);
  const termination = pod.terminationGracePeriodSeconds || 30;
  if (termination < bound || (timeout && termination <= Number(timeout[1])))
    problems.push(`terminationGracePeriodSeconds ${termination} does not cover the drain bound (${bound} s) and the preStop wait`);
  const labels = deployment.spec.template.metadata.labels || {};
  const pdb = docs.find((d) => d && d.kind === 'PodDisruptionBudget');
  const selects = pdb && pdb.spec && pdb.spec.selector && pdb.spec.selector.matchLabels &&
    Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => labels[k] === v);
  if (!selects)
    problems.push("no PodDisruptionBudget selects the Deployment's pods");
  return problems;
}

function main(args) {
  if (args[0] === '--self-test') {
    const bad = {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: 'x'},
                 spec: {replicas: 'three', selector: {matchLabels: {a: 'b'}}, template: {}}};
    try {
      validate(bad);
    } catch (e) {
      console.log(`self-test: a bad Deployment is refused (${e.message.split('\n')[0]})`);
      const noDrain = ingestdChecks([{kind: 'Deployment', metadata: {name: 'ingestd'},
        spec: {template: {metadata: {labels: {app: 'ingestd'}}, spec: {containers: [{name: 'ingestd'}]}}}}]);
      if (noDrain.length >= 4) {
        console.log(`self-test: a Deployment without drain is refused (${noDrain.length} problems)`);
        return 0;
      }
      console.error(`self-test: a Deployment without drain passed the checks: ${noDrain}`);
      return 1;
    }
    console.error('self-test: a Deployment with replicas "three" passed validation');
    return 1;
  }
  let failed = 0;
  for (const file of args) {
    const docs = YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'));
    const objects = [];
    for (const d of docs) {
      if (d.errors.length > 0) {
        console.error(`${file}: YAML: ${d.errors[0].message}`);
        failed++;
        continue;
      }
      const doc = d.toJS();
      if (doc === null)
        continue;
      objects.push(doc);
      try {
        validate(doc);
        console.log(`${file}: ${describe(doc)} ok`);
      } catch (e) {
        console.error(`${file}: ${describe(doc)}: ${e.message}`);
        failed++;
      }
    }
    for (const problem of ingestdChecks(objects)) {
      console.error(`${file}: ${problem}`);
      failed++;
    }
  }
  return failed > 0 ? 1 : 0;
}

process.exit(main(process.argv.slice(2)));
