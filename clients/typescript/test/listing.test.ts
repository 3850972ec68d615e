// The cache keeps one list per listing: every argument of Product.comments that changes
// which comments it holds, or their order, keys the cached list. No server needed.
//
// Run: node --test with tsx. tests/test_typescript_client.py runs it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { buildSchema, isObjectType } from 'graphql';

import { LISTING_ARGUMENTS, createCache, listingKey, prependCreatedComment } from '../src/apollo';
import { applyCommentEvent } from '../src/events';
import { CommentCardFragmentDoc, ProductCommentsDocument, type ProductCommentsQuery } from '../src/gql/graphql';

// Which page of a list a query asks for; every other argument chooses the list.
const PAGE_ARGUMENTS = new Set(['first', 'after', 'last', 'before']);

test('every listing argument of Product.comments in schema.graphql keys the cache', () => {
  const schema = buildSchema(readFileSync(new URL('../../../schema.graphql', import.meta.url), 'utf8'));
  const product = schema.getType('Product');
  assert.ok(isObjectType(product));
  const comments = product.getFields().comments;
  assert.ok(comments);
  const listing = comments.args.map((arg) => arg.name).filter((name) => !PAGE_ARGUMENTS.has(name));
  assert.deepEqual([...listing].sort(), [...LISTING_ARGUMENTS].sort());
});

test('each listing argument makes a list of its own, and the defaults are the same list', () => {
  const base = JSON.stringify(listingKey({}));
  const changed: Record<(typeof LISTING_ARGUMENTS)[number], unknown> = {
    language: 'de',
    ratings: [1, 2],
    verifiedOnly: true,
    orderBy: 'MOST_HELPFUL',
    facets: { topic: 'battery' },
  };
  for (const name of LISTING_ARGUMENTS) {
    assert.notEqual(JSON.stringify(listingKey({ [name]: changed[name] })), base, name);
  }
  const defaults = { language: null, ratings: null, verifiedOnly: false, orderBy: 'NEWEST' };
  assert.equal(JSON.stringify(listingKey(defaults)), base);
  assert.equal(JSON.stringify(listingKey({ ratings: [5, 4, 3, 2, 1] })), base);
  assert.equal(JSON.stringify(listingKey({ ratings: [2, 1, 2] })), JSON.stringify(listingKey({ ratings: [1, 2] })));
  assert.equal(JSON.stringify(listingKey({ language: 'DE' })), JSON.stringify(listingKey({ language: 'de' })));
  // Facets: no filter is the list without facets; answers in any order are one list.
  assert.equal(JSON.stringify(listingKey({ facets: { withPhotos: false, excludeIncentivized: null } })), base);
  const fit = { key: 'fit', value: 'small' };
  const recommend = { key: 'would-recommend', value: 'yes' };
  assert.equal(
    JSON.stringify(listingKey({ facets: { attributes: [recommend, fit] } })),
    JSON.stringify(listingKey({ facets: { attributes: [fit, recommend] } })),
  );
  assert.notEqual(
    JSON.stringify(listingKey({ facets: { topic: 'battery', excludeIncentivized: true } })),
    JSON.stringify(listingKey({ facets: { topic: 'battery' } })),
  );
});

function page(commentIds: string[]): ProductCommentsQuery {
  return {
    __typename: 'Query',
    product: {
      __typename: 'Product',
      id: 'UHJvZHVjdDpw',
      productId: 'p',
      comments: {
        __typename: 'CommentConnection',
        totalCount: commentIds.length,
        pageInfo: {
          __typename: 'PageInfo',
          hasNextPage: false,
          hasPreviousPage: false,
          startCursor: commentIds[0] ? `c-${commentIds[0]}` : null,
          endCursor: commentIds.length ? `c-${commentIds.at(-1)}` : null,
        },
        edges: commentIds.map((commentId) => ({
          __typename: 'CommentEdge',
          cursor: `c-${commentId}`,
          node: {
            __typename: 'Comment',
            id: `g-${commentId}`,
            commentId,
            rating: 4,
            language: 'en',
            title: null,
            body: 'b',
            author: 'a',
            createdAt: '2026-01-01T00:00:00.000Z',
            helpfulCount: 0,
          },
        })),
        plan: null,
      },
    },
  };
}

test('a cached list never answers another order or filter', () => {
  const cache = createCache();
  const newest = { productId: 'p', first: 3 };
  cache.writeQuery({ query: ProductCommentsDocument, variables: newest, data: page(['c3', 'c2', 'c1']) });
  assert.deepEqual(
    cache.readQuery({ query: ProductCommentsDocument, variables: newest })?.product?.comments?.edges.map((e) => e.node.commentId),
    ['c3', 'c2', 'c1'],
  );
  // The same list, asked for with the defaults written out.
  const spelled = { ...newest, orderBy: 'NEWEST' as const, verifiedOnly: false };
  assert.ok(cache.readQuery({ query: ProductCommentsDocument, variables: spelled })?.product?.comments);
  // Other lists are not in the cache: a query for them goes to the server.
  for (const other of [
    { orderBy: 'OLDEST' as const },
    { orderBy: 'MOST_HELPFUL' as const },
    { orderBy: 'HIGHEST_RATING' as const },
    { verifiedOnly: true },
    { language: 'de' },
    { ratings: [5] },
  ]) {
    const read = cache.readQuery({ query: ProductCommentsDocument, variables: { ...newest, ...other } });
    assert.equal(read?.product?.comments ?? null, null, JSON.stringify(other));
  }
});

test('a created comment goes first in newest-first lists it belongs to; other orders are dropped', () => {
  const cache = createCache();
  const lists = {
    newest: { productId: 'p', first: 3 },
    english: { productId: 'p', first: 3, language: 'en' },
    german: { productId: 'p', first: 3, language: 'de' },
    oldest: { productId: 'p', first: 3, orderBy: 'OLDEST' as const },
    helpful: { productId: 'p', first: 3, orderBy: 'MOST_HELPFUL' as const },
    verified: { productId: 'p', first: 3, verifiedOnly: true },
  };
  for (const variables of Object.values(lists)) {
    cache.writeQuery({ query: ProductCommentsDocument, variables, data: page(['c2', 'c1']) });
  }
  const node = page(['c9']).product?.comments?.edges[0]?.node;
  assert.ok(node);
  // As the mutation's answer does before its update runs: the new comment is in the cache.
  cache.writeFragment({ fragment: CommentCardFragmentDoc, data: node });
  prependCreatedComment(cache, 'p', { cursor: 'c-c9', node });
  const ids = (variables: object) =>
    cache
      .readQuery({ query: ProductCommentsDocument, variables: variables as typeof lists.newest })
      ?.product?.comments?.edges.map((edge) => edge.node.commentId) ?? null;
  assert.deepEqual(ids(lists.newest), ['c9', 'c2', 'c1']);
  assert.deepEqual(ids(lists.english), ['c9', 'c2', 'c1']);
  assert.deepEqual(ids(lists.german), ['c2', 'c1']); // an English comment
  // Where it goes in another order, or whether it is a verified purchase, is the server's
  // to say: those lists are fetched again.
  assert.equal(ids(lists.oldest), null);
  assert.equal(ids(lists.helpful), null);
  assert.equal(ids(lists.verified), null);
});

test('an event past the loaded pages waits for the page that loads it; totalCount counts it', () => {
  const cache = createCache();
  const variables = { productId: 'p', first: 2 };
  const loaded = page(['c3', 'c2']);
  const comments = loaded.product?.comments;
  assert.ok(comments);
  comments.pageInfo.hasNextPage = true;
  comments.totalCount = 3;
  cache.writeQuery({ query: ProductCommentsDocument, variables, data: loaded });
  // An older comment (it sorts after c2, beyond the loaded page) and a newer one.
  const older = { ...comments.edges[0]!.node, commentId: 'c1', createdAt: '2025-12-31T00:00:00.000Z' };
  const newer = { ...comments.edges[0]!.node, commentId: 'c9', createdAt: '2026-02-01T00:00:00.000Z' };
  for (const node of [older, newer]) {
    cache.writeFragment({ fragment: CommentCardFragmentDoc, data: node });
    applyCommentEvent(cache, 'p', {}, {
      __typename: 'CommentEvent',
      kind: 'PUBLISHED',
      commentId: node.commentId,
      nodeId: node.id,
      comment: node,
      edge: { __typename: 'CommentEdge', cursor: `c-${node.commentId}`, node },
      stats: { __typename: 'RatingStats', total: 5, average: 4, histogram: [] },
    });
  }
  const after = cache.readQuery({ query: ProductCommentsDocument, variables })?.product?.comments;
  assert.deepEqual(after?.edges.map((edge) => edge.node.commentId), ['c9', 'c3', 'c2']);
  assert.equal(after?.totalCount, 5);
  assert.equal(after?.pageInfo.startCursor, 'c-c9');
  assert.equal(after?.pageInfo.endCursor, 'c-c2');
});
