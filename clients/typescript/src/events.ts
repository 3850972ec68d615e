// Live events into Apollo's cache: each commentEvents event put into the cached list of the
// listing it was subscribed for, in its place in that list's order.
import type { ApolloCache, Reference } from '@apollo/client';

import { listingKey } from './apollo';
import type { CommentCardFragment, CommentEventsSubscription, CommentOrder } from './gql/graphql';

type CommentEvent = CommentEventsSubscription['commentEvents'];

/** The listing a subscription watches: its variables, as the list's query gives them. */
export interface WatchedListing {
  language?: string | null;
  ratings?: number[] | null;
  verifiedOnly?: boolean;
  orderBy?: CommentOrder;
}

/** What places a comment in an order (the fields of CommentCard it is sorted by). */
type Placed = Pick<CommentCardFragment, 'commentId' | 'createdAt' | 'rating' | 'helpfulCount'>;

/** Negative when ``a`` comes before ``b`` in ``order``: the server's order, ties newest
 * first (a comment's sort key is its creation time, then its id). */
export function compareIn(order: CommentOrder, a: Placed, b: Placed): number {
  // Compared as the server's keys are: code unit by code unit, not by locale.
  const byText = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const newestFirst = byText(`${b.createdAt}#${b.commentId}`, `${a.createdAt}#${a.commentId}`);
  switch (order) {
    case 'OLDEST':
      return -newestFirst;
    case 'HIGHEST_RATING':
      return b.rating - a.rating || newestFirst;
    case 'LOWEST_RATING':
      return a.rating - b.rating || newestFirst;
    case 'MOST_HELPFUL':
      return b.helpfulCount - a.helpfulCount || newestFirst;
    default:
      return newestFirst;
  }
}

/** A cached connection as relayStylePagination stores it. */
interface CachedConnection {
  edges: Array<{ __typename?: string; cursor: string; node: Reference }>;
  pageInfo: {
    startCursor?: string | null;
    endCursor?: string | null;
    hasNextPage?: boolean;
    hasPreviousPage?: boolean;
    [key: string]: unknown;
  };
  totalCount?: number;
  [key: string]: unknown;
}

/**
 * Put one event into the cached list of the listing watched (the list `Product.comments`
 * with the same language, ratings, verifiedOnly and orderBy), as a fresh fetch would show
 * it:
 * - PUBLISHED: the comment's edge goes in its place in the order, and totalCount counts it;
 *   past the loaded pages' end (more to load) or before their start, it is left for the
 *   fetch that loads that part;
 * - EDITED: the comment moves to its new place (its rating, in a rating order);
 * - REMOVED: its edge goes, and totalCount no longer counts it.
 * Votes are not events: in MOST_HELPFUL, a comment's moves by votes come with the next
 * fetch. The event's comment is in the cache already (Apollo stores a subscription's data).
 */
export function applyCommentEvent(
  cache: ApolloCache,
  productId: string,
  watched: WatchedListing,
  event: CommentEvent,
): void {
  const productRef = cache.identify({ __typename: 'Product', productId });
  if (!productRef) return;
  const wanted = JSON.stringify(listingKey({ ...watched }));
  const order = watched.orderBy ?? 'NEWEST';
  const commentRef = cache.identify({ __typename: 'Comment', commentId: event.commentId });
  cache.modify<{ comments: CachedConnection }>({
    id: productRef,
    fields: {
      comments(existing, { storeFieldName, readField, toReference, isReference }) {
        if (!existing || isReference(existing)) return existing;
        const start = storeFieldName.indexOf(':');
        const key = start < 0 ? listingKey(null) : listingKey(JSON.parse(storeFieldName.slice(start + 1)) as Record<string, unknown>);
        if (JSON.stringify(key) !== wanted) return existing;
        const idOf = (node: Reference) => readField<string>('commentId', node);
        const had = existing.edges.some((edge) => idOf(edge.node) === event.commentId);
        let edges = existing.edges.filter((edge) => idOf(edge.node) !== event.commentId);
        let totalCount = existing.totalCount;
        if (event.kind === 'REMOVED') {
          if (typeof totalCount === 'number') totalCount = Math.max(0, totalCount - 1);
        } else if (event.edge && commentRef) {
          const node = toReference(commentRef);
          if (!node) return existing;
          const placed = event.edge.node;
          const placeOf = (ref: Reference): Placed => ({
            commentId: readField<string>('commentId', ref) ?? '',
            createdAt: readField<string>('createdAt', ref) ?? '',
            rating: readField<number>('rating', ref) ?? 0,
            helpfulCount: readField<number>('helpfulCount', ref) ?? 0,
          });
          let at = edges.findIndex((edge) => compareIn(order, placed, placeOf(edge.node)) < 0);
          if (at < 0) at = edges.length;
          const beyondEnd = at === edges.length && existing.pageInfo.hasNextPage === true;
          const beforeStart = at === 0 && existing.pageInfo.hasPreviousPage === true;
          if (!beyondEnd && !beforeStart) {
            edges = [...edges.slice(0, at), { __typename: 'CommentEdge', cursor: event.edge.cursor, node }, ...edges.slice(at)];
          }
          if (event.kind === 'PUBLISHED' && !had && typeof totalCount === 'number') totalCount += 1;
        }
        return {
          ...existing,
          edges,
          totalCount,
          pageInfo: {
            ...existing.pageInfo,
            startCursor: edges[0]?.cursor ?? existing.pageInfo.startCursor ?? null,
            endCursor: edges.at(-1)?.cursor ?? existing.pageInfo.endCursor ?? null,
          },
        };
      },
    },
  });
}
