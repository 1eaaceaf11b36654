#!/usr/bin/env node
// fedify-peer.mjs: a real Fedify 1.5.9 server, used as the server under test (SUT) for the flood
// and as a peer that follows and is followed by the crowd's actors. Nothing here imitates the crowd:
// every signature, key fetch, WebFinger lookup and delivery is Fedify's own code.
//
// It serves HTTPS (node:https; a certificate issued by the crowd's CA) on --listen for --domain,
// and a plain-HTTP JSON control API on --control (loopback) that tests use to drive it and read
// what it verified. See README.md in this folder for the flags and the control API.
//
// Outbound deliveries (Accepts, Follows, Undos, posts to followers) go through Fedify's retrying
// outbox queue, set up by the --delivery-* and --retry-* flags (delivery.mjs) and reported with
// every attempt by GET /delivery. The schedule, Fedify 1.5.9's own (createExponentialBackoffPolicy
// and #listenOutboxMessage): attempts are numbered from 0, the first send. After attempt k fails (a
// network error, a timeout, any status but 2xx), the retry waits round(initialDelay · factor^k ·
// (1 + U[0,1))) capped at maxDelay: within [initialDelay·factor^k, 2·initialDelay·factor^k] (the
// upper end reachable only by the rounding). After attempt k = maxAttempts fails it gives up: at
// most maxAttempts retries, maxAttempts + 1 attempts in all. The wait runs from the failure to the
// re-enqueue; with every worker busy, the attempt starts when one is free.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { parseArgs } from 'node:util';
import { Temporal } from '@js-temporal/polyfill';
import { configure, getConsoleSink } from '@logtape/logtape';
import {
  Accept, Activity, Announce, Application, Create, Delete, Endpoints, Follow, Like, Note, Person, PUBLIC_COLLECTION,
  Reject, Undo, Update, createExponentialBackoffPolicy, createFederation, generateCryptoKeyPair,
  isActor, MemoryKvStore, CryptographicKey, fetchKey,
} from '@fedify/fedify';
import { deliveryHelp, deliveryOptions, newDelivery, parseDeliveryFlags, backoffOptions } from './delivery.mjs';

// ---------------------------------------------------------------------------------------------
// Flags (each also readable from the environment as PEER_<NAME>, upper-case, '-' -> '_').

const { values: opts } = parseArgs({
  options: {
    domain: { type: 'string' },
    listen: { type: 'string' },
    cert: { type: 'string' },
    key: { type: 'string' },
    control: { type: 'string' },
    personas: { type: 'string' },
    count: { type: 'string' },
    persona: { type: 'string', multiple: true },
    posts: { type: 'string' },
    'follow-policy': { type: 'string' },
    'log-level': { type: 'string' },
    'rsa-bits': { type: 'string' },
    'forgery-mode': { type: 'string' },
    ...deliveryOptions,
    help: { type: 'boolean', short: 'h' },
  },
});

/** Returns the flag, else PEER_<NAME> from the environment, else the default. */
function flag(name, dflt) {
  if (opts[name] !== undefined) return opts[name];
  const env = process.env['PEER_' + name.toUpperCase().replaceAll('-', '_')];
  return env !== undefined && env !== '' ? env : dflt;
}

if (opts.help) {
  process.stdout.write(`usage: node fedify-peer.mjs [flags]
  --domain NAME        host name of this server (default sut.test; Fedify refuses localhost)
  --listen HOST:PORT   HTTPS listen address (default 127.0.0.2:443)
  --cert FILE --key FILE  PEM certificate and key for --domain (required)
  --control HOST:PORT  plain-HTTP control API (default 127.0.0.1:9300)
  --personas PATTERN   persona names, %d replaced by 0..count-1 (default load%d)
  --count N            how many personas from the pattern (default 3)
  --persona NAME       an extra persona (repeatable)
  --posts N            posts (Notes) in each persona's outbox (default 2)
  --follow-policy P    answer to incoming Follows: accept | reject | ignore (default accept)
  --log-level L        Fedify's log level: debug | info | warning | error (default warning)
  --rsa-bits N         RSA key size (default 2048, like Mastodon; Fedify's own default is 4096,
                       which takes seconds per key to generate)
  --forgery-mode M     what the inbox makes of forged requests: refuse (default: Fedify's own
                       verdicts) | drop-wrong-key (a request signed with a valid key whose owner
                       is not the activity's actor is answered 202 and dropped, as Mastodon does)
                       | keep-body (a request whose Digest does not match its body is verified
                       over its signed headers alone, as go-fed/httpsig does, and kept: the
                       note stored as the actor's post, the Like, boost or Follow counted)
${deliveryHelp}Every flag can also be given as PEER_<FLAG> in the environment (PEER_FOLLOW_POLICY=...).
Trust the crowd's CA with NODE_EXTRA_CA_CERTS=ca.pem.
`);
  process.exit(0);
}

/** Splits "host:port" (IPv6 in brackets allowed) into {host, port}. */
function splitHostPort(s, what) {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(s);
  if (!m) throw new Error(`--${what}: want HOST:PORT, got ${JSON.stringify(s)}`);
  return { host: m[1], port: Number(m[2]) };
}

// Read first, so that a bad value is named even when the rest of the command line is missing.
let deliveryConfig;
try {
  deliveryConfig = parseDeliveryFlags(flag);
} catch (e) {
  process.stderr.write(`fedify-peer: ${e.message}\n`);
  process.exit(2);
}
const delivery = newDelivery(deliveryConfig);

const domain = flag('domain', 'sut.test').toLowerCase();
const listen = splitHostPort(flag('listen', '127.0.0.2:443'), 'listen');
const control = splitHostPort(flag('control', '127.0.0.1:9300'), 'control');
const certFile = flag('cert');
const keyFile = flag('key');
const postsPerPersona = Number(flag('posts', '2'));
const followPolicy = flag('follow-policy', 'accept');
const logLevel = flag('log-level', 'warning');
const rsaBits = Number(flag('rsa-bits', '2048'));
if (!certFile || !keyFile) {
  process.stderr.write('fedify-peer: --cert and --key are required (PEM files for --domain)\n');
  process.exit(2);
}
const FORGERY_MODES = ['refuse', 'drop-wrong-key', 'keep-body'];
let forgeryMode = flag('forgery-mode', 'refuse');
if (!FORGERY_MODES.includes(forgeryMode)) {
  process.stderr.write(`fedify-peer: --forgery-mode must be refuse, drop-wrong-key or keep-body\n`);
  process.exit(2);
}
if (!['accept', 'reject', 'ignore'].includes(followPolicy)) {
  process.stderr.write(`fedify-peer: --follow-policy must be accept, reject or ignore\n`);
  process.exit(2);
}
// Standard port: URLs carry no port, as on a real server.
const origin = `https://${domain}${listen.port === 443 ? '' : ':' + listen.port}`;

const personaNames = [];
{
  const pattern = flag('personas', 'load%d');
  const count = Number(flag('count', '3'));
  for (let i = 0; i < count; i++) personaNames.push(pattern.replace('%d', String(i)));
  for (const p of opts.persona ?? []) personaNames.push(p);
}
// The instance actor (Application), like Mastodon's: it signs the shared inbox's key fetches.
const instanceId = domain;

await configure({
  contextLocalStorage: new AsyncLocalStorage(),
  sinks: { console: getConsoleSink() },
  loggers: [
    { category: 'fedify', sinks: ['console'], lowestLevel: logLevel },
    { category: ['logtape', 'meta'], sinks: ['console'], lowestLevel: 'error' },
  ],
});

// ---------------------------------------------------------------------------------------------
// State: personas, keys, posts, follow graph, counters. All in memory: each run starts fresh.

const started = new Date();
/** identifier -> {rsa, ed} CryptoKeyPairs */
const keys = new Map();
await Promise.all([...personaNames, instanceId].map(async (id) => {
  const rsa = await crypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: rsaBits, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true, ['sign', 'verify'],
  );
  // RSA first: Fedify signs draft-cavage HTTP signatures with the first RSA key; the Ed25519 key
  // is published as a Multikey and used for Object Integrity Proofs, as a real Fedify server does.
  keys.set(id, [rsa, await generateCryptoKeyPair('Ed25519')]);
}));
const personas = new Set(personaNames);

/** persona -> Map(remote actor id -> {actor, inbox, sharedInbox, followId, since}) */
const followers = new Map(personaNames.map((p) => [p, new Map()]));
/** persona -> Map(remote actor id -> {actor, inbox, followId, state, since, error}) */
const following = new Map(personaNames.map((p) => [p, new Map()]));

// The Mastodon client API's state (see "Mastodon client API subset" below).
/** persona -> [{n, content, createdAt, statusId}]: posts made through POST /api/v1/statuses */
const apiPosts = new Map(personaNames.map((p) => [p, []]));
/** persona -> [{statusId, uri, url, content, createdAt, account, visibleAt}], oldest first: the home timeline */
const homes = new Map(personaNames.map((p) => [p, []]));
/** The SUT's own log of when each note became visible in each persona's home: [{persona, uri, visibleAt}] */
const visibility = [];
/** Bearer tokens of the client API: "token-" + persona name. */
const tokenOf = (p) => `token-${p}`;
const personaOfToken = new Map(personaNames.map((p) => [tokenOf(p), p]));
/** Account ids: the personas are 1 … n; remote accounts get ids from 1000 on as they become known. */
const accountIds = new Map(personaNames.map((p, i) => [p, String(i + 1)]));
/** remote actor id -> {id, username, acct, url} */
const remoteAccounts = new Map();
/** account id -> {local: persona} | {remote: actor id} */
const accountsById = new Map(personaNames.map((p, i) => [String(i + 1), { local: p }]));
let nextRemoteAccount = 1000;
let nextStatusId = 1000000;
/** Mastodon keeps 800 statuses of a home feed; so does this. */
const HOME_MAX = 800;

const stats = {
  verified: {}, // type -> n: Fedify verified the activity and called our listener
  rejected: {}, // type -> n: an inbox POST answered 4xx (bad signature, unknown actor, ...)
  duplicate: {}, // type -> n: answered 202 without calling a listener (already processed)
  failed: {}, // type -> n: answered 5xx (a listener threw)
  goneSelfDeletes: 0, // self-Deletes of accounts whose origin answers 410: answered 202 unverified, as Mastodon does
  received: [], // ids of verified activities, in order of arrival
  rejections: [], // the latest rejections with status and Fedify's reason
  outboxErrors: [], // deliveries Fedify gave up on or that failed an attempt
  notes: [], // Notes received in Create: {id, activity, actor, receivedAt} (for the audience probes)
  vocab: [], // what the listeners of the vocabulary verified and fetched: see vocabLog
  reactions: [], // every Like and Announce verified: {kind, actor, object, id, repeated, at}
  reactionsRepeated: 0, // of those, the ones whose (actor, object, kind) this server kept already
};
/** "kind actor object" -> the activity id: one reaction per account, post and kind, until its Undo, as a real server keeps them. */
const reactionsKept = new Map();

/** Keeps a Like or Announce as a real server does (a repeat is answered 202 and dropped) and logs it. */
function keepReaction(kind, activity) {
  const actor = activity.actorId?.href ?? null;
  const object = activity.objectId?.href ?? null;
  const key = `${kind} ${actor} ${object}`;
  const repeated = reactionsKept.has(key);
  if (repeated) stats.reactionsRepeated += 1;
  else reactionsKept.set(key, activity.id?.href ?? null);
  remember(stats.reactions, { kind, actor, object, id: activity.id?.href ?? null, repeated, at: new Date().toISOString() });
}

/** Frees the pair of the Like or Announce an Undo takes back, when the Undo's actor made it. */
function undoReaction(undo, inner) {
  const kind = inner instanceof Like ? 'Like' : inner instanceof Announce ? 'Announce' : null;
  if (kind == null || inner.actorId?.href !== undo.actorId?.href) return;
  const key = `${kind} ${inner.actorId?.href} ${inner.objectId?.href}`;
  if (reactionsKept.get(key) === inner.id?.href) reactionsKept.delete(key);
}
const MAX_LIST = 100000;
/** Adds one to counter[type]. */
function bump(counter, type) { counter[type] = (counter[type] ?? 0) + 1; }
/** Appends to a bounded list, forgetting the oldest. */
function remember(list, item, max = MAX_LIST) { list.push(item); if (list.length > max) list.shift(); }

// The requests this server makes to others (issue 14): WebFinger, actor and key documents,
// objects, collections, NodeInfo, media, deliveries. Fedify makes every one through the global
// fetch, looked up when it is called, so wrapping it here logs them all with their time: a test
// compares what the crowd counted as fetched back with what this SUT says it fetched.
/** [{at, method, url, signed, status, error}], oldest first: requests to other hosts. */
const fetches = [];
// Inside it, delivery POSTs are logged per attempt and, with --delivery-timeout-ms, time out.
const realFetch = delivery.wrapFetch(globalThis.fetch);
globalThis.fetch = async (input, init) => {
  const req = input instanceof Request ? input : null;
  const url = req ? req.url : input instanceof URL ? input.href : String(input);
  const headers = new Headers(init?.headers ?? req?.headers ?? undefined);
  const entry = {
    at: new Date().toISOString(),
    method: (init?.method ?? req?.method ?? 'GET').toUpperCase(),
    url,
    signed: headers.has('signature') || headers.has('signature-input'),
    status: null,
    error: null,
  };
  let host = null;
  try { host = new URL(url).hostname; } catch { /* not a URL: fetch itself will say so */ }
  if (host !== domain) remember(fetches, entry);
  try {
    const res = await realFetch(input, init);
    entry.status = res.status;
    return res;
  } catch (e) {
    entry.error = String(e?.message ?? e);
    throw e;
  }
};

/** Per-request store: the body's type, and whether a listener ran (so Fedify verified it). */
const inboxRequest = new AsyncLocalStorage();

/** Records that Fedify verified an activity and handed it to a listener. */
function markVerified(activity) {
  const store = inboxRequest.getStore();
  if (store) store.listened = true;
  const type = store?.type ?? activity.constructor.name;
  bump(stats.verified, type);
  remember(stats.received, activity.id?.href ?? null);
}

// ---------------------------------------------------------------------------------------------
// Federation.

const federation = createFederation({
  kv: new MemoryKvStore(),
  origin,
  allowPrivateAddress: true, // the crowd lives on 127.0.0.0/8 inside a test namespace
  // Outgoing deliveries (Accept, Follow, Undo) go through a retrying in-process queue, as on a
  // real server: the Follow that triggered an Accept is answered before the Accept is sent.
  // Incoming activities are processed inline, so the counters are final when the POST is answered.
  // Its workers and retry policy come from the --delivery-* and --retry-* flags (delivery.mjs).
  queue: { outbox: delivery.queue },
  manuallyStartQueue: true,
  outboxRetryPolicy: createExponentialBackoffPolicy(backoffOptions(deliveryConfig.policy)),
  onOutboxError: (error, activity) => {
    const id = activity?.id?.href ?? null;
    remember(stats.outboxErrors, { activity: id, type: activity?.constructor?.name ?? null, error: String(error), at: new Date().toISOString() }, 1000);
    for (const m of following.values()) {
      for (const f of m.values()) if (f.followId === id) f.error = String(error);
    }
  },
  userAgent: { software: 'crowd-testpeers-fedify/1.5.9' },
});

/** Builds the posts of a persona: Note ids are stable, so they can be dereferenced later. */
function notesOf(ctx, identifier) {
  const notes = [];
  for (let n = 1; n <= postsPerPersona; n++) {
    const id = ctx.getObjectUri(Note, { identifier, id: String(n) });
    notes.push(new Note({
      id,
      attribution: ctx.getActorUri(identifier),
      to: PUBLIC_COLLECTION,
      cc: ctx.getFollowersUri(identifier),
      content: `<p>Post ${n} by ${identifier}</p>`,
      url: id,
      published: Temporal.Instant.fromEpochMilliseconds(started.getTime() - (postsPerPersona - n + 1) * 60000),
    }));
  }
  // Then the posts made through the client API (POST /api/v1/statuses), numbered on.
  for (const p of apiPosts.get(identifier) ?? []) notes.push(noteOf(ctx, identifier, p));
  return notes;
}

/** The Note of a post made through the client API. */
function noteOf(ctx, identifier, p) {
  const id = ctx.getObjectUri(Note, { identifier, id: String(p.n) });
  return new Note({
    id,
    attribution: ctx.getActorUri(identifier),
    to: PUBLIC_COLLECTION,
    cc: ctx.getFollowersUri(identifier),
    content: p.content,
    url: id,
    published: Temporal.Instant.fromEpochMilliseconds(p.createdAt.getTime()),
  });
}

federation
  .setActorDispatcher('/users/{identifier}', async (ctx, identifier) => {
    if (!personas.has(identifier) && identifier !== instanceId) return null;
    const pairs = await ctx.getActorKeyPairs(identifier);
    const common = {
      id: ctx.getActorUri(identifier),
      preferredUsername: identifier,
      name: identifier,
      inbox: ctx.getInboxUri(identifier),
      endpoints: new Endpoints({ sharedInbox: ctx.getInboxUri() }),
      outbox: ctx.getOutboxUri(identifier),
      followers: ctx.getFollowersUri(identifier),
      following: ctx.getFollowingUri(identifier),
      url: ctx.getActorUri(identifier),
      manuallyApprovesFollowers: false,
      published: Temporal.Instant.fromEpochMilliseconds(started.getTime()),
      publicKey: pairs[0].cryptographicKey,
      assertionMethods: pairs.map((k) => k.multikey),
    };
    if (identifier === instanceId) return new Application(common);
    return new Person({ ...common, summary: `Fedify test persona ${identifier}` });
  })
  // WebFinger names are the identifiers; an unknown name is a 404, not a guess.
  .mapHandle((ctx, username) => (personas.has(username) || username === instanceId ? username : null))
  .setKeyPairsDispatcher(async (ctx, identifier) => keys.get(identifier) ?? []);

federation.setObjectDispatcher(Note, '/users/{identifier}/posts/{id}', (ctx, { identifier, id }) => {
  if (!personas.has(identifier)) return null;
  return notesOf(ctx, identifier).find((n) => n.id.href === ctx.getObjectUri(Note, { identifier, id }).href) ?? null;
});
federation.setObjectDispatcher(Create, '/users/{identifier}/posts/{id}/activity', (ctx, { identifier, id }) => {
  if (!personas.has(identifier)) return null;
  const note = notesOf(ctx, identifier).find((n) => n.id.href === ctx.getObjectUri(Note, { identifier, id }).href);
  return note ? createOf(ctx, identifier, note) : null;
});
/** The Create activity that published a Note. */
function createOf(ctx, identifier, note) {
  return new Create({
    id: new URL(note.id.href + '/activity'),
    actor: ctx.getActorUri(identifier),
    object: note,
    to: PUBLIC_COLLECTION,
    cc: ctx.getFollowersUri(identifier),
    published: note.published,
  });
}

// Outbox: paged like Mastodon's (the collection links to its first page), newest first.
federation
  .setOutboxDispatcher('/users/{identifier}/outbox', (ctx, identifier, cursor) => {
    if (!personas.has(identifier)) return null;
    if (cursor == null) return null;
    return { items: notesOf(ctx, identifier).reverse().map((n) => createOf(ctx, identifier, n)), nextCursor: null };
  })
  .setFirstCursor(() => '0')
  .setCounter((ctx, identifier) => (personas.has(identifier) ? postsPerPersona : null));

federation
  .setFollowersDispatcher('/users/{identifier}/followers', (ctx, identifier) => {
    const m = followers.get(identifier);
    if (!m) return null;
    return {
      items: [...m.values()].map((f) => ({ id: new URL(f.actor), inboxId: new URL(f.inbox), endpoints: f.sharedInbox ? { sharedInbox: new URL(f.sharedInbox) } : null })),
    };
  })
  .setCounter((ctx, identifier) => followers.get(identifier)?.size ?? null);

federation
  .setFollowingDispatcher('/users/{identifier}/following', (ctx, identifier) => {
    const m = following.get(identifier);
    if (!m) return null;
    return { items: [...m.values()].filter((f) => f.state === 'accepted').map((f) => new URL(f.actor)) };
  })
  .setCounter((ctx, identifier) => {
    const m = following.get(identifier);
    return m ? [...m.values()].filter((f) => f.state === 'accepted').length : null;
  });

federation.setNodeInfoDispatcher('/nodeinfo/2.1', () => ({
  software: { name: 'fedify-testpeer', version: '1.5.9' },
  protocols: ['activitypub'],
  usage: { users: { total: personaNames.length }, localPosts: personaNames.length * postsPerPersona },
}));

federation
  .setInboxListeners('/users/{identifier}/inbox', '/inbox')
  // Key fetches made while handling the shared inbox are signed by the instance actor.
  .setSharedKeyDispatcher(() => ({ identifier: instanceId }))
  .on(Follow, async (ctx, follow) => {
    markVerified(follow);
    if (follow.objectId == null) return;
    const target = ctx.parseUri(follow.objectId);
    if (target?.type !== 'actor' || !personas.has(target.identifier)) return;
    const follower = await follow.getActor(ctx);
    if (!isActor(follower) || follower.id == null || follower.inboxId == null) return;
    const persona = target.identifier;
    if (followPolicy === 'ignore') return;
    const answer = followPolicy === 'accept' ? Accept : Reject;
    if (followPolicy === 'accept') {
      followers.get(persona).set(follower.id.href, {
        actor: follower.id.href,
        inbox: follower.inboxId.href,
        sharedInbox: follower.endpoints?.sharedInbox?.href ?? null,
        followId: follow.id?.href ?? null,
        since: new Date().toISOString(),
      });
      notify(persona, 'follow', follower.id.href, null);
    }
    await ctx.sendActivity({ identifier: persona }, follower, new answer({
      id: new URL(`${ctx.getActorUri(persona).href}/${followPolicy}s/${randomUUID()}`),
      actor: ctx.getActorUri(persona),
      object: follow,
    }));
  })
  .on(Undo, async (ctx, undo) => {
    markVerified(undo);
    const inner = await undo.getObject(ctx).catch(() => null);
    // A server takes back only what the Undo's actor did itself.
    vocabLog(undo, {
      object: inner?.id?.href ?? null, objectType: inner?.constructor?.name ?? null,
      sameActor: inner?.actorId?.href === undo.actorId?.href,
    });
    undoReaction(undo, inner);
    if (!(inner instanceof Follow) || undo.actorId == null) return;
    const target = inner.objectId ? ctx.parseUri(inner.objectId) : null;
    const m = target?.type === 'actor' ? followers.get(target.identifier) : null;
    // Only the follower itself may undo its follow.
    if (m && m.get(undo.actorId.href)) m.delete(undo.actorId.href);
  })
  .on(Accept, async (ctx, accept) => {
    markVerified(accept);
    settleFollow(accept, 'accepted');
  })
  .on(Reject, async (ctx, reject) => {
    markVerified(reject);
    settleFollow(reject, 'rejected');
  })
  .on(Create, async (ctx, create) => {
    markVerified(create);
    const store = inboxRequest.getStore();
    remember(stats.notes, {
      id: create.objectId?.href ?? null,
      activity: create.id?.href ?? null,
      actor: create.actorId?.href ?? null,
      receivedAt: new Date().toISOString(),
      inbox: store?.path ?? null,
    });
    await checkNote(ctx, create);
    await toHomes(ctx, create);
    await notifyMentions(ctx, create);
  })
  .on(Announce, async (ctx, announce) => {
    markVerified(announce);
    keepReaction('Announce', announce);
    react('reblog', announce.actorId?.href, announce.objectId?.href);
    // A boost of a post this server has not seen: fetch it, as a server must to show it.
    const id = announce.objectId;
    const local = id != null && id.hostname === domain;
    const note = local ? null : await announce.getObject(ctx).catch((e) => ({ error: String(e) }));
    vocabLog(announce, {
      object: id?.href ?? null, local, fetched: !local && note instanceof Note,
      error: note?.error ?? null, attributedTo: note?.attributionId?.href ?? null,
      sameOrigin: note instanceof Note && note.attributionId?.hostname === id.hostname,
    });
  })
  .on(Delete, async (ctx, del) => {
    markVerified(del);
    const self = del.objectId != null && del.objectId.href === del.actorId?.href;
    // A server that handles a Delete looks at the object (some refuse to delete what still
    // answers 200): this one fetches it and logs the status it saw. A self-Delete's account was
    // fetched before Fedify ran (goneSelfDelete).
    const store = inboxRequest.getStore();
    const fetchStatus = self ? (store?.fetchStatus ?? null) : await objectStatus(del.objectId);
    // A Delete counts only from the object's own origin (its author or the account itself).
    vocabLog(del, {
      object: del.objectId?.href ?? null, kind: self ? 'actor' : 'note',
      sameOrigin: del.objectId?.hostname === del.actorId?.hostname, fetchStatus,
    });
  })
  .on(Update, async (ctx, update) => {
    markVerified(update);
    const obj = await update.getObject(ctx).catch(() => null);
    vocabLog(update, {
      object: obj?.id?.href ?? null, objectType: obj?.constructor?.name ?? null,
      updated: obj?.updated?.toString() ?? null,
      content: obj instanceof Note ? (obj.content?.toString() ?? '').slice(0, 40) : null,
      summary: obj instanceof Person ? (obj.summary?.toString() ?? '') : null,
      sameActor: obj instanceof Person ? obj.id?.href === update.actorId?.href : obj?.attributionId?.href === update.actorId?.href,
    });
  })
  .on(Like, async (ctx, like) => {
    markVerified(like);
    keepReaction('Like', like);
    react('favourite', like.actorId?.href, like.objectId?.href);
  })
  .on(Activity, async (ctx, activity) => { markVerified(activity); })
  .onError((ctx, error) => {
    process.stderr.write(`fedify-peer: inbox listener error: ${error?.stack ?? error}\n`);
  });

/** Logs what a listener of the vocabulary verified: the activity, then what it found. */
function vocabLog(activity, detail) {
  remember(stats.vocab, {
    type: inboxRequest.getStore()?.type ?? activity.constructor.name, id: activity.id?.href ?? null,
    actor: activity.actorId?.href ?? null, at: new Date().toISOString(), ...detail,
  }, 10000);
}

/** The status the object's origin answers a plain GET of it with (null when it did not answer). */
async function objectStatus(id) {
  if (id == null) return null;
  try {
    const res = await fetch(id.href ?? String(id), { headers: { accept: 'application/activity+json' } });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return null;
  }
}

/**
 * A self-Delete (an account deletion: actor == object), looked at before Fedify verifies it:
 * the account is fetched and its status kept for the listener's log. An account whose origin
 * answers 410 cannot be verified (its key is gone with it), so the Delete is answered 202
 * unverified and logged, as Mastodon answers the self-Delete of an account it does not hold.
 * Returns that response, or null to let Fedify handle the Delete.
 */
async function goneSelfDelete(json, store) {
  const actor = typeof json?.actor === 'string' ? json.actor : null;
  const object = typeof json?.object === 'string' ? json.object : json?.object?.id;
  if (json?.type !== 'Delete' || actor == null || object !== actor) return null;
  store.fetchStatus = await objectStatus(new URL(actor));
  if (store.fetchStatus !== 410) return null;
  stats.goneSelfDeletes += 1;
  store.listened = true; // taken, by this server's own rule: no duplicate
  remember(stats.vocab, {
    type: 'Delete', id: typeof json.id === 'string' ? json.id : null, actor, at: new Date().toISOString(),
    object: actor, kind: 'actor', sameOrigin: true, fetchStatus: 410, verified: false,
  }, 10000);
  return new Response(null, { status: 202 });
}

/** The most parents of a reply this server fetches, as Mastodon bounds its thread resolution. */
const MAX_THREAD = 10;

/**
 * Checks a Create's note as a server that shows it must: fetches the parents of a reply up to
 * the thread's root (each one it has not seen), and downloads its image attachments, checking
 * each is the PNG its attachment says (size read from the image itself). Logs what it found.
 */
async function checkNote(ctx, create) {
  const note = await create.getObject(ctx).catch(() => null);
  if (!(note instanceof Note)) return;
  const detail = {};
  if (note.replyTargetId != null) {
    const parents = [];
    let cur = note;
    while (cur?.replyTargetId != null && parents.length < MAX_THREAD) {
      const id = cur.replyTargetId;
      if (id.hostname === domain) { parents.push({ id: id.href, local: true }); break; }
      cur = await cur.getReplyTarget(ctx).catch((e) => ({ error: String(e) }));
      parents.push({ id: id.href, fetched: cur instanceof Note, error: cur?.error ?? null });
    }
    detail.parents = parents;
  }
  const images = [];
  for await (const att of note.getAttachments(ctx)) {
    const url = att?.url instanceof URL ? att.url : att?.url?.href;
    if (url == null) continue;
    images.push(await download(url.href ?? String(url), att.width, att.height));
  }
  if (images.length > 0) detail.images = images;
  const tags = [];
  for await (const tag of note.getTags(ctx)) tags.push(tag.constructor.name);
  if (tags.length > 0) detail.tags = tags;
  if (Object.keys(detail).length > 0) vocabLog(create, { object: note.id?.href ?? null, ...detail });
}

/** Downloads an image and reads its size from the PNG header. */
async function download(url, width, height) {
  try {
    const res = await fetch(url);
    const body = Buffer.from(await res.arrayBuffer());
    const png = body.length >= 24 && body.subarray(1, 4).toString('latin1') === 'PNG';
    const w = png ? body.readUInt32BE(16) : null;
    const h = png ? body.readUInt32BE(20) : null;
    return { url, status: res.status, bytes: body.length, png, width: w, height: h, sizeMatches: w === width && h === height };
  } catch (e) {
    return { url, error: String(e) };
  }
}

/** Marks the Follow that an Accept/Reject answers: by the Follow's id, else by the remote actor. */
function settleFollow(answer, state) {
  const followId = answer.objectId?.href;
  const actor = answer.actorId?.href;
  for (const m of following.values()) {
    for (const f of m.values()) {
      if (f.followId === followId || (followId == null && f.actor === actor && f.state === 'pending')) {
        f.state = state;
        f.settledAt = new Date().toISOString();
        return;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Mastodon client API subset (issue 5): what the crowd's audience probes use, backed by the state
// above. Every route but /api/v1/instance and /api/v1/accounts/lookup wants a bearer token,
// "token-" + the persona's name.

/**
 * Puts the note of a verified Create into the home of every persona that follows its sender (an
 * accepted follow), as a server fans a followed account's post out to its followers' homes, and
 * logs when it became visible there.
 */
async function toHomes(ctx, create) {
  const actor = create.actorId?.href;
  if (actor == null) return;
  const readers = personaNames.filter((p) => following.get(p).get(actor)?.state === 'accepted');
  if (readers.length === 0) return;
  const note = await create.getObject(ctx).catch(() => null);
  if (!(note instanceof Note) || note.id == null) return;
  const account = remoteAccount(actor);
  const published = note.published ? new Date(note.published.epochMilliseconds) : new Date();
  for (const p of readers) {
    addToHome(p, {
      uri: note.id.href, url: note.url?.href ?? note.id.href, content: note.content?.toString() ?? '',
      createdAt: published, account,
    });
  }
}

/** Adds a status to a persona's home, newest last, and logs when it became visible. */
function addToHome(persona, status) {
  const home = homes.get(persona);
  if (home.some((s) => s.uri === status.uri)) return;
  const visibleAt = new Date();
  home.push({ ...status, statusId: String(nextStatusId++), visibleAt });
  if (home.length > HOME_MAX) home.shift();
  remember(visibility, { persona, uri: status.uri, visibleAt: visibleAt.toISOString() });
}

/** The account of a remote actor, made known (with an id) on first sight, without a fetch. */
function remoteAccount(actorId, actor) {
  let a = remoteAccounts.get(actorId);
  if (a) return a;
  const u = new URL(actorId);
  const username = actor?.preferredUsername?.toString() ?? u.pathname.split('/').filter(Boolean).pop() ?? u.hostname;
  a = { id: String(nextRemoteAccount++), username, acct: `${username}@${u.hostname}`, url: actor?.url?.href ?? actorId };
  remoteAccounts.set(actorId, a);
  accountsById.set(a.id, { remote: actorId });
  return a;
}

/** A persona's account, as Mastodon's Account entity. */
function localAccountJson(ctx, p) {
  return {
    id: accountIds.get(p), username: p, acct: p, display_name: p, locked: false, bot: false, group: false,
    created_at: started.toISOString(), note: `<p>Fedify test persona ${p}</p>`, url: ctx.getActorUri(p).href,
    followers_count: followers.get(p).size,
    following_count: [...following.get(p).values()].filter((f) => f.state === 'accepted').length,
    statuses_count: postsPerPersona + apiPosts.get(p).length, emojis: [], fields: [],
  };
}

/** A remote account, as Mastodon's Account entity. */
function remoteAccountJson(a) {
  return { ...a, display_name: a.username, locked: false, bot: false, group: false, note: '', emojis: [], fields: [] };
}

/** A home entry, as Mastodon's Status entity. */
function statusJson(s) {
  return {
    id: s.statusId, uri: s.uri, url: s.url, created_at: s.createdAt.toISOString(), content: s.content,
    visibility: 'public', sensitive: false, spoiler_text: '', language: null, in_reply_to_id: null,
    in_reply_to_account_id: null, reblog: null, replies_count: 0, reblogs_count: 0, favourites_count: 0,
    account: s.account, media_attachments: [], mentions: [], tags: [], emojis: [], card: null, poll: null,
  };
}

/** A persona's relationship to a remote account, as Mastodon's Relationship entity. */
function relationshipJson(p, id) {
  const ref = accountsById.get(id);
  const actor = ref?.remote;
  const f = actor ? following.get(p).get(actor) : undefined;
  return {
    id, following: f?.state === 'accepted', requested: f?.state === 'pending', followed_by: actor ? followers.get(p).has(actor) : false,
    showing_reblogs: f?.state === 'accepted', notifying: false, blocking: false, blocked_by: false, muting: false,
    muting_notifications: false, domain_blocking: false, endorsed: false, note: '',
  };
}

/** Sends persona from's Follow of a resolved remote actor and records it as pending. */
async function followActor(ctx, from, actor) {
  const followId = new URL(`${ctx.getActorUri(from).href}/follows/${randomUUID()}`);
  const entry = { actor: actor.id.href, inbox: actor.inboxId.href, followId: followId.href, state: 'pending', since: new Date().toISOString(), error: null };
  following.get(from).set(actor.id.href, entry);
  await ctx.sendActivity({ identifier: from }, actor, new Follow({ id: followId, actor: ctx.getActorUri(from), object: actor.id }));
  return entry;
}

/** Reads a client-API request's parameters: form-encoded or JSON body, then the query string. */
function apiParams(req, url, body) {
  const out = new Map([...url.searchParams.entries()]);
  if (body && body.length > 0) {
    const type = req.headers['content-type'] ?? '';
    if (type.includes('application/json')) {
      const json = JSON.parse(body.toString('utf8'));
      for (const [k, v] of Object.entries(json ?? {})) out.set(k, String(v));
    } else {
      for (const [k, v] of new URLSearchParams(body.toString('utf8'))) out.set(k, v);
    }
  }
  return out;
}

/** Counts of the client API's answers, by route and status, for the control API's /stats. */
const apiStats = {};

/** Answers a client-API request; returns false when the path is not one of its routes. */
async function clientApi(req, res, url, body) {
  const send = (status, value) => {
    const key = `${req.method} ${url.pathname.replace(/\/\d+\//, '/:id/')} ${status}`;
    apiStats[key] = (apiStats[key] ?? 0) + 1;
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(value));
    return true;
  };
  const ctx = ctxNow();
  const path = url.pathname.replace(/\/$/, '');
  if (req.method === 'GET' && path === '/api/v1/instance') {
    return send(200, {
      uri: domain, title: `Fedify test SUT ${domain}`, short_description: '', description: '', email: '',
      version: '4.0.0 (compatible; fedify-testpeer 1.5.9)', urls: {}, languages: ['en'], registrations: false,
      approval_required: false, invites_enabled: false,
      stats: { user_count: personaNames.length, status_count: 0, domain_count: remoteAccounts.size },
    });
  }
  if (req.method === 'GET' && path === '/api/v1/accounts/lookup') {
    const acct = (url.searchParams.get('acct') ?? '').replace(/^acct:/, '').replace(/^@/, '');
    const [user, host] = acct.split('@');
    if (personas.has(user) && (host == null || host === domain)) return send(200, localAccountJson(ctx, user));
    if (host == null || host === domain) return send(404, { error: 'Record not found' });
    // A remote account: resolved (WebFinger, a signed fetch by the instance actor), as a lookup
    // of an account this server has seen would find it.
    const actor = await resolveActor(ctx, instanceId, `acct:${acct}`).catch(() => null);
    if (actor == null) return send(404, { error: 'Record not found' });
    return send(200, remoteAccountJson(remoteAccount(actor.id.href, actor)));
  }
  if (!path.startsWith('/api/v1/')) return false;
  const auth = req.headers.authorization ?? '';
  const persona = personaOfToken.get(auth.replace(/^Bearer\s+/i, ''));
  if (persona == null) return send(401, { error: 'The access token is invalid' });

  if (req.method === 'GET' && path === '/api/v1/accounts/verify_credentials') {
    return send(200, { ...localAccountJson(ctx, persona), source: { privacy: 'public', sensitive: false, language: '', note: '', fields: [] } });
  }
  let m = /^\/api\/v1\/accounts\/([^/]+)\/follow$/.exec(path);
  if (req.method === 'POST' && m) {
    const ref = accountsById.get(m[1]);
    if (ref == null) return send(404, { error: 'Record not found' });
    if (ref.local) return send(422, { error: 'this test SUT follows remote accounts only' });
    if (following.get(persona).get(ref.remote)?.state !== 'accepted') {
      const actor = await resolveActor(ctx, persona, ref.remote);
      await followActor(ctx, persona, actor);
    }
    return send(200, relationshipJson(persona, m[1]));
  }
  if (req.method === 'GET' && path === '/api/v1/accounts/relationships') {
    const ids = [...url.searchParams.getAll('id[]'), ...url.searchParams.getAll('id')];
    return send(200, ids.map((id) => relationshipJson(persona, id)));
  }
  if (req.method === 'POST' && path === '/api/v1/statuses') {
    let params;
    try { params = apiParams(req, url, body); } catch { return send(400, { error: 'the body is neither form data nor JSON' }); }
    const text = params.get('status') ?? '';
    if (text.trim() === '') return send(422, { error: "Validation failed: Text can't be blank" });
    const posts = apiPosts.get(persona);
    const p = { n: postsPerPersona + posts.length + 1, content: `<p>${escapeHtml(text)}</p>`, createdAt: new Date() };
    posts.push(p);
    const note = noteOf(ctx, persona, p);
    const account = localAccountJson(ctx, persona);
    addToHome(persona, { uri: note.id.href, url: note.id.href, content: p.content, createdAt: p.createdAt, account });
    const entry = homes.get(persona).find((s) => s.uri === note.id.href);
    // Delivered by Fedify's outbox queue to every follower's inbox, as a server fans a post out.
    await ctx.sendActivity({ identifier: persona }, 'followers', createOf(ctx, persona, note));
    return send(200, statusJson(entry));
  }
  if (req.method === 'GET' && path === '/api/v1/timelines/home') {
    const limit = Math.max(1, Math.min(40, Number(url.searchParams.get('limit') ?? 20) || 20));
    const home = homes.get(persona);
    return send(200, home.slice(-limit).reverse().map(statusJson));
  }
  if (req.method === 'GET' && await effectsApi(req, res, url, path, persona, send)) return true;
  return send(404, { error: 'Record not found' });
}

/** Escapes text for HTML content. */
function escapeHtml(s) {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}

// ---------------------------------------------------------------------------------------------
// Where activities land, as Mastodon's client API shows them (notifications; a post's favourites
// and boosts; followers), and the forgery modes (--forgery-mode): the crowd looks for a forged
// activity's effect there.

/** persona -> [{id, type, actor, status, at}], oldest first: the persona's notifications. */
const notifications = new Map(personaNames.map((p) => [p, []]));
/** Mastodon keeps every notification; this keeps the newest 20000 of each persona. */
const NOTIFICATIONS_MAX = 20000;
let nextNotification = 1;
/** local post uri -> {favourite: Set(actor id), reblog: Set(actor id)} */
const reactions = new Map();
/** status id <-> local post uri, assigned on first sight as Mastodon numbers its statuses. */
const localStatusIds = new Map();
const localStatusUris = new Map();
/** What --forgery-mode did: requests answered 202 and dropped, requests kept. */
const forgeryLog = { dropped: [], kept: [] };

/** Adds a notification of type by actor (a remote actor id) to persona, about status (or null). */
function notify(persona, type, actor, status) {
  const list = notifications.get(persona);
  if (list == null || actor == null) return;
  const st = status ? { statusId: status.statusId ?? String(nextStatusId++), ...status } : null;
  list.push({ id: String(nextNotification++), type, actor, status: st, at: new Date() });
  if (list.length > NOTIFICATIONS_MAX) list.shift();
}

/** The persona a local post uri belongs to, or null. */
function localPostOwner(uri) {
  if (uri == null) return null;
  const parsed = ctxNow().parseUri(new URL(uri));
  const id = parsed?.type === 'object' ? parsed.values?.identifier : null;
  return id != null && personas.has(id) ? id : null;
}

/** Counts a favourite or boost of a local post by actor, and notifies its author. */
function react(type, actor, object) {
  const owner = localPostOwner(object);
  if (owner == null || actor == null) return;
  let r = reactions.get(object);
  if (!r) reactions.set(object, (r = { favourite: new Set(), reblog: new Set() }));
  if (r[type].has(actor)) return;
  r[type].add(actor);
  notify(owner, type, actor, localStatus(ctxNow(), owner, object));
}

/** A mention notification for every persona a verified Create's note mentions. */
async function notifyMentions(ctx, create) {
  const note = await create.getObject(ctx).catch(() => null);
  if (!(note instanceof Note) || note.id == null || create.actorId == null) return;
  const mentioned = [];
  for await (const tag of note.getTags(ctx)) if (tag?.href != null) mentioned.push(tag.href.href);
  const status = {
    uri: note.id.href, url: note.url?.href ?? note.id.href, content: note.content?.toString() ?? '',
    createdAt: note.published ? new Date(note.published.epochMilliseconds) : new Date(), account: remoteAccount(create.actorId.href),
  };
  for (const p of personaNames) if (mentioned.includes(ctx.getActorUri(p).href)) notify(p, 'mention', create.actorId.href, status);
}

/** A local post as a status: its id assigned on first sight. */
function localStatus(ctx, persona, uri) {
  let id = localStatusIds.get(uri);
  if (id == null) {
    id = String(nextStatusId++);
    localStatusIds.set(uri, id);
    localStatusUris.set(id, uri);
  }
  const note = notesOf(ctx, persona).find((n) => n.id.href === uri);
  return {
    statusId: id, uri, url: uri, content: note?.content?.toString() ?? '',
    createdAt: note?.published ? new Date(note.published.epochMilliseconds) : started, account: localAccountJson(ctx, persona),
  };
}

/** A notification, as Mastodon's Notification entity. */
function notificationJson(n) {
  return {
    id: n.id, type: n.type, created_at: n.at.toISOString(), account: remoteAccountJson(remoteAccount(n.actor)),
    status: n.status ? statusJson(n.status) : null,
  };
}

/**
 * The client-API routes that show where activities land: GET /api/v1/notifications (paged by
 * max_id, newest first, with Link rel="next" as Mastodon pages it), /api/v1/accounts/:id/followers
 * and /statuses of a persona, /api/v1/statuses/:id/favourited_by and /reblogged_by of its posts.
 * Returns false when path is none of them.
 */
async function effectsApi(req, res, url, path, persona, send) {
  const ctx = ctxNow();
  if (path === '/api/v1/notifications') {
    const limit = Math.max(1, Math.min(80, Number(url.searchParams.get('limit') ?? 40) || 40));
    const maxId = Number(url.searchParams.get('max_id') ?? Infinity);
    const older = notifications.get(persona).filter((n) => Number(n.id) < maxId).reverse();
    const page = older.slice(0, limit);
    if (older.length > limit) {
      res.setHeader('link', `<https://${req.headers.host ?? domain}/api/v1/notifications?limit=${limit}&max_id=${page[page.length - 1].id}>; rel="next"`);
    }
    return send(200, page.map(notificationJson));
  }
  let m = /^\/api\/v1\/accounts\/([^/]+)\/(followers|statuses)$/.exec(path);
  if (m) {
    const ref = accountsById.get(m[1]);
    if (ref?.local == null) return send(404, { error: 'Record not found' });
    if (m[2] === 'followers') return send(200, [...followers.get(ref.local).keys()].map((a) => remoteAccountJson(remoteAccount(a))));
    return send(200, notesOf(ctx, ref.local).reverse().map((n) => statusJson(localStatus(ctx, ref.local, n.id.href))));
  }
  m = /^\/api\/v1\/statuses\/([^/]+)\/(favourited_by|reblogged_by)$/.exec(path);
  if (m) {
    const uri = localStatusUris.get(m[1]);
    if (uri == null) return send(404, { error: 'Record not found' });
    const who = reactions.get(uri)?.[m[2] === 'favourited_by' ? 'favourite' : 'reblog'] ?? new Set();
    return send(200, [...who].map((a) => remoteAccountJson(remoteAccount(a))));
  }
  return false;
}

/**
 * Applies --forgery-mode to an inbox POST Fedify answered: drop-wrong-key turns Fedify's 401 for a
 * valid signature by a key its actor does not own into a 202 and drops the activity (Mastodon
 * answers 202 before ProcessCollectionService drops it); keep-body keeps a request whose only
 * fault is a Digest that does not match the body. Returns the answer to send instead, or null.
 */
async function answerForgery(req, url, body, response) {
  if (forgeryMode === 'refuse' || response.status !== 401) return null;
  let json = null;
  try { json = JSON.parse(body.toString('utf8')); } catch { return null; }
  const entry = { type: json?.type ?? null, id: json?.id ?? null, actor: json?.actor ?? null, at: new Date().toISOString() };
  const reason = await response.clone().text();
  if (forgeryMode === 'drop-wrong-key' && reason.startsWith('The signer and the actor do not match')) {
    remember(forgeryLog.dropped, entry, 10000);
    return new Response(null, { status: 202 });
  }
  if (forgeryMode !== 'keep-body' || digestMatches(req.headers.digest, body)) return null;
  const owner = await verifyIgnoringDigest(req, url).catch(() => null);
  if (owner == null || owner !== json?.actor) return null;
  keep(json);
  remember(forgeryLog.kept, entry, 10000);
  return new Response(null, { status: 202 });
}

/** Whether a Digest header's SHA-256 is the body's (no Digest: there is nothing to mismatch). */
function digestMatches(digest, body) {
  const m = /SHA-256=([A-Za-z0-9+/=]+)/i.exec(digest ?? '');
  return m == null || createHash('sha256').update(body).digest('base64') === m[1];
}

/**
 * Verifies a draft-cavage signature as go-fed/httpsig does: over the signed headers as sent, with
 * the Date window an inbox built on it checks, never comparing the Digest with the body. Returns
 * the key's owner, or null.
 */
async function verifyIgnoringDigest(req, url) {
  const params = Object.fromEntries([...(req.headers.signature ?? '').matchAll(/(\w+)\s*=\s*"([^"]*)"/g)].map((m) => [m[1], m[2]]));
  if (!params.keyId || !params.signature) return null;
  const date = Date.parse(req.headers.date ?? '');
  if (!(Math.abs(Date.now() - date) < 3600_000)) return null;
  if (params.created && Math.abs(Date.now() / 1000 - Number(params.created)) > 3600) return null;
  const lines = [];
  for (const h of (params.headers ?? 'date').toLowerCase().split(/\s+/)) {
    if (h === '(request-target)') lines.push(`(request-target): ${req.method.toLowerCase()} ${url.pathname}${url.search}`);
    else if (h === '(created)') lines.push(`(created): ${params.created}`);
    else if (req.headers[h] == null) return null;
    else lines.push(`${h}: ${req.headers[h]}`);
  }
  const ctx = ctxNow();
  const documentLoader = await ctx.getDocumentLoader({ identifier: instanceId });
  const { key } = await fetchKey(params.keyId, CryptographicKey, { documentLoader, contextLoader: ctx.contextLoader });
  if (key?.publicKey == null) return null;
  const ok = await crypto.subtle.verify('RSASSA-PKCS1-v1_5', key.publicKey, Buffer.from(params.signature, 'base64'), new TextEncoder().encode(lines.join('\n')));
  return ok ? (key.ownerId?.href ?? null) : null;
}

/** Keeps an activity as a server that trusted it would: a note as the actor's post, a reaction, a follower. */
function keep(json) {
  const actor = typeof json?.actor === 'string' ? json.actor : null;
  const objectId = typeof json?.object === 'string' ? json.object : json?.object?.id;
  const ctx = ctxNow();
  switch (json?.type) {
    case 'Create': {
      const note = json.object;
      if (note?.type !== 'Note' || typeof note.id !== 'string') return;
      const tags = Array.isArray(note.tag) ? note.tag : note.tag ? [note.tag] : [];
      const status = { uri: note.id, url: note.url ?? note.id, content: String(note.content ?? ''), createdAt: new Date(), account: remoteAccount(actor) };
      for (const p of personaNames) {
        if (tags.some((t) => t?.type === 'Mention' && t.href === ctx.getActorUri(p).href)) notify(p, 'mention', actor, status);
      }
      return;
    }
    case 'Like': return react('favourite', actor, objectId);
    case 'Announce': return react('reblog', actor, objectId);
    case 'Follow': {
      const target = objectId ? ctx.parseUri(new URL(objectId)) : null;
      if (target?.type !== 'actor' || !personas.has(target.identifier) || actor == null) return;
      followers.get(target.identifier).set(actor, { actor, inbox: `${actor}/inbox`, sharedInbox: null, followId: json.id ?? null, since: new Date().toISOString() });
      notify(target.identifier, 'follow', actor, null);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// HTTPS: node:http(s) <-> Fetch API adapter around federation.fetch.

const inboxPath = /^\/(inbox|users\/[^/]+\/inbox)\/?$/;

/** Reads a Node request body. */
async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks);
}

/** Writes a Fetch Response to a Node response. */
async function writeResponse(res, response) {
  const headers = {};
  response.headers.forEach((v, k) => { headers[k] = v; });
  res.writeHead(response.status, headers);
  res.end(Buffer.from(await response.arrayBuffer()));
}

async function handle(req, res) {
  const body = req.method === 'GET' || req.method === 'HEAD' ? null : await readBody(req);
  // The URL is what the client addressed (its Host header): that is what it signed.
  const url = new URL(req.url, `https://${req.headers.host ?? domain}`);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  const request = new Request(url, { method: req.method, headers, body });

  // The Mastodon client API subset used by the audience probes (issue 5), before federation.fetch.
  if (url.pathname.startsWith('/api/v1/') && await clientApi(req, res, url, body)) return;

  if (req.method !== 'POST' || !inboxPath.test(url.pathname)) {
    return writeResponse(res, await federation.fetch(request, { contextData: undefined }));
  }
  let type = 'invalid';
  let id = null;
  let json = null;
  try {
    json = JSON.parse(body.toString('utf8'));
    type = typeof json?.type === 'string' ? json.type : 'unknown';
    id = typeof json?.id === 'string' ? json.id : null;
  } catch { /* counted under "invalid" */ }
  // A paused inbox (POST /inbox/pause) answers deliveries (every one, or those of the paused
  // types) with 503, as a server that is down or restarting does: tests use it to hold a
  // sender's deliveries in its retry queue.
  if (inboxPause.status !== 0 && (inboxPause.types === null || inboxPause.types.includes(type))) {
    inboxPause.refused += 1;
    res.writeHead(inboxPause.status, { 'content-type': 'text/plain', 'retry-after': '1' });
    return res.end('inbox paused by the control API\n');
  }
  if (inboxRateLimited(res)) return;
  const store = { type, listened: false, path: url.pathname };
  const response = await goneSelfDelete(json, store) ??
    await inboxRequest.run(store, () => federation.fetch(request, { contextData: undefined }));
  const forged = await answerForgery(req, url, body, response);
  if (forged) return writeResponse(res, forged);
  if (response.status >= 400 && response.status < 500) {
    bump(stats.rejected, type);
    const reason = await response.clone().text();
    remember(stats.rejections, {
      type, id, status: response.status, reason, path: url.pathname,
      keyId: /keyId="([^"]*)"/.exec(req.headers.signature ?? '')?.[1] ?? null,
      at: new Date().toISOString(),
    }, 1000);
  } else if (response.status >= 500) {
    bump(stats.failed, type);
  } else if (!store.listened) {
    bump(stats.duplicate, type);
  }
  return writeResponse(res, response);
}

const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
  handle(req, res).catch((e) => {
    process.stderr.write(`fedify-peer: ${req.method} ${req.url}: ${e?.stack ?? e}\n`);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('internal error\n');
  });
});

// ---------------------------------------------------------------------------------------------
// Control API (plain HTTP, loopback): JSON in, JSON out.

/** Answers JSON. */
function json(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value, null, 1) + '\n');
}

/** A context for work outside a request (sending, looking up). */
function ctxNow() { return federation.createContext(new URL(origin), undefined); }

/** Resolves acct:, @user@host, user@host or an actor URL to a remote actor with the persona's signed GETs. */
async function resolveActor(ctx, persona, to) {
  const documentLoader = await ctx.getDocumentLoader({ identifier: persona });
  const actor = await ctx.lookupObject(to, { documentLoader });
  if (!isActor(actor) || actor.id == null || actor.inboxId == null) throw new Error(`${to} is not an actor with an inbox`);
  return actor;
}

/**
 * The inbox's rate limit set by the control API (POST /inbox/ratelimit), shaped as Mastodon's
 * rack-attack throttle answers: every delivery carries X-RateLimit-Limit, -Remaining and -Reset
 * (an ISO 8601 time with microseconds, the window's end), and one past the limit is answered 429
 * with those and no Retry-After. The window starts at the first delivery (Mastodon aligns it to
 * the clock; a test wants its count exact). limit 0 is no limit.
 */
const inboxLimit = { limit: 0, windowMs: 0, windowStart: 0, used: 0, limited: 0 };

/** Sets the rate-limit headers on res and answers 429 past the limit (true: answered). */
function inboxRateLimited(res) {
  if (inboxLimit.limit === 0) return false;
  const now = Date.now();
  if (inboxLimit.windowStart === 0 || now >= inboxLimit.windowStart + inboxLimit.windowMs) {
    inboxLimit.windowStart = now;
    inboxLimit.used = 0;
  }
  inboxLimit.used += 1;
  const reset = new Date(inboxLimit.windowStart + inboxLimit.windowMs).toISOString().replace('Z', '000Z');
  res.setHeader('x-ratelimit-limit', String(inboxLimit.limit));
  res.setHeader('x-ratelimit-remaining', String(Math.max(inboxLimit.limit - inboxLimit.used, 0)));
  res.setHeader('x-ratelimit-reset', reset);
  if (inboxLimit.used <= inboxLimit.limit) return false;
  inboxLimit.limited += 1;
  res.writeHead(429, { 'content-type': 'application/json' });
  res.end('{"error":"Throttled"}\n');
  return true;
}

/** The inbox pause set by the control API: status 0 is not paused; types null pauses every type. */
const inboxPause = { status: 0, types: null, refused: 0 };

const controlRoutes = {
  'GET /healthz': async () => [200, { ok: true }],
  'POST /inbox/pause': async (q, body) => {
    const status = body.status ?? 503;
    if (!Number.isInteger(status) || status < 400 || status > 599) return [400, { error: 'want {"status": 4xx or 5xx}' }];
    const types = body.types ?? null;
    if (types !== null && !(Array.isArray(types) && types.every((t) => typeof t === 'string'))) {
      return [400, { error: 'want {"types": ["Accept", ...]} or no types' }];
    }
    inboxPause.status = status;
    inboxPause.types = types;
    return [200, { paused: true, status, types }];
  },
  'POST /inbox/ratelimit': async (q, body) => {
    const limit = body.limit ?? 0;
    const window = body.window ?? 300;
    if (!Number.isInteger(limit) || limit < 0 || !Number.isInteger(window) || window < 1) {
      return [400, { error: 'want {"limit": deliveries per window (0: none), "window": seconds}' }];
    }
    Object.assign(inboxLimit, { limit, windowMs: window * 1000, windowStart: 0, used: 0, limited: 0 });
    return [200, { limit, window }];
  },
  'POST /inbox/resume': async () => {
    inboxPause.status = 0;
    inboxPause.types = null;
    return [200, { paused: false, refused: inboxPause.refused }];
  },
  'GET /personas': async () => {
    const ctx = ctxNow();
    return [200, personaNames.map((p) => ({ name: p, acct: `${p}@${domain}`, id: ctx.getActorUri(p).href, inbox: ctx.getInboxUri(p).href, posts: notesOf(ctx, p).map((n) => n.id.href), token: tokenOf(p) }))];
  },
  'GET /visibility': async () => [200, visibility],
  'GET /home': async (q) => {
    const home = homes.get(q.get('persona'));
    return home ? [200, home.slice().reverse().map(statusJson)] : [404, { error: 'unknown persona' }];
  },
  'GET /stats': async () => {
    const total = (c) => Object.values(c).reduce((a, b) => a + b, 0);
    return [200, {
      verified: stats.verified, rejected: stats.rejected, duplicate: stats.duplicate, failed: stats.failed,
      goneSelfDeletes: stats.goneSelfDeletes,
      verifiedTotal: total(stats.verified), rejectedTotal: total(stats.rejected),
      duplicateTotal: total(stats.duplicate), failedTotal: total(stats.failed),
      received: stats.received, rejections: stats.rejections, outboxErrors: stats.outboxErrors,
      clientApi: apiStats,
    }];
  },
  'POST /stats/reset': async () => {
    for (const k of ['verified', 'rejected', 'duplicate', 'failed']) stats[k] = {};
    for (const k of ['received', 'rejections', 'outboxErrors', 'notes', 'vocab', 'reactions']) stats[k] = [];
    stats.reactionsRepeated = 0;
    stats.goneSelfDeletes = 0;
    fetches.length = 0;
    delivery.reset();
    return [200, { ok: true }];
  },
  // What this server fetched from other hosts since the start or the last /stats/reset.
  'GET /fetches': async () => [200, fetches],
  // The outbox queue's workers, timeout and retry policy as configured, and every delivery
  // attempt (the newest 20 000) since the start or the last /stats/reset.
  'GET /delivery': async () => [200, delivery.report()],
  // What --forgery-mode made of forged requests: those dropped after a 202, those kept.
  'GET /forgeries': async () => [200, { mode: forgeryMode, ...forgeryLog }],
  // Switches --forgery-mode and clears its log: one server plays each kind of inbox in turn.
  'POST /forgery-mode': async (q, body) => {
    if (!FORGERY_MODES.includes(body.mode)) return [400, { error: `want {"mode": one of ${FORGERY_MODES.join(', ')}}` }];
    forgeryMode = body.mode;
    forgeryLog.dropped = [];
    forgeryLog.kept = [];
    return [200, { mode: forgeryMode }];
  },
  'GET /notes': async () => [200, stats.notes],
  'GET /vocab': async () => [200, stats.vocab],
  // Every Like and Announce received since the start or the last /stats/reset, how many repeated a
  // reaction this server kept (a real server answers those 202 and drops them), and how many it keeps.
  'GET /reactions': async () => [200, { received: stats.reactions, repeated: stats.reactionsRepeated, kept: reactionsKept.size }],
  'POST /follow': async (q, body) => {
    const { from, to } = body;
    if (!personas.has(from) || typeof to !== 'string') return [400, { error: 'want {"from": persona, "to": acct or actor URL}' }];
    const ctx = ctxNow();
    const actor = await resolveActor(ctx, from, to);
    return [202, await followActor(ctx, from, actor)];
  },
  'POST /undo-follow': async (q, body) => {
    const { from, to } = body;
    if (!personas.has(from) || typeof to !== 'string') return [400, { error: 'want {"from": persona, "to": acct or actor URL}' }];
    const ctx = ctxNow();
    const m = following.get(from);
    let entry = m.get(to);
    let actor;
    if (entry) {
      actor = await resolveActor(ctx, from, entry.actor);
    } else {
      actor = await resolveActor(ctx, from, to);
      entry = m.get(actor.id.href);
    }
    if (!entry) return [404, { error: `${from} does not follow ${to}` }];
    m.delete(entry.actor);
    await ctx.sendActivity({ identifier: from }, actor, new Undo({
      id: new URL(`${entry.followId}/undo`),
      actor: ctx.getActorUri(from),
      object: new Follow({ id: new URL(entry.followId), actor: ctx.getActorUri(from), object: actor.id }),
    }));
    return [202, { ...entry, state: 'undone' }];
  },
  'GET /following': async (q) => {
    const m = following.get(q.get('persona'));
    return m ? [200, [...m.values()]] : [404, { error: 'unknown persona' }];
  },
  'GET /followers': async (q) => {
    const m = followers.get(q.get('persona'));
    return m ? [200, [...m.values()]] : [404, { error: 'unknown persona' }];
  },
};

const controlServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://control');
  const route = controlRoutes[`${req.method} ${url.pathname}`];
  if (!route) return json(res, 404, { error: `no route ${req.method} ${url.pathname}`, routes: Object.keys(controlRoutes) });
  try {
    let body = {};
    if (req.method === 'POST') {
      const raw = (await readBody(req)).toString('utf8');
      body = raw.trim() === '' ? {} : JSON.parse(raw);
    }
    const [status, value] = await route(url.searchParams, body);
    json(res, status, value);
  } catch (e) {
    json(res, 500, { error: String(e?.message ?? e) });
  }
});

// ---------------------------------------------------------------------------------------------
// Start and stop.

/** Listens, turning a bind failure into an error that names the flag. */
function listenOn(srv, { host, port }, what) {
  return new Promise((resolve, reject) => {
    srv.once('error', (e) => reject(new Error(`--${what} ${host}:${port}: ${e.message}`)));
    srv.listen(port, host, resolve);
  });
}

const abort = new AbortController();
try {
  await listenOn(server, listen, 'listen');
  await listenOn(controlServer, control, 'control');
} catch (e) {
  process.stderr.write(`fedify-peer: ${e.message}\n`);
  process.exit(1);
}
federation.startQueue(undefined, { signal: abort.signal });
process.stdout.write(JSON.stringify({
  ready: true, origin, listen: `${listen.host}:${listen.port}`, control: `${control.host}:${control.port}`,
  personas: personaNames.map((p) => `${p}@${domain}`), followPolicy,
  tokens: Object.fromEntries(personaNames.map((p) => [p, tokenOf(p)])),
}) + '\n');

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    abort.abort();
    server.close();
    controlServer.close();
    server.closeAllConnections?.();
    controlServer.closeAllConnections?.();
    setTimeout(() => process.exit(0), 200).unref();
  });
}
