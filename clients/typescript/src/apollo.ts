// Apollo Client setup for the product comments API: the cache's type policies, the
// persisted-query links (automatic persisted queries, trusted documents) and the cache
// update that puts a created comment at the top of its product's listing.
import { ApolloCache, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import type { Reference, TypePolicies } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { relayStylePagination } from '@apollo/client/utilities';
import type { DocumentNode } from 'graphql';

import type { CommentCardFragment } from './gql/graphql';

/** The arguments of `Product.comments` that choose which list it is (its filters and its
 * order), as opposed to which page of it (first, after, last, before). Every one of them
 * must key the cached list: a list cached under fewer would answer another filter or order
 * with its own comments (a test derives them from schema.graphql). */
export const LISTING_ARGUMENTS = ['language', 'ratings', 'verifiedOnly', 'orderBy', 'facets'] as const;

/** What a listing's arguments are when a query leaves them out (the schema's defaults),
 * so that `comments(first: 5)` and `comments(first: 5, orderBy: NEWEST)` share one list. */
const LISTING_DEFAULTS: Record<string, unknown> = {
  language: null,
  ratings: null,
  verifiedOnly: false,
  orderBy: 'NEWEST',
  facets: null,
};

/** A listing's arguments as the cache keys it: defaults filled in, the language in lower
 * case (the server matches it so), the ratings sorted without repeats, and all five
 * ratings the same as none (the server reads them so). */
export interface ListingKey {
  language: string | null;
  ratings: number[] | null;
  verifiedOnly: boolean;
  orderBy: string;
  facets: FacetsKey | null;
}

/** A listing's facets as the cache keys them: answers sorted by key, booleans that are
 * false or null left out (no filter, as the server reads them), null for no facet at all. */
export interface FacetsKey {
  attributes?: { key: string; value: string }[];
  topic?: string;
  withPhotos?: true;
  excludeIncentivized?: true;
  productId?: string;
}

function facetsKey(given: unknown): FacetsKey | null {
  if (given === null || typeof given !== 'object') return null;
  const facets = given as Record<string, unknown>;
  const key: FacetsKey = {};
  if (Array.isArray(facets.attributes) && facets.attributes.length > 0) {
    key.attributes = (facets.attributes as { key: string; value: string }[])
      .map(({ key: k, value }) => ({ key: k, value }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
  if (typeof facets.topic === 'string') key.topic = facets.topic;
  if (facets.withPhotos === true) key.withPhotos = true;
  if (facets.excludeIncentivized === true) key.excludeIncentivized = true;
  if (typeof facets.productId === 'string') key.productId = facets.productId;
  return Object.keys(key).length > 0 ? key : null;
}

export function listingKey(args: Record<string, unknown> | null): ListingKey {
  const given: Record<string, unknown> = {
    ...LISTING_DEFAULTS,
    ...Object.fromEntries(Object.entries(args ?? {}).filter(([, value]) => value !== undefined)),
  };
  const language = typeof given.language === 'string' ? given.language.toLowerCase() : null;
  let ratings = Array.isArray(given.ratings) ? [...new Set(given.ratings as number[])].sort((a, b) => a - b) : null;
  if (ratings && [1, 2, 3, 4, 5].every((rating) => ratings?.includes(rating))) ratings = null;
  return {
    language,
    ratings,
    verifiedOnly: given.verifiedOnly === true,
    orderBy: String(given.orderBy),
    facets: facetsKey(given.facets),
  };
}

/** The cache's storage name of a listing: `comments:{"language":…,"orderBy":…,…}`. */
export function listingStoreName(args: Record<string, unknown> | null, context: { fieldName: string }): string {
  return `${context.fieldName}:${JSON.stringify(listingKey(args))}`;
}

export const typePolicies: TypePolicies = {
  // Products are addressed by the shop's own id: a page knows it from its URL, so
  // cache.identify({ __typename: 'Product', productId }) works without the global id.
  // Every selection of a Product must include productId (the generated documents do).
  Product: {
    keyFields: ['productId'],
    fields: {
      // One cached list per filter and order (LISTING_ARGUMENTS, defaults filled in);
      // first/after/last/before are pages of it, merged in order by relayStylePagination
      // (forwards and backwards).
      comments: relayStylePagination(listingStoreName),
    },
  },
  Comment: { keyFields: ['commentId'] },
  // RatingStats has no id of its own: it is identified by its product and its language,
  // which is exactly where it is stored, as the value of Product.stats({"language": …}).
  // So it is not normalized (keyFields: false) and a newer answer is merged into the
  // cached one (merge: true) instead of replacing it, without Apollo's "Cache data may be
  // lost" warning; fetch the same fields everywhere (the ProductStats fragment) so that no
  // stale field survives a merge.
  RatingStats: { keyFields: false, merge: true },
  // The leaderboard's entries, counts and pages are plain values inside their parents.
  ProductRanking: { keyFields: false },
  RatingCount: { keyFields: false },
};

export function createCache(): InMemoryCache {
  return new InMemoryCache({ typePolicies });
}

/** SHA-256 in hex with the Web Crypto API (browsers, Node 20+). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Automatic persisted queries: the hash of the printed document, queries over GET (which
 * HTTP caches can keep), the document sent once when the server does not know the hash. */
export function automaticPersistedQueries(): ApolloLink {
  return new PersistedQueryLink({ sha256: sha256Hex, useGETForHashedQueries: true });
}

/** The hash graphql-codegen embedded in a generated document (`__meta__.hash`,
 * "sha256:<hex>"), as the bare hex the persisted-query protocol carries; for other
 * documents, the hash of their printed text (which no manifest holds). */
export async function manifestHash(document: DocumentNode, printed: () => string): Promise<string> {
  const meta = (document as DocumentNode & { __meta__?: { hash?: unknown } }).__meta__;
  if (typeof meta?.hash === 'string') {
    return meta.hash.replace(/^sha256:/, '');
  }
  return sha256Hex(printed());
}

/** Trusted documents: only the generated operations' hashes are sent, never a document
 * (an unknown hash is retried in full, and the server refuses that with FORBIDDEN). */
export function trustedDocuments(print: (document: DocumentNode) => string): ApolloLink {
  return new PersistedQueryLink({
    generateHash: (document) => manifestHash(document, () => print(document)),
    useGETForHashedQueries: true,
  });
}

export function httpLink(uri: string, headers: Record<string, string> = {}, fetchImpl: typeof fetch = fetch): HttpLink {
  return new HttpLink({
    uri,
    headers: {
      accept: 'application/graphql-response+json, application/json;q=0.9',
      ...headers,
    },
    fetch: fetchImpl,
  });
}

/** Put a created comment first in every cached newest-first listing of its product that
 * it belongs to (the unfiltered ones, and those whose language and ratings it matches),
 * counting it. A listing in another order, or of verified purchases only, is dropped from
 * the cache instead (its next read fetches it): where the comment goes there is the
 * server's to say. */
export function prependCreatedComment(
  cache: ApolloCache,
  productId: string,
  edge: { cursor: string; node: CommentCardFragment },
): void {
  const productRef = cache.identify({ __typename: 'Product', productId });
  const nodeRef = cache.identify({ __typename: 'Comment', commentId: edge.node.commentId });
  if (!productRef || !nodeRef) return;
  cache.modify<{ comments: CachedConnection }>({
    id: productRef,
    fields: {
      comments(existing, { storeFieldName, readField, toReference, isReference, DELETE }) {
        if (!existing || isReference(existing)) return existing;
        const listing = listingOf(storeFieldName);
        if (listing.orderBy !== 'NEWEST' || listing.verifiedOnly) return DELETE;
        if (!matchesFilter(listing, edge.node)) return existing;
        if (existing.edges.some((cached) => readField('commentId', cached.node) === edge.node.commentId)) {
          return existing;
        }
        const node = toReference(nodeRef);
        if (!node) return existing;
        return {
          ...existing,
          edges: [{ __typename: 'CommentEdge', cursor: edge.cursor, node }, ...existing.edges],
          pageInfo: { ...existing.pageInfo, startCursor: edge.cursor },
          totalCount: typeof existing.totalCount === 'number' ? existing.totalCount + 1 : existing.totalCount,
        };
      },
    },
  });
}

/** A cached connection as relayStylePagination stores it. */
interface CachedConnection {
  edges: Array<{ __typename?: string; cursor: string; node: Reference }>;
  pageInfo: { startCursor?: string | null; [key: string]: unknown };
  totalCount?: number;
  [key: string]: unknown;
}

/** The listing stored under a field name, e.g. `comments:{"language":"de",…}`. */
function listingOf(storeFieldName: string): ListingKey {
  const start = storeFieldName.indexOf(':');
  const args = start < 0 ? null : (JSON.parse(storeFieldName.slice(start + 1)) as Record<string, unknown>);
  return listingKey(args);
}

/** Whether a comment belongs to a listing's language and ratings. */
function matchesFilter(listing: ListingKey, comment: CommentCardFragment): boolean {
  if (listing.language != null && listing.language !== comment.language.toLowerCase()) return false;
  if (listing.ratings != null && !listing.ratings.includes(comment.rating)) return false;
  return true;
}
