// Every generated operation against a live server, through Apollo Client and its cache.
//
//   COMMENTS_GRAPHQL_URL          the server (APQ on, the default), e.g. http://127.0.0.1:8000/graphql
//   COMMENTS_TOKEN                a bearer token for the writes; the test writes several comments
//                                 on one product as one author, so run the server with
//                                 COMMENTS_PER_PRODUCT=0 (the suite's live servers do)
//   COMMENTS_VOTER_TOKEN          a bearer token of another viewer, who votes on the comments
//   COMMENTS_TRUSTED_GRAPHQL_URL  optional: a server started with TRUSTED_DOCUMENTS set to
//                                 src/gql/persisted-documents.json (its suite is skipped without)
//
// Run: npm test (node --test with tsx). tests/test_typescript_client.py starts both servers.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { ApolloClient, ApolloLink, CombinedGraphQLErrors, gql } from '@apollo/client';
import { print } from 'graphql';

import {
  automaticPersistedQueries,
  createCache,
  httpLink,
  prependCreatedComment,
  trustedDocuments,
} from '../src/apollo';
import {
  CreateCommentDocument,
  DeleteCommentDocument,
  LeaderboardDocument,
  ProductCommentsDocument,
  ProductMarkupDocument,
  ProductPageDocument,
  ViewerVotesDocument,
  VoteHelpfulDocument,
  type CreateCommentMutation,
  type CommentCardFragment,
} from '../src/gql/graphql';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see the top of test/api.test.ts)`);
  return value;
}

const url = required('COMMENTS_GRAPHQL_URL');
const token = required('COMMENTS_TOKEN');
const voterToken = required('COMMENTS_VOTER_TOKEN');
const trustedUrl = process.env.COMMENTS_TRUSTED_GRAPHQL_URL;
const auth = { authorization: `Bearer ${token}` };

/** What went over the wire: method, URL and, for POSTs, the JSON body. */
interface Sent {
  method: string;
  url: URL;
  body: Record<string, unknown> | null;
  status: number;
}

function recordingFetch(sent: Sent[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : null;
    sent.push({ method: init?.method ?? 'GET', url: new URL(String(input)), body, status: response.status });
    return response;
  };
}

function makeClient(options: { uri?: string; links?: ApolloLink[]; sent?: Sent[]; headers?: Record<string, string> } = {}) {
  const transport = httpLink(options.uri ?? url, options.headers ?? auth, options.sent ? recordingFetch(options.sent) : fetch);
  return new ApolloClient({
    cache: createCache(),
    link: ApolloLink.from([...(options.links ?? []), transport]),
  });
}

/** Whether a request carried the document itself, not only its hash. */
function carriedDocument(request: Sent): boolean {
  return request.url.searchParams.has('query') || (request.body !== null && 'query' in request.body);
}

// Apollo warns on console.warn (e.g. "Cache data may be lost when replacing the stats
// field"); the type policies must leave nothing to warn about.
const warnings: string[] = [];
const warn = console.warn;
before(() => {
  console.warn = (...args: unknown[]) => {
    warnings.push(args.map(String).join(' '));
  };
});
after(() => {
  console.warn = warn;
  assert.deepEqual(warnings, [], 'Apollo Client warned');
});

const productId = `ts-${randomUUID().slice(0, 8)}`;
// Seven comments, newest last: three pages of three (3 + 3 + 1).
const SEED: Array<{ rating: number; language: string }> = [
  { rating: 5, language: 'en' },
  { rating: 4, language: 'de' },
  { rating: 5, language: 'en' },
  { rating: 3, language: 'fr' },
  { rating: 1, language: 'en' },
  { rating: 5, language: 'de' },
  { rating: 2, language: 'en' },
];
let newestFirst: string[] = [];

async function create(
  client: ApolloClient,
  input: { productId: string; rating: number; language: string; body: string; title?: string },
): Promise<CreateCommentMutation['createComment']> {
  const { data } = await client.mutate({ mutation: CreateCommentDocument, variables: { input } });
  assert.ok(data);
  return data.createComment;
}

describe('operations against a live server', () => {
  before(async () => {
    const client = makeClient();
    const ids: string[] = [];
    for (const [n, comment] of SEED.entries()) {
      const created = await create(client, { productId, ...comment, body: `Comment ${n}`, title: `Title ${n}` });
      assert.deepEqual(created.userErrors, []);
      assert.equal(created.created, true);
      assert.ok(created.comment && created.commentEdge);
      assert.equal(created.commentEdge.node.commentId, created.comment.commentId);
      assert.equal(created.comment.productId, productId);
      ids.push(created.comment.commentId);
    }
    newestFirst = ids.reverse();
  });

  test('the product page: stats with the histogram, the first comments with cursors', async () => {
    const { data } = await makeClient().query({ query: ProductPageDocument, variables: { productId, first: 3 } });
    const product = data?.product;
    assert.ok(product);
    assert.equal(product.productId, productId);
    assert.ok(product.stats);
    assert.equal(product.stats.total, 7);
    assert.equal(product.stats.average, 25 / 7);
    assert.deepEqual(
      product.stats.histogram.map(({ rating, count }) => [rating, count]),
      [[5, 3], [4, 1], [3, 1], [2, 1], [1, 1]],
    );
    const comments = product.comments;
    assert.ok(comments);
    assert.equal(comments.totalCount, 7);
    assert.deepEqual(comments.edges.map((edge) => edge.node.commentId), newestFirst.slice(0, 3));
    assert.ok(comments.edges.every((edge) => edge.cursor.length > 0));
    assert.equal(comments.pageInfo.hasNextPage, true);
    assert.equal(comments.pageInfo.startCursor, comments.edges[0]?.cursor);
    assert.equal(comments.pageInfo.endCursor, comments.edges[2]?.cursor);
    assert.equal(product.lastCommentedAt, comments.edges[0]?.node.createdAt);
  });

  test('the review markup: a JSON-LD string with the exact counters and the newest reviews', async () => {
    const variables = { productId, name: 'Shoe </script>', reviews: 2 };
    const { data } = await makeClient().query({ query: ProductMarkupDocument, variables });
    const markup = data?.product?.structuredData;
    assert.ok(markup);
    // Serialized and escaped for a <script> element by the server: nothing in it ends one.
    assert.doesNotMatch(markup, /[<>&\u2028\u2029]/);
    const item = JSON.parse(markup) as {
      '@type': string;
      name: string;
      aggregateRating: Record<string, unknown>;
      review: Array<{ reviewBody: string; name: string; reviewRating: { ratingValue: number } }>;
    };
    assert.equal(item['@type'], 'Product');
    assert.equal(item.name, 'Shoe </script>');
    assert.deepEqual(item.aggregateRating, {
      '@type': 'AggregateRating',
      ratingValue: 3.57, // 25 / 7, to 2 decimals
      reviewCount: 7,
      bestRating: 5,
      worstRating: 1,
    });
    assert.deepEqual(
      item.review.map((review) => [review.reviewBody, review.name, review.reviewRating.ratingValue]),
      [
        ['Comment 6', 'Title 6', 2],
        ['Comment 5', 'Title 5', 5],
      ],
    );
  });

  test('the cache walks three pages forwards (first/after) into one list', async () => {
    const client = makeClient();
    const variables = { productId, first: 3 };
    let page = (await client.query({ query: ProductCommentsDocument, variables })).data?.product?.comments;
    for (let n = 1; n < 3; n += 1) {
      assert.ok(page?.pageInfo.hasNextPage && page.pageInfo.endCursor);
      // What fetchMore({ variables: { after } }) does in a component: the next page,
      // merged by relayStylePagination into the cached list.
      const next = await client.query({
        query: ProductCommentsDocument,
        variables: { ...variables, after: page.pageInfo.endCursor },
        fetchPolicy: 'network-only',
      });
      page = next.data?.product?.comments;
    }
    const cached = client.readQuery({ query: ProductCommentsDocument, variables })?.product?.comments;
    assert.ok(cached);
    assert.deepEqual(cached.edges.map((edge) => edge.node.commentId), newestFirst);
    assert.equal(cached.pageInfo.hasNextPage, false);
    assert.equal(cached.totalCount, 7);
    assert.equal(cached.plan?.strategy, 'ALL');
    // Comments are normalized by commentId, products by productId.
    const extracted = client.cache.extract() as Record<string, unknown>;
    assert.ok(`Comment:{"commentId":"${newestFirst[0]}"}` in extracted);
    assert.ok(`Product:{"productId":"${productId}"}` in extracted);

    // A comment created through the client goes first in the cached list, by commentEdge.
    const created = await client.mutate({
      mutation: CreateCommentDocument,
      variables: { input: { productId, rating: 4, language: 'en', body: 'Newest' } },
      update(cache, { data }) {
        const edge = data?.createComment.commentEdge;
        if (edge) prependCreatedComment(cache, productId, edge);
      },
    });
    const edge = created.data?.createComment.commentEdge;
    assert.ok(edge);
    const after = client.readQuery({ query: ProductCommentsDocument, variables })?.product?.comments;
    assert.ok(after);
    assert.deepEqual(after.edges.map((e) => e.node.commentId), [edge.node.commentId, ...newestFirst]);
    assert.equal(after.edges[0]?.node.body, 'Newest');
    assert.equal(after.totalCount, 8);
    assert.equal(after.pageInfo.startCursor, edge.cursor);
    // The server agrees: it is the newest comment.
    const fresh = await makeClient().query({ query: ProductCommentsDocument, variables: { productId, first: 1 } });
    assert.equal(fresh.data?.product?.comments?.edges[0]?.node.commentId, edge.node.commentId);

    // Deleting it: the payload's product brings the new stats, merged into the cached ones.
    await client.query({ query: ProductPageDocument, variables: { productId, first: 3 } });
    const deleted = await client.mutate({ mutation: DeleteCommentDocument, variables: { id: edge.node.id } });
    assert.deepEqual(deleted.data?.deleteComment.userErrors, []);
    const stats = client.readQuery({ query: ProductPageDocument, variables: { productId, first: 3 } })?.product?.stats;
    assert.equal(stats?.total, 7);
    assert.equal(stats?.histogram.find((entry) => entry.rating === 4)?.count, 1);

    // An answer with fewer stats fields (another team's operation, say) is merged into the
    // cached stats: the histogram stays, and Apollo has no data loss to warn about.
    client.writeFragment({
      id: client.cache.identify({ __typename: 'Product', productId }),
      fragment: gql`
        fragment StatsTotal on Product {
          productId
          stats {
            total
          }
        }
      `,
      data: { __typename: 'Product', productId, stats: { __typename: 'RatingStats', total: 70 } },
    });
    const merged = client.readQuery({ query: ProductPageDocument, variables: { productId, first: 3 } })?.product?.stats;
    assert.equal(merged?.total, 70);
    assert.equal(merged?.histogram.length, 5);
  });

  test('the cache walks three pages backwards (last/before) into the same order', async () => {
    const client = makeClient();
    const variables = { productId, last: 3 };
    let page = (await client.query({ query: ProductCommentsDocument, variables })).data?.product?.comments;
    for (let n = 1; n < 3; n += 1) {
      assert.ok(page?.pageInfo.hasPreviousPage && page.pageInfo.startCursor);
      const previous = await client.query({
        query: ProductCommentsDocument,
        variables: { ...variables, before: page.pageInfo.startCursor },
        fetchPolicy: 'network-only',
      });
      page = previous.data?.product?.comments;
    }
    const cached = client.readQuery({ query: ProductCommentsDocument, variables })?.product?.comments;
    assert.ok(cached);
    assert.deepEqual(cached.edges.map((edge) => edge.node.commentId), newestFirst);
    assert.equal(cached.pageInfo.hasPreviousPage, false);
  });

  test('a filtered listing is a list of its own', async () => {
    const { data } = await makeClient().query({
      query: ProductCommentsDocument,
      variables: { productId, language: 'en', ratings: [5, 1], first: 10 },
    });
    const comments = data?.product?.comments;
    assert.ok(comments);
    assert.deepEqual(
      comments.edges.map((edge) => [edge.node.language, edge.node.rating]),
      [['en', 1], ['en', 5], ['en', 5]],
    );
    assert.equal(comments.totalCount, 3);
  });

  test('switching the order or a filter asks the server, never the cached list of another', async () => {
    // One client, as a product page switching its sort and filters: each switch must
    // answer what a client with an empty cache gets from the server, and go to the server.
    const sent: Sent[] = [];
    const client = makeClient({ sent });
    const switches = [
      {},
      { orderBy: 'OLDEST' as const },
      { orderBy: 'HIGHEST_RATING' as const },
      { orderBy: 'LOWEST_RATING' as const },
      { orderBy: 'MOST_HELPFUL' as const },
      { verifiedOnly: true },
      { orderBy: 'OLDEST' as const, language: 'en' },
      {},
    ];
    for (const [n, chosen] of switches.entries()) {
      const variables = { productId, first: 4, ...chosen };
      const before = sent.length;
      const shown = (await client.query({ query: ProductCommentsDocument, variables })).data?.product?.comments;
      const fresh = (await makeClient().query({ query: ProductCommentsDocument, variables })).data?.product?.comments;
      assert.ok(shown && fresh, JSON.stringify(chosen));
      assert.deepEqual(
        shown.edges.map((edge) => edge.node.commentId),
        fresh.edges.map((edge) => edge.node.commentId),
        JSON.stringify(chosen),
      );
      assert.equal(shown.totalCount, fresh.totalCount, JSON.stringify(chosen));
      // The last switch goes back to the first list: the cache has it.
      assert.equal(sent.length - before, n === switches.length - 1 ? 0 : 1, JSON.stringify(chosen));
    }
    const oldest = (await client.query({ query: ProductCommentsDocument, variables: { productId, first: 4, orderBy: 'OLDEST' } }))
      .data?.product?.comments;
    assert.deepEqual(oldest?.edges.map((edge) => edge.node.commentId), [...newestFirst].reverse().slice(0, 4));
  });

  test("the viewer's vote: cast, read beside a public page, refused on one's own, withdrawn", async () => {
    // The public part of the page, sent without a token.
    const page = (await makeClient({ headers: {} }).query({ query: ProductCommentsDocument, variables: { productId, first: 2 } }))
      .data?.product?.comments;
    const target = page?.edges[0]?.node;
    assert.ok(target);
    const voter = makeClient({ headers: { authorization: `Bearer ${voterToken}` } });
    const cast = (await voter.mutate({ mutation: VoteHelpfulDocument, variables: { id: target.id, vote: 'HELPFUL' } })).data
      ?.voteHelpful;
    assert.deepEqual(cast?.userErrors, []);
    assert.equal(cast?.comment?.viewerVote, 'HELPFUL');
    assert.equal(cast?.comment?.helpfulCount, 1);
    // The small viewer query for the comments the page shows, sent with the token.
    const ids = page?.edges.map((edge) => edge.node.id) ?? [];
    const votes = (await voter.query({ query: ViewerVotesDocument, variables: { ids }, fetchPolicy: 'network-only' })).data?.nodes;
    const mine = votes?.map((node) => (node && 'viewerVote' in node ? [node.commentId, node.viewerVote] : null));
    assert.deepEqual(mine, ids.map((_, n) => [page?.edges[n]?.node.commentId, n === 0 ? 'HELPFUL' : null]));
    // Its author may not vote on it: a userError, nothing counted.
    const own = (await makeClient().mutate({ mutation: VoteHelpfulDocument, variables: { id: target.id, vote: 'HELPFUL' } }))
      .data?.voteHelpful;
    assert.deepEqual(own?.userErrors.map((error) => error.code), ['FORBIDDEN']);
    // Withdrawn: the cached comment follows (comments are keyed by commentId).
    const withdrawn = (await voter.mutate({ mutation: VoteHelpfulDocument, variables: { id: target.id, vote: null } })).data
      ?.voteHelpful;
    assert.equal(withdrawn?.comment?.viewerVote, null);
    assert.equal(withdrawn?.comment?.helpfulCount, 0);
    const cached = voter.readQuery({ query: ViewerVotesDocument, variables: { ids } })?.nodes[0];
    assert.ok(cached && 'viewerVote' in cached);
    assert.equal(cached.viewerVote, null);
  });

  test('the leaderboard', async () => {
    const { data } = await makeClient().query({ query: LeaderboardDocument, variables: { first: 100 } });
    const board = data?.topProducts;
    assert.ok(board);
    assert.deepEqual(board.map((entry) => entry.rank), board.map((_, n) => n + 1));
    const ours = board.find((entry) => entry.product.productId === productId);
    assert.equal(ours?.fiveStarCount, 3);
  });

  test('create and delete report every problem in userErrors', async () => {
    const client = makeClient();
    const refused = await create(client, { productId, rating: 9, language: 'en', body: ' ' });
    assert.equal(refused.comment, null);
    assert.equal(refused.commentEdge, null);
    assert.deepEqual(
      refused.userErrors.map(({ field, code }) => [field, code]).sort(),
      [[['input', 'body'], 'REQUIRED'], [['input', 'rating'], 'INVALID']],
    );
    assert.ok(refused.userErrors.every((problem) => problem.message.length > 0));

    const unknown = await client.mutate({ mutation: DeleteCommentDocument, variables: { id: 'no-such-comment' } });
    const payload = unknown.data?.deleteComment;
    assert.ok(payload);
    assert.equal(payload.deletedId, null);
    assert.deepEqual(payload.userErrors.map(({ code }) => code), ['NOT_FOUND']);
  });

  test('a failing field is null with its error and path; its siblings stay', async () => {
    const { data, error } = await makeClient().query({
      query: ProductCommentsDocument,
      variables: { productId, first: 3, after: 'not-a-cursor' },
      errorPolicy: 'all',
    });
    assert.equal(data?.product?.productId, productId);
    assert.equal(data?.product?.comments, null);
    assert.ok(CombinedGraphQLErrors.is(error), String(error));
    assert.deepEqual(error.errors[0]?.path, ['product', 'comments']);
    assert.equal(error.errors[0]?.extensions?.code, 'BAD_USER_INPUT');
  });

  test('automatic persisted queries: the hash over GET once the server knows it', async () => {
    const first: Sent[] = [];
    const warm = makeClient({ links: [automaticPersistedQueries()], sent: first, headers: {} });
    const one = await warm.query({ query: LeaderboardDocument, variables: { first: 5 } });
    assert.ok(one.data?.topProducts);
    assert.equal(first[0]?.method, 'GET');
    assert.equal(carriedDocument(first[0]!), false);
    // The first time anywhere: PersistedQueryNotFound, then the document over POST.
    if (first.length > 1) {
      assert.deepEqual(first.map((request) => [request.method, carriedDocument(request)]), [['GET', false], ['POST', true]]);
    }

    const second: Sent[] = [];
    const cold = makeClient({ links: [automaticPersistedQueries()], sent: second, headers: {} });
    const two = await cold.query({ query: LeaderboardDocument, variables: { first: 5 } });
    assert.deepEqual(two.data, one.data);
    assert.deepEqual(second.map((request) => [request.method, carriedDocument(request), request.status]), [['GET', false, 200]]);
  });
});

describe('trusted documents', { skip: trustedUrl ? false : 'COMMENTS_TRUSTED_GRAPHQL_URL is not set' }, () => {
  const trustedProduct = `ts-trusted-${randomUUID().slice(0, 8)}`;

  test('every generated operation runs by its hash alone', async () => {
    const sent: Sent[] = [];
    const client = makeClient({ uri: trustedUrl, links: [trustedDocuments(print)], sent });
    const created = await client.mutate({
      mutation: CreateCommentDocument,
      variables: { input: { productId: trustedProduct, rating: 5, language: 'en', body: 'Trusted' } },
    });
    const comment: CommentCardFragment | null | undefined = created.data?.createComment.comment;
    assert.ok(comment);
    const page = await client.query({ query: ProductPageDocument, variables: { productId: trustedProduct } });
    assert.equal(page.data?.product?.stats?.total, 1);
    const listing = await client.query({ query: ProductCommentsDocument, variables: { productId: trustedProduct, last: 1 } });
    assert.equal(listing.data?.product?.comments?.edges[0]?.node.commentId, comment.commentId);
    const board = await client.query({ query: LeaderboardDocument });
    assert.ok(board.data?.topProducts);
    const deleted = await client.mutate({ mutation: DeleteCommentDocument, variables: { id: comment.id } });
    assert.deepEqual(deleted.data?.deleteComment.userErrors, []);

    assert.deepEqual(
      sent.map((request) => [request.method, carriedDocument(request), request.status]),
      [['POST', false, 200], ['GET', false, 200], ['GET', false, 200], ['GET', false, 200], ['POST', false, 200]],
    );
  });

  test('a document that is not in the manifest is refused', async () => {
    const sent: Sent[] = [];
    const client = makeClient({ uri: trustedUrl, links: [trustedDocuments(print)], sent });
    const unregistered = gql`
      query Unregistered {
        topProducts(first: 1) {
          rank
        }
      }
    `;
    // The hash is unknown; the link sends hash and document, and the server, which
    // registers nothing in this mode, refuses the document: FORBIDDEN, with a 403.
    await assert.rejects(client.query({ query: unregistered }), (error: unknown) => {
      assert.ok(CombinedGraphQLErrors.is(error), String(error));
      assert.equal(error.errors[0]?.extensions?.code, 'FORBIDDEN');
      return true;
    });
    assert.deepEqual(
      sent.map((request) => [request.method, carriedDocument(request), request.status]),
      [['GET', false, 200], ['POST', true, 403]],
    );

    // The document alone (no hash), as a client without the link sends it: 403 FORBIDDEN.

    const response = await fetch(trustedUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query: '{ topProducts(first: 1) { rank } }' }),
    });
    assert.equal(response.status, 403);
    const body = (await response.json()) as { errors?: Array<{ extensions?: { code?: string } }>; data?: unknown };
    assert.equal(body.errors?.[0]?.extensions?.code, 'FORBIDDEN');
    assert.equal('data' in body, false);
  });
});
