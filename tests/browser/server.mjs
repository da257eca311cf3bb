// server.mjs - a tiny static file server on 127.0.0.1 for the browser tests and the demo
// page (Node's http module only, no dependencies):
//
//   node server.mjs [--port N] ROOT [URLPATH=FILE ...]
//
// serves the directory ROOT at / and each extra FILE at its URLPATH (so the wasm module
// and the models need not be copied next to the page). Port 0 (the default) takes a free
// one; the first line on stdout is "listening http://127.0.0.1:PORT/". Every response has a
// Content-Length (the page's download progress needs it) and the right Content-Type
// (application/wasm lets browsers compile while downloading); none has COOP/COEP headers, on
// purpose: the module is single-threaded and must work on static hosts that cannot set them.
// Only GET and HEAD; paths are confined to ROOT.
import { createServer } from 'node:http';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.gguf': 'application/octet-stream',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};

export function startServer({ root, files = {}, port = 0, log = () => {} }) {
  const rootDir = path.resolve(root);
  const mounts = new Map(Object.entries(files).map(([u, f]) => [u, path.resolve(f)]));

  async function resolve(urlPath) {
    if (mounts.has(urlPath)) return mounts.get(urlPath);
    const file = path.resolve(rootDir, '.' + urlPath);
    if (file !== rootDir && !file.startsWith(rootDir + path.sep)) return null;
    const st = await fs.stat(file).catch(() => null);
    if (st && st.isDirectory()) return path.join(file, 'index.html');
    return file;
  }

  const server = createServer(async (req, res) => {
    let urlPath;
    try {
      urlPath = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    // A directory without its trailing slash: redirect, so that the page's relative URLs work.
    if (!mounts.has(urlPath) && !urlPath.endsWith('/')) {
      const st = await fs.stat(path.resolve(rootDir, '.' + urlPath)).catch(() => null);
      if (st && st.isDirectory()) {
        res.writeHead(301, { Location: urlPath + '/' }).end();
        return;
      }
    }
    const file = await resolve(urlPath);
    const st = file && (await fs.stat(file).catch(() => null));
    if (!st || !st.isFile()) {
      log(`404 ${urlPath}`);
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`not found: ${urlPath}\n`);
      return;
    }
    res.writeHead(200, {
      'Content-Type': TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream',
      'Content-Length': st.size,
      'Cache-Control': 'no-store',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
  });

  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      const { port: p } = server.address();
      ok({ server, url: `http://127.0.0.1:${p}/`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

// Run as a program.
if (import.meta.url === new URL(`file://${path.resolve(process.argv[1] || '')}`).href) {
  const args = process.argv.slice(2);
  let port = 0;
  if (args[0] === '--port') {
    port = Number(args[1]);
    args.splice(0, 2);
  }
  if (!args[0]) {
    console.error('usage: node server.mjs [--port N] ROOT [URLPATH=FILE ...]');
    process.exit(2);
  }
  const files = Object.fromEntries(args.slice(1).map((a) => {
    const i = a.indexOf('=');
    return [a.slice(0, i), a.slice(i + 1)];
  }));
  const { url } = await startServer({ root: args[0], files, port, log: (m) => console.error(m) });
  console.log(`listening ${url}`);
}
