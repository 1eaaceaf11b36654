#!/usr/bin/env node
// verify9421.mjs: checks one RFC 9421 signed HTTP request (Signature-Input, Signature, and an
// RFC 9530 Content-Digest for a body) with two independent JavaScript implementations:
//
//   httpsig  http-message-signatures (npm): httpbis.verifyMessage with createVerifier, requiring the
//            keyid and created parameters and the components Mastodon requires (@method,
//            @target-uri, and content-digest on a POST)
//   misskey  @misskey-dev/node-http-message-signatures (Misskey): its RFC9421SignatureBaseFactory
//            builds the signature base (0.0.10 has no RFC 9421 verify function), node:crypto checks
//            the signature over it, and its verifyRFC9530DigestHeader checks Content-Digest
//
// http-message-signatures never reads the body, so for it Content-Digest (sha-256, as Mastodon
// requires) is checked here against the body with node:crypto.
//
// Input (stdin): the JSON object verify.mjs reads ({method, url (absolute), headers, body or
// bodyBase64, publicKeyPem}). Output: one JSON line per library, {"lib", "ok", "error"}.
// Exit status: 0 when both accepted, 1 when one rejected, 2 when the input is unusable.
import crypto from 'node:crypto';
import { httpbis, createVerifier } from 'http-message-signatures';
import { RFC9421SignatureBaseFactory, verifyRFC9530DigestHeader } from '@misskey-dev/node-http-message-signatures';

/** Reads all of stdin as text. */
async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

/** Normalises the input into {method, url, headers, body (Buffer), publicKeyPem, label, input}. */
function normalise(input) {
  if (!input || typeof input !== 'object') throw new Error('input is not a JSON object');
  for (const k of ['method', 'url', 'publicKeyPem']) {
    if (typeof input[k] !== 'string' || input[k] === '') throw new Error(`input.${k} missing`);
  }
  const url = new URL(input.url); // RFC 9421 signs @target-uri: the URL must be absolute
  const headers = {};
  for (const [k, v] of Object.entries(input.headers ?? {})) {
    headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  headers.host ??= url.host;
  if (!headers['signature-input']) throw new Error('no Signature-Input header');
  const m = /^\s*([a-z*][a-z0-9_.*-]*)=(\([^)]*\)[^,]*)/.exec(headers['signature-input']);
  if (!m) throw new Error(`unreadable Signature-Input ${JSON.stringify(headers['signature-input'])}`);
  const body = typeof input.bodyBase64 === 'string' ? Buffer.from(input.bodyBase64, 'base64') : Buffer.from(input.body ?? '', 'utf8');
  return { method: input.method.toUpperCase(), url, headers, body, publicKeyPem: input.publicKeyPem, label: m[1], input: m[2] };
}

/** The alg the signature names, else the one the key implies (RFC 9421 §3.2). */
function algOf(req) {
  const named = /;alg="([^"]*)"/.exec(req.input);
  if (named) return named[1];
  const type = crypto.createPublicKey(req.publicKeyPem).asymmetricKeyType;
  return { rsa: 'rsa-v1_5-sha256', ed25519: 'ed25519', 'rsa-pss': 'rsa-pss-sha512' }[type] ?? type;
}

/** The components an inbox requires, as Mastodon does. */
function requiredComponents(req) {
  const c = ['@method', '@target-uri'];
  if (req.body.length > 0 || req.method === 'POST') c.push('content-digest');
  return c;
}

/** Checks Content-Digest's sha-256 against the body with node:crypto. */
function checkContentDigestHere(req) {
  const cd = req.headers['content-digest'];
  if (cd === undefined) {
    if (req.body.length > 0 || req.method === 'POST') throw new Error('no Content-Digest for a request with a body');
    return;
  }
  const m = /(?:^|,)\s*sha-256=:([^:]*):/.exec(cd);
  if (!m) throw new Error(`Content-Digest has no sha-256: ${JSON.stringify(cd)}`);
  const want = crypto.createHash('sha256').update(req.body).digest('base64');
  if (m[1] !== want) throw new Error(`Content-Digest sha-256 mismatch: header ${m[1]}, body ${want}`);
}

/** http-message-signatures' verifyMessage, with the keyid and created parameters required. */
async function viaHttpsig(req) {
  checkContentDigestHere(req);
  const alg = algOf(req);
  const ok = await httpbis.verifyMessage({
    keyLookup: async () => ({ algs: [alg], verify: createVerifier(req.publicKeyPem, alg) }),
    requiredParams: ['keyid', 'created'],
    requiredFields: requiredComponents(req),
    maxAge: 3600, tolerance: 5,
  }, { method: req.method, url: req.url.href, headers: req.headers });
  if (ok !== true) throw new Error(`verifyMessage returned ${ok}`);
}

/** Misskey's signature base and Content-Digest check, node:crypto's signature check. */
async function viaMisskey(req) {
  for (const c of requiredComponents(req)) {
    if (!req.input.includes(`"${c}"`)) throw new Error(`${c} is not covered`);
  }
  if (!/;created=\d+/.test(req.input) || !/;keyid="/.test(req.input)) throw new Error('keyid or created missing');
  if (req.headers['content-digest'] !== undefined || req.body.length > 0) {
    const errors = [];
    const fake = { method: req.method, url: req.url.pathname + req.url.search, headers: req.headers };
    if (await verifyRFC9530DigestHeader(fake, req.body, { algorithms: ['sha-256'] }, (e) => errors.push(String(e))) !== true) {
      throw new Error(`Content-Digest: ${errors.join('; ') || 'rejected'}`);
    }
  }
  const base = new RFC9421SignatureBaseFactory({ method: req.method, url: req.url.href, headers: req.headers }).generate(req.label);
  const m = new RegExp(`(?:^|,)\\s*${req.label.replace(/[.*]/g, '\\$&')}=:([^:]*):`).exec(req.headers.signature ?? '');
  if (!m) throw new Error(`no Signature for label ${req.label}`);
  const sig = Buffer.from(m[1], 'base64');
  const key = crypto.createPublicKey(req.publicKeyPem);
  const alg = algOf(req);
  let ok;
  switch (alg) {
    case 'rsa-v1_5-sha256': ok = crypto.verify('sha256', Buffer.from(base), key, sig); break;
    case 'rsa-pss-sha512': ok = crypto.verify('sha512', Buffer.from(base), { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: crypto.constants.RSA_PSS_SALTLEN_AUTO }, sig); break;
    case 'ed25519': ok = crypto.verify(null, Buffer.from(base), key, sig); break;
    default: throw new Error(`alg ${alg} is not checked here`);
  }
  if (!ok) throw new Error(`${alg} signature does not verify over the base:\n${base}`);
}

async function main() {
  let req;
  try {
    req = normalise(JSON.parse(await readStdin()));
  } catch (e) {
    process.stdout.write(JSON.stringify({ lib: 'input', ok: false, error: String(e?.message ?? e) }) + '\n');
    process.exitCode = 2;
    return;
  }
  let allOK = true;
  for (const [lib, fn] of [['httpsig', viaHttpsig], ['misskey', viaMisskey]]) {
    let error = null;
    try {
      await fn({ ...req, headers: { ...req.headers } });
    } catch (e) {
      error = `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
    }
    if (error !== null) allOK = false;
    process.stdout.write(JSON.stringify({ lib, ok: error === null, error }) + '\n');
  }
  process.exitCode = allOK ? 0 : 1;
}

await main();
