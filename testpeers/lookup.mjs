#!/usr/bin/env node
// lookup.mjs: resolve fediverse actors the way a Fedify 1.5.9 server does, and say whether each
// passes the checks real servers make. This is how CI proves that Fedify resolves every actor of
// the crowd's origins (WebFinger round trip, actor document, public key and its owner).
//
// usage: node lookup.mjs RESOURCE...    (acct:alice@flood3.test, alice@flood3.test or an actor URL)
//        node lookup.mjs < list         (one resource a line, when no argument is given)
// Prints one JSON line per resource:
//   {resource, ok, error, webfinger (the JRD's subject), selfHref, actorId, type, preferredUsername,
//    inbox, sharedInbox, outbox, followers, publicKeyId, publicKeyOwner, publicKeyPem (bool),
//    selfMatches (self link href === actor id), ownerMatches (key owner === actor id)}
// Exit status: 0 when every resource is ok, 1 when any fails, 2 on a usage error.
// Private (loopback) addresses are allowed: the crowd lives on 127.0.0.0/8. Trust the crowd's CA
// with NODE_EXTRA_CA_CERTS; name resolution is the system's (a netns resolv.conf).
import { getDocumentLoader, isActor, lookupObject, lookupWebFinger } from '@fedify/fedify';

/** Reads newline-separated resources from stdin. */
async function stdinResources() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8').split('\n').map((s) => s.trim()).filter((s) => s && !s.startsWith('#'));
}

/** The WebFinger resource for an input: acct: URI for handles, the URL itself for URLs. */
function webfingerResource(r) {
  if (/^https?:\/\//i.test(r) || r.startsWith('acct:')) return r;
  return 'acct:' + r.replace(/^@/, '');
}

const documentLoader = getDocumentLoader({ allowPrivateAddress: true });
const userAgent = 'crowd-testpeers-lookup (Fedify/1.5.9)';

/** Looks one resource up; never throws. */
async function lookup(resource) {
  const out = { resource, ok: false, error: null };
  try {
    const wf = webfingerResource(resource);
    const jrd = await lookupWebFinger(wf, { allowPrivateAddress: true, userAgent });
    if (jrd == null) throw new Error(`WebFinger found nothing for ${wf}`);
    out.webfinger = jrd.subject ?? null;
    const self = (jrd.links ?? []).find((l) => l.rel === 'self' &&
      (l.type === 'application/activity+json' || /^application\/ld\+json/.test(l.type ?? '')));
    out.selfHref = self?.href ?? null;

    const obj = await lookupObject(resource.startsWith('acct:') || /^https?:/i.test(resource) ? resource : '@' + resource.replace(/^@/, ''),
      { documentLoader, allowPrivateAddress: true, userAgent });
    if (obj == null) throw new Error('lookupObject found nothing');
    if (!isActor(obj)) throw new Error(`not an actor: ${obj.constructor.name}`);
    out.actorId = obj.id?.href ?? null;
    out.type = obj.constructor.name;
    out.preferredUsername = obj.preferredUsername?.toString() ?? null;
    out.inbox = obj.inboxId?.href ?? null;
    out.sharedInbox = obj.endpoints?.sharedInbox?.href ?? null;
    out.outbox = obj.outboxId?.href ?? null;
    out.followers = obj.followersId?.href ?? null;
    const key = await obj.getPublicKey({ documentLoader });
    out.publicKeyId = key?.id?.href ?? null;
    out.publicKeyOwner = key?.ownerId?.href ?? null;
    out.publicKeyPem = key?.publicKey != null;
    out.selfMatches = out.selfHref != null && out.selfHref === out.actorId;
    out.ownerMatches = out.publicKeyOwner != null && out.publicKeyOwner === out.actorId;

    const problems = [];
    if (!out.selfMatches) problems.push(`WebFinger self href ${out.selfHref} != actor id ${out.actorId}`);
    if (out.inbox == null) problems.push('no inbox');
    if (out.publicKeyId == null || !out.publicKeyPem) problems.push('no usable public key');
    if (!out.ownerMatches) problems.push(`key owner ${out.publicKeyOwner} != actor id ${out.actorId}`);
    if (problems.length) throw new Error(problems.join('; '));
    out.ok = true;
  } catch (e) {
    out.error = String(e?.message ?? e);
  }
  return out;
}

const args = process.argv.slice(2);
if (args.includes('-h') || args.includes('--help')) {
  process.stdout.write('usage: node lookup.mjs RESOURCE...  (or resources on stdin, one a line)\n');
  process.exit(0);
}
const resources = args.length ? args : await stdinResources();
if (resources.length === 0) {
  process.stderr.write('lookup.mjs: no resource given\n');
  process.exit(2);
}
let failed = 0;
// A few at a time: fast enough for hundreds of actors, gentle on a 2-core machine.
const queue = [...resources.entries()];
const results = new Array(resources.length);
await Promise.all(Array.from({ length: Math.min(4, queue.length) }, async () => {
  for (let item = queue.shift(); item; item = queue.shift()) results[item[0]] = await lookup(item[1]);
}));
for (const r of results) {
  if (!r.ok) failed++;
  process.stdout.write(JSON.stringify(r) + '\n');
}
process.exitCode = failed ? 1 : 0;
