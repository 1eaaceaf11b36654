// Generates RFC 9421 fixtures for signing's tests with an implementation no one
// here wrote: the signature base comes from Misskey's
// @misskey-dev/node-http-message-signatures (RFC9421SignatureBaseFactory), the
// signature from node:crypto. Run by `go test ./signing -run RFC9421Fixtures -update`
// (or by hand: node gen.mjs PEERS_DIR) where PEERS_DIR holds node_modules with
// that package (the repository's testpeers/); writes fixtures.json.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const peers = path.resolve(process.argv[2] ?? '../../../testpeers');
const { RFC9421SignatureBaseFactory } = createRequire(path.join(peers, 'package.json'))('@misskey-dev/node-http-message-signatures');

const created = 1748779200; // 2025-06-01T12:00:00Z; the Go test sets its clock to it
const date = new Date(created * 1000).toUTCString();
const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const ed = crypto.generateKeyPairSync('ed25519');
const pem = (k) => k.publicKey.export({ type: 'spki', format: 'pem' });
const body = JSON.stringify({
  '@context': 'https://www.w3.org/ns/activitystreams',
  id: 'https://sut.test/users/bob/follows/1', type: 'Follow',
  actor: 'https://sut.test/users/bob', object: 'https://flood3.test/users/alice',
});
const contentDigest = 'sha-256=:' + crypto.createHash('sha256').update(body).digest('base64') + ':';

const cases = [
  { // Fedify >= 1.6 shape: POST, rsa-v1_5-sha256
    name: 'fedify-shaped POST rsa-v1_5-sha256', key: rsa, alg: 'rsa-v1_5-sha256',
    method: 'POST', url: 'https://flood3.test/users/alice/inbox', body,
    headers: { host: 'flood3.test', date, 'content-type': 'application/activity+json', 'content-digest': contentDigest },
    input: `sig1=("@method" "@target-uri" "@authority" "host" "date" "content-digest");created=${created};keyid="https://sut.test/users/bob#main-key";alg="rsa-v1_5-sha256"`,
  },
  { // signed GET with ed25519 and more derived components
    name: 'GET ed25519', key: ed, alg: 'ed25519',
    method: 'GET', url: 'https://flood3.test/users/alice', body: '',
    headers: { host: 'flood3.test', date, accept: 'application/activity+json' },
    input: `sig1=("@method" "@target-uri" "@path" "@scheme" "host" "date" "accept");created=${created};keyid="https://sut.test/users/bob#ed-key";alg="ed25519"`,
  },
  { // query components, expires, nonce, tag, no alg (derived from the key)
    name: 'POST with query, no alg', key: rsa, alg: 'rsa-v1_5-sha256',
    method: 'POST', url: 'https://flood3.test/inbox?x=1&y=two', body,
    headers: { host: 'flood3.test', 'content-type': 'application/activity+json', 'content-digest': contentDigest },
    input: `sig1=("@method" "@target-uri" "@authority" "@path" "@query" "content-digest" "content-type");created=${created};expires=${created + 300};keyid="https://sut.test/users/bob#main-key";nonce="n-1";tag="fixture"`,
  },
  { // RSA-PSS with SHA-512, label other than sig1
    name: 'POST rsa-pss-sha512', key: rsa, alg: 'rsa-pss-sha512',
    method: 'POST', url: 'https://flood3.test/users/alice/inbox', body,
    headers: { host: 'flood3.test', date, 'content-digest': contentDigest },
    input: `mastodon=("@method" "@target-uri" "content-digest");created=${created};keyid="https://sut.test/users/bob#main-key";alg="rsa-pss-sha512"`,
  },
];

const out = [];
for (const c of cases) {
  const headers = { ...c.headers, 'signature-input': c.input };
  const label = c.input.slice(0, c.input.indexOf('='));
  const base = new RFC9421SignatureBaseFactory({ method: c.method, url: c.url, headers }).generate(label);
  let sig;
  if (c.alg === 'ed25519') sig = crypto.sign(null, Buffer.from(base), c.key.privateKey);
  else if (c.alg === 'rsa-pss-sha512') sig = crypto.sign('sha512', Buffer.from(base), { key: c.key.privateKey, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 });
  else sig = crypto.sign('sha256', Buffer.from(base), c.key.privateKey);
  headers.signature = `${label}=:${sig.toString('base64')}:`;
  out.push({ name: c.name, publicKeyPem: pem(c.key), base, request: { method: c.method, url: c.url, headers, body: c.body } });
}
fs.writeFileSync(new URL('fixtures.json', import.meta.url), JSON.stringify({ created, cases: out }, null, 2) + '\n');
