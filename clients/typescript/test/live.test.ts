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

import { ApolloClient } from '@apollo/client';
import WebSocket from 'ws';

import { createCache, httpLink } from '../src/apollo';
import {
  CommentEventsDocument,
  CreateCommentDocument,
  DeleteCommentDocument,
  type CommentEventsSubscription,
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

async function create(productId: string, language: string, body: string): Promise<string> {
  const { data } = await client.mutate({
    mutation: CreateCommentDocument,
    variables: { input: { productId, rating: 4, language, body } },
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
