/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "mutation CreateComment($input: CreateCommentInput!) {\n  createComment(input: $input) {\n    created\n    comment {\n      ...CommentCard\n      productId\n    }\n    commentEdge {\n      cursor\n      node {\n        ...CommentCard\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nmutation DeleteComment($id: ID!) {\n  deleteComment(input: {id: $id}) {\n    deletedId\n    product {\n      id\n      productId\n      stats {\n        ...ProductStats\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}": typeof types.CreateCommentDocument,
    "fragment CommentCard on Comment {\n  id\n  commentId\n  rating\n  language\n  title\n  body\n  author\n  createdAt\n}\n\nfragment ProductStats on RatingStats {\n  total\n  average\n  histogram {\n    rating\n    count\n  }\n}\n\nfragment CommentPage on CommentConnection {\n  totalCount\n  pageInfo {\n    hasNextPage\n    hasPreviousPage\n    startCursor\n    endCursor\n  }\n  edges {\n    cursor\n    node {\n      ...CommentCard\n    }\n  }\n}": typeof types.CommentCardFragmentDoc,
    "subscription CommentEvents($productId: ID!, $language: String, $ratings: [Int!]) {\n  commentEvents(productId: $productId, language: $language, ratings: $ratings) {\n    kind\n    commentId\n    nodeId\n    comment {\n      ...CommentCard\n    }\n    stats {\n      ...ProductStats\n    }\n  }\n}": typeof types.CommentEventsDocument,
    "query ProductPage($productId: ID!, $first: Int = 10) {\n  product(productId: $productId) {\n    id\n    productId\n    lastCommentedAt\n    stats {\n      ...ProductStats\n    }\n    comments(first: $first) {\n      ...CommentPage\n    }\n  }\n}\n\nquery ProductComments($productId: ID!, $language: String, $ratings: [Int!], $verifiedOnly: Boolean! = false, $orderBy: CommentOrder! = NEWEST, $first: Int, $after: String, $last: Int, $before: String) {\n  product(productId: $productId) {\n    id\n    productId\n    comments(\n      language: $language\n      ratings: $ratings\n      verifiedOnly: $verifiedOnly\n      orderBy: $orderBy\n      first: $first\n      after: $after\n      last: $last\n      before: $before\n    ) {\n      ...CommentPage\n      plan {\n        strategy\n      }\n    }\n  }\n}\n\nquery Leaderboard($first: Int! = 10) {\n  topProducts(first: $first) {\n    rank\n    fiveStarCount\n    product {\n      id\n      productId\n    }\n  }\n}": typeof types.ProductPageDocument,
    "mutation VoteHelpful($id: ID!, $vote: HelpfulVote) {\n  voteHelpful(input: {id: $id, vote: $vote}) {\n    comment {\n      id\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nquery ViewerVotes($ids: [ID!]!) {\n  nodes(ids: $ids) {\n    id\n    ... on Comment {\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n  }\n}": typeof types.VoteHelpfulDocument,
};
const documents: Documents = {
    "mutation CreateComment($input: CreateCommentInput!) {\n  createComment(input: $input) {\n    created\n    comment {\n      ...CommentCard\n      productId\n    }\n    commentEdge {\n      cursor\n      node {\n        ...CommentCard\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nmutation DeleteComment($id: ID!) {\n  deleteComment(input: {id: $id}) {\n    deletedId\n    product {\n      id\n      productId\n      stats {\n        ...ProductStats\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}": types.CreateCommentDocument,
    "fragment CommentCard on Comment {\n  id\n  commentId\n  rating\n  language\n  title\n  body\n  author\n  createdAt\n}\n\nfragment ProductStats on RatingStats {\n  total\n  average\n  histogram {\n    rating\n    count\n  }\n}\n\nfragment CommentPage on CommentConnection {\n  totalCount\n  pageInfo {\n    hasNextPage\n    hasPreviousPage\n    startCursor\n    endCursor\n  }\n  edges {\n    cursor\n    node {\n      ...CommentCard\n    }\n  }\n}": types.CommentCardFragmentDoc,
    "subscription CommentEvents($productId: ID!, $language: String, $ratings: [Int!]) {\n  commentEvents(productId: $productId, language: $language, ratings: $ratings) {\n    kind\n    commentId\n    nodeId\n    comment {\n      ...CommentCard\n    }\n    stats {\n      ...ProductStats\n    }\n  }\n}": types.CommentEventsDocument,
    "query ProductPage($productId: ID!, $first: Int = 10) {\n  product(productId: $productId) {\n    id\n    productId\n    lastCommentedAt\n    stats {\n      ...ProductStats\n    }\n    comments(first: $first) {\n      ...CommentPage\n    }\n  }\n}\n\nquery ProductComments($productId: ID!, $language: String, $ratings: [Int!], $verifiedOnly: Boolean! = false, $orderBy: CommentOrder! = NEWEST, $first: Int, $after: String, $last: Int, $before: String) {\n  product(productId: $productId) {\n    id\n    productId\n    comments(\n      language: $language\n      ratings: $ratings\n      verifiedOnly: $verifiedOnly\n      orderBy: $orderBy\n      first: $first\n      after: $after\n      last: $last\n      before: $before\n    ) {\n      ...CommentPage\n      plan {\n        strategy\n      }\n    }\n  }\n}\n\nquery Leaderboard($first: Int! = 10) {\n  topProducts(first: $first) {\n    rank\n    fiveStarCount\n    product {\n      id\n      productId\n    }\n  }\n}": types.ProductPageDocument,
    "mutation VoteHelpful($id: ID!, $vote: HelpfulVote) {\n  voteHelpful(input: {id: $id, vote: $vote}) {\n    comment {\n      id\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nquery ViewerVotes($ids: [ID!]!) {\n  nodes(ids: $ids) {\n    id\n    ... on Comment {\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n  }\n}": types.VoteHelpfulDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation CreateComment($input: CreateCommentInput!) {\n  createComment(input: $input) {\n    created\n    comment {\n      ...CommentCard\n      productId\n    }\n    commentEdge {\n      cursor\n      node {\n        ...CommentCard\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nmutation DeleteComment($id: ID!) {\n  deleteComment(input: {id: $id}) {\n    deletedId\n    product {\n      id\n      productId\n      stats {\n        ...ProductStats\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}"): (typeof documents)["mutation CreateComment($input: CreateCommentInput!) {\n  createComment(input: $input) {\n    created\n    comment {\n      ...CommentCard\n      productId\n    }\n    commentEdge {\n      cursor\n      node {\n        ...CommentCard\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nmutation DeleteComment($id: ID!) {\n  deleteComment(input: {id: $id}) {\n    deletedId\n    product {\n      id\n      productId\n      stats {\n        ...ProductStats\n      }\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "fragment CommentCard on Comment {\n  id\n  commentId\n  rating\n  language\n  title\n  body\n  author\n  createdAt\n}\n\nfragment ProductStats on RatingStats {\n  total\n  average\n  histogram {\n    rating\n    count\n  }\n}\n\nfragment CommentPage on CommentConnection {\n  totalCount\n  pageInfo {\n    hasNextPage\n    hasPreviousPage\n    startCursor\n    endCursor\n  }\n  edges {\n    cursor\n    node {\n      ...CommentCard\n    }\n  }\n}"): (typeof documents)["fragment CommentCard on Comment {\n  id\n  commentId\n  rating\n  language\n  title\n  body\n  author\n  createdAt\n}\n\nfragment ProductStats on RatingStats {\n  total\n  average\n  histogram {\n    rating\n    count\n  }\n}\n\nfragment CommentPage on CommentConnection {\n  totalCount\n  pageInfo {\n    hasNextPage\n    hasPreviousPage\n    startCursor\n    endCursor\n  }\n  edges {\n    cursor\n    node {\n      ...CommentCard\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "subscription CommentEvents($productId: ID!, $language: String, $ratings: [Int!]) {\n  commentEvents(productId: $productId, language: $language, ratings: $ratings) {\n    kind\n    commentId\n    nodeId\n    comment {\n      ...CommentCard\n    }\n    stats {\n      ...ProductStats\n    }\n  }\n}"): (typeof documents)["subscription CommentEvents($productId: ID!, $language: String, $ratings: [Int!]) {\n  commentEvents(productId: $productId, language: $language, ratings: $ratings) {\n    kind\n    commentId\n    nodeId\n    comment {\n      ...CommentCard\n    }\n    stats {\n      ...ProductStats\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query ProductPage($productId: ID!, $first: Int = 10) {\n  product(productId: $productId) {\n    id\n    productId\n    lastCommentedAt\n    stats {\n      ...ProductStats\n    }\n    comments(first: $first) {\n      ...CommentPage\n    }\n  }\n}\n\nquery ProductComments($productId: ID!, $language: String, $ratings: [Int!], $verifiedOnly: Boolean! = false, $orderBy: CommentOrder! = NEWEST, $first: Int, $after: String, $last: Int, $before: String) {\n  product(productId: $productId) {\n    id\n    productId\n    comments(\n      language: $language\n      ratings: $ratings\n      verifiedOnly: $verifiedOnly\n      orderBy: $orderBy\n      first: $first\n      after: $after\n      last: $last\n      before: $before\n    ) {\n      ...CommentPage\n      plan {\n        strategy\n      }\n    }\n  }\n}\n\nquery Leaderboard($first: Int! = 10) {\n  topProducts(first: $first) {\n    rank\n    fiveStarCount\n    product {\n      id\n      productId\n    }\n  }\n}"): (typeof documents)["query ProductPage($productId: ID!, $first: Int = 10) {\n  product(productId: $productId) {\n    id\n    productId\n    lastCommentedAt\n    stats {\n      ...ProductStats\n    }\n    comments(first: $first) {\n      ...CommentPage\n    }\n  }\n}\n\nquery ProductComments($productId: ID!, $language: String, $ratings: [Int!], $verifiedOnly: Boolean! = false, $orderBy: CommentOrder! = NEWEST, $first: Int, $after: String, $last: Int, $before: String) {\n  product(productId: $productId) {\n    id\n    productId\n    comments(\n      language: $language\n      ratings: $ratings\n      verifiedOnly: $verifiedOnly\n      orderBy: $orderBy\n      first: $first\n      after: $after\n      last: $last\n      before: $before\n    ) {\n      ...CommentPage\n      plan {\n        strategy\n      }\n    }\n  }\n}\n\nquery Leaderboard($first: Int! = 10) {\n  topProducts(first: $first) {\n    rank\n    fiveStarCount\n    product {\n      id\n      productId\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation VoteHelpful($id: ID!, $vote: HelpfulVote) {\n  voteHelpful(input: {id: $id, vote: $vote}) {\n    comment {\n      id\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nquery ViewerVotes($ids: [ID!]!) {\n  nodes(ids: $ids) {\n    id\n    ... on Comment {\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n  }\n}"): (typeof documents)["mutation VoteHelpful($id: ID!, $vote: HelpfulVote) {\n  voteHelpful(input: {id: $id, vote: $vote}) {\n    comment {\n      id\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n    userErrors {\n      field\n      message\n      code\n    }\n  }\n}\n\nquery ViewerVotes($ids: [ID!]!) {\n  nodes(ids: $ids) {\n    id\n    ... on Comment {\n      commentId\n      helpfulCount\n      notHelpfulCount\n      viewerVote\n    }\n  }\n}"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;