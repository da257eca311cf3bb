'use strict';
// install.js - `npm install` hook: build the addon with node-gyp from the committed wrapper,
// without downloading anything.
//  - libskycmd must be found by `pkg-config skycmd` (the libskycmd-dev package, or
//    PKG_CONFIG_PATH=<prefix>/lib/pkgconfig for a prefix install).
//  - node-gyp: the one npm runs scripts with ($npm_config_node_gyp: npm's own, or Debian's
//    /usr/share/nodejs/node-gyp), else `node-gyp` on PATH.
//  - Node headers: node-gyp would download them unless told where they are. When the
//    running node's own prefix has them (<prefix>/include/node/common.gypi, as Debian's
//    libnode-dev and the nodejs.org/NodeSource builds install them), install.js passes
//    --nodedir=<prefix>; an explicit --nodedir (npm_config_nodedir) wins. Debian's
//    node-gyp also finds /usr/include/nodejs by itself.
// SKYCMD_NODE_SKIP_BUILD=1 skips the build (for packaging steps that only need the files).
const { spawnSync, execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

function fail(msg) {
  console.error(`skycmd install: ${msg}`);
  process.exit(1);
}

if (process.env.SKYCMD_NODE_SKIP_BUILD === '1') {
  console.log('skycmd install: SKYCMD_NODE_SKIP_BUILD=1, not building the addon');
  process.exit(0);
}

try {
  const v = execFileSync('pkg-config', ['--modversion', 'skycmd'], { encoding: 'utf8' }).trim();
  console.log(`skycmd install: building against libskycmd ${v} (pkg-config)`);
} catch (e) {
  fail('libskycmd not found by `pkg-config skycmd`: install libskycmd-dev, or set ' +
       'PKG_CONFIG_PATH=<prefix>/lib/pkgconfig for a prefix install');
}

function nodeGyp() {
  const fromNpm = process.env.npm_config_node_gyp;
  if (fromNpm && fs.existsSync(fromNpm)) {
    // npm gives the node-gyp script (a .js file, or a bin launcher script).
    return /\.js$/.test(fromNpm) ? [process.execPath, [fromNpm]] : [fromNpm, []];
  }
  return ['node-gyp', []];
}

function headersDir() {
  if (process.env.npm_config_nodedir) return null; // node-gyp reads it itself
  const prefixes = [path.resolve(path.dirname(process.execPath), '..')];
  const configured = process.config && process.config.variables && process.config.variables.node_prefix;
  if (configured) prefixes.push(path.resolve(configured));
  for (const p of prefixes) {
    const inc = path.join(p, 'include', 'node');
    if (fs.existsSync(path.join(inc, 'common.gypi')) && fs.existsSync(path.join(inc, 'node_api.h'))) return p;
  }
  return null;
}

// Debian's node-gyp runs the system's gyp module (package gyp, in /usr/lib/python3): its
// Python must be the system one, not the python3 that comes first on PATH (an active
// virtualenv cannot import it). An explicit --python (npm_config_python) wins.
function debianPython(cmd, pre) {
  if (process.env.npm_config_python) return null;
  let script = pre.length ? pre[0] : cmd;
  try {
    if (!path.isAbsolute(script)) {
      script = execFileSync('sh', ['-c', 'command -v "$0"', script], { encoding: 'utf8' }).trim();
    }
    script = fs.realpathSync(script);
  } catch (e) {
    return null;
  }
  return script.startsWith('/usr/share/nodejs/node-gyp/') && fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : null;
}

const [cmd, pre] = nodeGyp();
const args = [...pre, 'rebuild'];
const nodedir = headersDir();
if (nodedir) args.push(`--nodedir=${nodedir}`);
const python = debianPython(cmd, pre);
if (python) args.push(`--python=${python}`);
console.log(`skycmd install: ${[cmd, ...args].join(' ')}`);
const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: __dirname });
if (r.error) fail(`cannot run node-gyp (${r.error.message}); install node-gyp (Debian: apt install node-gyp)`);
process.exit(r.status === null ? 1 : r.status);
