#!/usr/bin/env node
// verify.mjs: checks one signed HTTP request (draft-cavage HTTP Signatures + Digest) with three
// independent JavaScript verifiers that real fediverse servers use or used:
//
//   misskey  @misskey-dev/node-http-message-signatures (Misskey): parseRequestSignature +
//            verifyDraftSignature, and its own verifyDigestHeader against the body
//   joyent   http-signature (Joyent): parseRequest + verifySignature
//   apsig    activitypub-http-signatures: parse + Signature.verify
//
// joyent and apsig never look at the body, so for them the Digest header is checked here against
// the body with node:crypto (as the servers that use them do beside the library).
//
// Input (stdin, one JSON object):
//   {"method": "POST", "url": "https://flood3.test/users/alice/inbox" (or "/users/alice/inbox"),
//    "headers": {"host": "...", "date": "...", "digest": "...", "signature": "...", ...}
//               (lower-cased names; a value may be a string or an array of strings),
//    "body": "<the exact body as text>"  (or "bodyBase64": "..."),
//    "publicKeyPem": "-----BEGIN PUBLIC KEY-----..."}
// Output: one JSON line per library on stdout: {"lib": "...", "ok": true|false, "error": "..."}.
// Exit status: 0 when every library accepted, 1 when any rejected, 2 when the input is unusable.
import crypto from 'node:crypto';
import {
  parseRequestSignature,
  verifyDraftSignature,
  verifyDigestHeader,
} from '@misskey-dev/node-http-message-signatures';
import httpSignature from 'http-signature';
import apsig from 'activitypub-http-signatures';

/** Reads all of stdin as text. */
async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

/** Normalises the input into {method, target, headers, body (Buffer), publicKeyPem}. */
function normalise(input) {
  if (!input || typeof input !== 'object') throw new Error('input is not a JSON object');
  for (const k of ['method', 'url', 'publicKeyPem']) {
    if (typeof input[k] !== 'string' || input[k] === '') throw new Error(`input.${k} missing`);
  }
  if (!input.headers || typeof input.headers !== 'object') throw new Error('input.headers missing');
  const headers = {};
  for (const [k, v] of Object.entries(input.headers)) {
    // Several values of one header are joined the way an HTTP server presents them.
    headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  let target = input.url;
  if (!target.startsWith('/')) {
    const u = new URL(input.url);
    target = u.pathname + u.search;
    // Go keeps Host outside the header map; a verifier needs it among the headers.
    headers.host ??= u.host;
  }
  let body;
  if (typeof input.bodyBase64 === 'string') body = Buffer.from(input.bodyBase64, 'base64');
  else body = Buffer.from(input.body ?? '', 'utf8');
  return { method: input.method.toUpperCase(), target, headers, body, publicKeyPem: input.publicKeyPem };
}

/** The headers a real inbox insists are signed: digest too when there is a body. */
function requiredHeaders(req) {
  const h = ['(request-target)', 'host', 'date'];
  if (req.body.length > 0 || req.method === 'POST') h.push('digest');
  return h;
}

/** Checks Digest against the body with node:crypto; throws with the reason when it fails. */
function checkDigestHere(req) {
  const d = req.headers.digest;
  if (d === undefined) {
    if (req.body.length > 0 || req.method === 'POST') throw new Error('no Digest header for a request with a body');
    return;
  }
  // Digest: SHA-256=base64[,SHA-512=...]: every algorithm we know must match, and SHA-256 must be there.
  let sawSha256 = false;
  for (const part of d.split(',')) {
    const i = part.indexOf('=');
    if (i < 0) throw new Error(`malformed Digest ${JSON.stringify(d)}`);
    const alg = part.slice(0, i).trim().toLowerCase();
    const val = part.slice(i + 1).trim();
    const nodeAlg = { 'sha-256': 'sha256', 'sha-512': 'sha512' }[alg];
    if (!nodeAlg) continue;
    const want = crypto.createHash(nodeAlg).update(req.body).digest('base64');
    if (val !== want) throw new Error(`Digest ${alg} mismatch: header ${val}, body ${want}`);
    if (alg === 'sha-256') sawSha256 = true;
  }
  if (!sawSha256) throw new Error(`Digest has no SHA-256: ${JSON.stringify(d)}`);
}

/** Misskey's own pipeline, as its inbox runs it. */
async function viaMisskey(req) {
  const fake = { method: req.method, url: req.target, headers: req.headers };
  const errors = [];
  // Misskey checks Digest on inbox POSTs; a bodiless signed GET carries none.
  if (req.body.length > 0 || req.method === 'POST' || req.headers.digest !== undefined) {
    const digestOK = await verifyDigestHeader(fake, req.body, true, (e) => errors.push(String(e)));
    if (digestOK !== true) throw new Error(`digest: ${errors.join('; ') || 'rejected'}`);
  }
  const parsed = parseRequestSignature(fake, { requiredComponents: { draft: requiredHeaders(req) } });
  if (parsed.version !== 'draft') throw new Error(`not a draft signature: ${parsed.version}`);
  const ok = await verifyDraftSignature(parsed.value, req.publicKeyPem, (e) => errors.push(String(e)));
  if (ok !== true) throw new Error(`signature: ${errors.join('; ') || 'rejected'}`);
}

/** Joyent's http-signature, given an IncomingMessage-shaped object. */
function viaJoyent(req) {
  checkDigestHere(req);
  const fake = { method: req.method, url: req.target, httpVersion: '1.1', headers: req.headers };
  const parsed = httpSignature.parseRequest(fake, { headers: requiredHeaders(req) });
  if (!httpSignature.verifySignature(parsed, req.publicKeyPem)) throw new Error('signature: verifySignature returned false');
}

/** activitypub-http-signatures: parse + verify; it checks no required headers, so do that here. */
function viaApsig(req) {
  checkDigestHere(req);
  const sig = apsig.parse({ url: req.target, method: req.method, headers: req.headers });
  if (sig === null) throw new Error('no Signature header');
  const m = /(?:^|,)\s*headers\s*=\s*"([^"]*)"/i.exec(req.headers.signature);
  const signed = (m ? m[1] : 'date').toLowerCase().split(/\s+/);
  for (const h of requiredHeaders(req)) {
    if (!signed.includes(h)) throw new Error(`${h} is not signed`);
  }
  if (!sig.verify(req.publicKeyPem)) throw new Error('signature: verify returned false');
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
  for (const [lib, fn] of [['misskey', viaMisskey], ['joyent', viaJoyent], ['apsig', viaApsig]]) {
    let error = null;
    try {
      // Each library gets its own copy: some of them write into the headers they are given.
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
