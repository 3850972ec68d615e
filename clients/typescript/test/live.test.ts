// Live updates through Apollo Client: a subscription over WebSocket (graphql-ws) sees the
// comments written over HTTP, as a product page would.
//
//   COMMENTS_LIVE_GRAPHQL_URL  a server on a table with its stream (live updates on)
//   COMMENTS_TOKEN             a bearer token for the writes
//
// Run: node --test with tsx. tests/test_typescript_client.py starts the server.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';

import { ApolloClient, gql } from '@apollo/client';
import WebSocket from 'ws';

import { createCache, httpLink } from '../src/apollo';
import { applyCommentEvent } from '../src/events';
import {
  CommentEventsDocument,
  CreateCommentDocument,
  DeleteCommentDocument,
  ProductCommentsDocument,
  type CommentEventsSubscription,
  type CommentOrder,
} from '../src/gql/graphql';
import { liveClient, splitLink } from '../src/live';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see the top of test/live.test.ts)`);
  return value;
}

const url = required('COMMENTS_LIVE_GRAPHQL_URL');
const token = required('COMMENTS_TOKEN');
const socket = liveClient(url, () => token, WebSocket);
const client = new ApolloClient({
  cache: createCache(),
  link: splitLink(httpLink(url, { authorization: `Bearer ${token}` }), socket),
});
after(async () => {
  await socket.dispose();
});

type CommentEvent = CommentEventsSubscription['commentEvents'];

/** Events as they come, and a way to wait for the next one. */
function events(productId: string) {
  const queue: CommentEvent[] = [];
  const waiting: Array<(event: CommentEvent) => void> = [];
  const subscription = client
    .subscribe({ query: CommentEventsDocument, variables: { productId, language: 'en' } })
    .subscribe({
      next: (result) => {
        const event = result.data?.commentEvents;
        if (!event) throw new Error(`an event without data: ${String(result.error)} ${JSON.stringify(result)}`);
        const resolve = waiting.shift();
        if (resolve) resolve(event);
        else queue.push(event);
      },
    });
  const next = (ms: number) =>
    new Promise<CommentEvent | null>((resolve) => {
      const ready = queue.shift();
      if (ready) return resolve(ready);
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(settle), 1);
        resolve(null);
      }, ms);
      const settle = (event: CommentEvent) => {
        clearTimeout(timer);
        resolve(event);
      };
      waiting.push(settle);
    });
  return { next, stop: () => subscription.unsubscribe() };
}

async function create(productId: string, language: string, body: string, rating = 4): Promise<string> {
  const { data } = await client.mutate({
    mutation: CreateCommentDocument,
    variables: { input: { productId, rating, language, body } },
  });
  assert.deepEqual(data?.createComment.userErrors, []);
  const id = data?.createComment.comment?.commentId;
  assert.ok(id);
  return id;
}

test('a subscription sees comments written over HTTP, with the counters', async () => {
  const productId = `live-${randomUUID().slice(0, 8)}`;
  const live = events(productId);
  try {
    // The subscription is live once an event arrives: write until one does (a write made
    // before the server registered the subscription has no event for it).
    let first: CommentEvent | null = null;
    let written = '';
    for (let attempt = 0; attempt < 5 && first === null; attempt += 1) {
      written = await create(productId, 'en', `hello ${attempt}`);
      first = await live.next(5000);
      while (first !== null && first.commentId !== written) first = await live.next(5000);
    }
    assert.ok(first, 'no event arrived');
    assert.equal(first.kind, 'PUBLISHED');
    assert.equal(first.comment?.body.startsWith('hello'), true);
    assert.equal(first.stats.total >= 1, true);

    // Another language is not in the listing watched: no event for it; the next one is
    // the deletion.
    await create(productId, 'de', 'hallo');
    await client.mutate({ mutation: DeleteCommentDocument, variables: { id: written } });
    const removed = await live.next(10000);
    assert.ok(removed, 'no event for the deletion');
    assert.equal(removed.kind, 'REMOVED');
    assert.equal(removed.commentId, written);
    assert.equal(removed.comment, null);
  } finally {
    live.stop();
  }
});

const ORDERS: CommentOrder[] = ['NEWEST', 'OLDEST', 'HIGHEST_RATING', 'LOWEST_RATING', 'MOST_HELPFUL'];
const EDIT = gql`
  mutation Rerate($id: ID!, $rating: Int!) {
    updateComment(input: { id: $id, rating: $rating }) {
      comment {
        commentId
        rating
      }
      userErrors {
        code
      }
    }
  }
`;

/** The comment ids of a product's list in an order: as cached, or as a fresh fetch. */
async function listed(from: ApolloClient, productId: string, orderBy: CommentOrder, cached: boolean): Promise<string[]> {
  const variables = { productId, first: 50, orderBy };
  const comments = cached
    ? from.readQuery({ query: ProductCommentsDocument, variables })?.product?.comments
    : (await from.query({ query: ProductCommentsDocument, variables, fetchPolicy: 'network-only' })).data?.product?.comments;
  assert.ok(comments, `no ${orderBy} list`);
  return comments.edges.map((edge) => edge.node.commentId);
}

test('events applied to the cached lists equal a fresh fetch, in every order', async () => {
  const productId = `orders-${randomUUID().slice(0, 8)}`;
  const seeded: string[] = [];
  for (const [n, rating] of [3, 5, 1, 4].entries()) seeded.push(await create(productId, 'en', `seed ${n}`, rating));
  const [rerated = '', deleted = ''] = seeded;
  // One subscription per order, each applying its events to its own list in the cache.
  const seen = new Map<CommentOrder, string[]>(ORDERS.map((order) => [order, []]));
  const subscriptions = ORDERS.map((orderBy) =>
    client.subscribe({ query: CommentEventsDocument, variables: { productId, orderBy } }).subscribe({
      next: (result) => {
        const event = result.data?.commentEvents;
        if (!event) throw new Error(`an event without data: ${JSON.stringify(result)}`);
        applyCommentEvent(client.cache, productId, { orderBy }, event);
        seen.get(orderBy)?.push(`${event.kind}:${event.commentId}`);
      },
    }),
  );
  const until = async (done: () => boolean, what: string) => {
    for (let waited = 0; !done(); waited += 50) {
      assert.ok(waited < 15000, `timed out waiting for ${what}: ${JSON.stringify([...seen])}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  try {
    // Live once every subscription has an event: probe until each has one.
    for (let attempt = 0; ; attempt += 1) {
      const probe = await create(productId, 'en', `probe ${attempt}`, 2);
      try {
        await until(() => ORDERS.every((order) => seen.get(order)?.includes(`PUBLISHED:${probe}`)), 'a probe');
        break;
      } catch (error) {
        if (attempt >= 4) throw error;
      }
    }
    // The lists as a page would load them, then the writes, each applied from its event.
    for (const order of ORDERS) await listed(client, productId, order, false);
    const added = await create(productId, 'en', 'added', 5);
    const { data } = await client.mutate({ mutation: EDIT, variables: { id: rerated, rating: 1 } });
    assert.deepEqual((data as { updateComment: { userErrors: unknown[] } }).updateComment.userErrors, []);
    await client.mutate({ mutation: DeleteCommentDocument, variables: { id: deleted } });
    await until(() => ORDERS.every((order) => seen.get(order)?.includes(`REMOVED:${deleted}`)), 'the deletion');
    const fresh = new ApolloClient({ cache: createCache(), link: httpLink(url) });
    for (const order of ORDERS) {
      const cached = await listed(client, productId, order, true);
      assert.deepEqual(cached, await listed(fresh, productId, order, false), order);
      assert.ok(cached.includes(added) && !cached.includes(deleted), order);
    }
  } finally {
    for (const subscription of subscriptions) subscription.unsubscribe();
  }
});
