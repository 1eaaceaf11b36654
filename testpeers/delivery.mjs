// delivery.mjs: the Fedify peer's outbound delivery queue, set up from flags and observable.
//
// A test measures, from the receiving side, how a SUT's delivery queue treats receivers that are
// down, black holes, slow or answering errors. To compare what it observed with what the queue was
// told to do, it needs the queue's parameters (not constants copied into the test) and the SUT's
// own record of each attempt. This module owns both: parseDeliveryFlags reads the flags, and
// newDelivery builds the outbox queue, the fetch wrapper that times out and logs each delivery
// attempt, and the report GET /delivery answers. The retry schedule these parameters give is
// described in fedify-peer.mjs's head comment.
import { AsyncLocalStorage } from 'node:async_hooks';
import { InProcessMessageQueue, ParallelMessageQueue } from '@fedify/fedify';

/** Fedify's default maxDelay for createExponentialBackoffPolicy: 12 hours. */
const FEDIFY_MAX_DELAY_MS = 12 * 3600 * 1000;

/** How many attempts the log keeps (the newest). */
const MAX_ATTEMPTS_LOGGED = 20000;

/**
 * The flags this module reads, for parseArgs: name -> {type: 'string'}. Each is also readable from
 * the environment through the caller's flag function.
 */
export const deliveryOptions = Object.fromEntries(
  ['delivery-workers', 'delivery-timeout-ms', 'retry-initial-ms', 'retry-factor', 'retry-max-attempts', 'retry-max-delay-ms']
    .map((name) => [name, { type: 'string' }]),
);

/** The help lines for the delivery flags. */
export const deliveryHelp = `  --delivery-workers N outbound deliveries in flight at once (default 1: Fedify's
                       InProcessMessageQueue alone; N > 1 wraps it in ParallelMessageQueue)
  --delivery-timeout-ms T  give up an outbound delivery POST after T ms (default 0: never, as
                       Fedify 1.5.9, whose delivery has no timeout)
  --retry-initial-ms MS  first retry's base wait (default 500)
  --retry-factor F     each retry's base wait is F times the last (default 2)
  --retry-max-attempts N  retries before giving up (default 6: 7 attempts in all)
  --retry-max-delay-ms MS  cap on a retry's wait (default 43200000, Fedify's 12 h)
`;

/**
 * Reads an integer flag in [min, max], or throws an Error naming the flag. Digits only: "1e3",
 * "0x10", "" and "-1" are refused rather than read as Number would.
 */
function intFlag(flag, name, dflt, min, max) {
  const raw = String(flag(name, String(dflt))).trim();
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(`--${name}: want an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/**
 * Reads the delivery flags through flag(name, default) (the peer's flag-or-environment lookup).
 * Returns {workers, timeoutMs, policy: {initialDelayMs, factor, maxAttempts, maxDelayMs, jitter}};
 * throws an Error whose message names the first bad flag. With no flag given it is today's
 * queue: one worker, no timeout, 500 ms × 2^k, 6 retries, Fedify's 12 h cap.
 */
export function parseDeliveryFlags(flag) {
  const rawFactor = String(flag('retry-factor', '2')).trim();
  // A plain decimal: Number would also take "", "0x2" and "Infinity".
  const factor = /^\d+(\.\d+)?$/.test(rawFactor) ? Number(rawFactor) : NaN;
  if (!(factor >= 1 && factor <= 1000)) {
    throw new Error(`--retry-factor: want a number from 1 to 1000 (each retry waits at least as long as the last), got ${JSON.stringify(rawFactor)}`);
  }
  return {
    workers: intFlag(flag, 'delivery-workers', 1, 1, 1000),
    timeoutMs: intFlag(flag, 'delivery-timeout-ms', 0, 0, FEDIFY_MAX_DELAY_MS),
    policy: {
      initialDelayMs: intFlag(flag, 'retry-initial-ms', 500, 0, FEDIFY_MAX_DELAY_MS),
      factor,
      maxAttempts: intFlag(flag, 'retry-max-attempts', 6, 0, 1000),
      maxDelayMs: intFlag(flag, 'retry-max-delay-ms', FEDIFY_MAX_DELAY_MS, 0, 10 * FEDIFY_MAX_DELAY_MS),
      jitter: true,
    },
  };
}

/**
 * The options for Fedify's createExponentialBackoffPolicy from a parsed policy: the same numbers
 * GET /delivery reports, so the report is what the queue does.
 */
export function backoffOptions(policy) {
  return {
    initialDelay: { milliseconds: policy.initialDelayMs },
    factor: policy.factor,
    maxAttempts: policy.maxAttempts,
    maxDelay: { milliseconds: policy.maxDelayMs },
    jitter: policy.jitter,
  };
}

/**
 * A MessageQueue that hands every message to another queue and runs each handler call inside
 * current.run(message), so the fetch wrapper knows which outbox message (Fedify's activity id,
 * inbox and attempt number) a delivery POST belongs to. It changes no scheduling.
 */
class TaggingQueue {
  #inner;
  #current;
  constructor(inner, current) {
    this.#inner = inner;
    this.#current = current;
  }

  enqueue(message, options) { return this.#inner.enqueue(message, options); }

  enqueueMany(messages, options) { return this.#inner.enqueueMany(messages, options); }

  listen(handler, options) {
    return this.#inner.listen((message) => this.#current.run(message, () => handler(message)), options);
  }
}

/**
 * Delivery is the outbox queue and the attempt log of one peer. Build it with newDelivery; pass
 * queue to createFederation's queue.outbox, wrap the global fetch with wrapFetch, and answer
 * GET /delivery with report().
 */
class Delivery {
  /** The parsed flags (parseDeliveryFlags). */
  config;
  /** The outbox queue for createFederation. */
  queue;
  /** [{activity, inbox, attempt, startedAt, endedAt, status, error}], oldest first. */
  #attempts = [];
  /** The outbox message whose handler is running (Fedify's own), for the fetch wrapper. */
  #current = new AsyncLocalStorage();

  constructor(config) {
    this.config = config;
    // InProcessMessageQueue's 5 s poll interval adds no wait to a retry: its listener sleeps that
    // long only while the queue is empty, and every enqueue (a retry's too: a delayed enqueue is a
    // setTimeout that then enqueues) wakes it at once. ParallelMessageQueue keeps that listener
    // and only caps how many handlers run at once.
    const base = new InProcessMessageQueue();
    const inner = config.workers > 1 ? new ParallelMessageQueue(base, config.workers) : base;
    this.queue = new TaggingQueue(inner, this.#current);
  }

  /**
   * Returns fetch that behaves as next but, for a POST (Fedify's deliveries are the only POSTs the
   * peer makes), logs the attempt and, with a timeout, aborts it after timeoutMs. Fedify 1.5.9
   * fetches with no timeout, so a black-hole inbox would hold a worker for good; a real server's
   * HTTP client gives up, and a test of black holes needs the SUT to give up too. The timeout runs
   * until the response's headers (a slow inbox answers late, not slowly), and is combined with the
   * request's own signal, so an abort by Fedify still aborts.
   */
  wrapFetch(next) {
    return async (input, init) => {
      const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
      if (method !== 'POST') return next(input, init);
      let request = input instanceof Request && init === undefined ? input : new Request(input, init);
      const entry = await this.#begin(request);
      let timer = null;
      if (this.config.timeoutMs > 0) {
        // Not AbortSignal.timeout: AbortSignal.any holds its sources weakly, and Node 20 collects a
        // timeout signal nothing else holds, so a black hole's attempt would never end. The timer
        // holds this controller until it fires or the fetch settles.
        const timeout = new AbortController();
        timer = setTimeout(() => timeout.abort(new DOMException(`delivery timeout after ${this.config.timeoutMs} ms`, 'TimeoutError')), this.config.timeoutMs);
        request = new Request(request, { signal: AbortSignal.any([request.signal, timeout.signal]) });
      }
      try {
        const response = await next(request);
        entry.status = response.status;
        return response;
      } catch (e) {
        entry.error = errorText(e);
        throw e;
      } finally {
        clearTimeout(timer);
        entry.endedAt = new Date().toISOString();
      }
    };
  }

  /** Logs the start of a delivery attempt and returns its entry, to be completed when it ends. */
  async #begin(request) {
    const message = this.#current.getStore();
    const activity = message?.activityId ?? await activityIdOf(request);
    const inbox = request.url;
    // Fedify's own attempt number; null for a POST made outside the queue (the peer makes none).
    const attempt = Number.isInteger(message?.attempt) ? message.attempt : null;
    const entry = { activity, inbox, attempt, startedAt: new Date().toISOString(), endedAt: null, status: null, error: null };
    this.#attempts.push(entry);
    if (this.#attempts.length > MAX_ATTEMPTS_LOGGED) this.#attempts.shift();
    return entry;
  }

  /** Forgets the attempts logged so far (POST /stats/reset). */
  reset() {
    this.#attempts.length = 0;
  }

  /**
   * What GET /delivery answers: {workers, timeoutMs, policy, attempts}; the policy as configured,
   * the attempts oldest first, one still in flight with endedAt null.
   */
  report() {
    return { workers: this.config.workers, timeoutMs: this.config.timeoutMs, policy: { ...this.config.policy }, attempts: this.#attempts };
  }
}

/** Builds the delivery queue and attempt log for a parsed config (parseDeliveryFlags). */
export function newDelivery(config) { return new Delivery(config); }

/** The id in a delivery's JSON body, or null when the body is not JSON with a string id. */
async function activityIdOf(request) {
  try {
    const id = JSON.parse(await request.clone().text())?.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/** A fetch failure as one line: undici says "fetch failed" and puts the reason in cause. */
function errorText(e) {
  const text = String(e?.message ?? e);
  const cause = e?.cause?.message ?? e?.cause?.code;
  return cause ? `${text}: ${cause}` : text;
}
