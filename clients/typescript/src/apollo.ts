// Apollo Client setup for the product comments API: the cache's type policies, the
// persisted-query links (automatic persisted queries, trusted documents) and the cache
// update that puts a created comment at the top of its product's listing.
import { ApolloCache, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import type { Reference, TypePolicies } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { relayStylePagination } from '@apollo/client/utilities';
import type { DocumentNode } from 'graphql';

import type { CommentCardFragment } from './gql/graphql';

export const typePolicies: TypePolicies = {
  // Products are addressed by the shop's own id: a page knows it from its URL, so
  // cache.identify({ __typename: 'Product', productId }) works without the global id.
  // Every selection of a Product must include productId (the generated documents do).
  Product: {
    keyFields: ['productId'],
    fields: {
      // One cached list per filter (language, ratings); first/after/last/before are
      // pages of it, merged in order by relayStylePagination (forwards and backwards).
      comments: relayStylePagination(['language', 'ratings']),
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

/** Put a created comment first in every cached listing of its product that it belongs to
 * (the unfiltered ones, and those whose language and ratings it matches), counting it. */
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
      comments(existing, { storeFieldName, readField, toReference, isReference }) {
        if (!existing || isReference(existing) || !matchesFilter(storeFieldName, edge.node)) return existing;
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

/** Whether a comment belongs to the listing stored under this field name, e.g.
 * `comments:{"language":"de","ratings":[4,5]}` (keyArgs language and ratings). */
function matchesFilter(storeFieldName: string, comment: CommentCardFragment): boolean {
  const start = storeFieldName.indexOf(':');
  if (start < 0) return true;
  const args = JSON.parse(storeFieldName.slice(start + 1)) as { language?: string | null; ratings?: number[] | null };
  if (args.language != null && args.language.toLowerCase() !== comment.language.toLowerCase()) return false;
  if (args.ratings != null && args.ratings.length > 0 && !args.ratings.includes(comment.rating)) return false;
  return true;
}
