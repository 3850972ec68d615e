// Live updates with Apollo Client: subscriptions over WebSocket (graphql-ws, the
// graphql-transport-ws protocol the server speaks), queries and mutations over HTTP.
import { ApolloLink } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { OperationTypeNode } from 'graphql';
import { createClient, type Client } from 'graphql-ws';

/** A graphql-ws client for the API's /graphql. ``token`` goes with connection_init (the
 * server checks it there and closes the socket with 4403 once it expires: pass a function
 * to send a fresh one on each reconnect). Browsers have WebSocket; Node 20 takes the `ws`
 * package's as ``webSocketImpl``. */
export function liveClient(
  url: string,
  token: (() => string | undefined) | string | undefined,
  webSocketImpl?: unknown,
): Client {
  return createClient({
    url: url.replace(/^http/, 'ws'),
    connectionParams: () => {
      const current = typeof token === 'function' ? token() : token;
      return current ? { authorization: `Bearer ${current}` } : {};
    },
    webSocketImpl,
    // The server closes a connection left without subscriptions; graphql-ws's lazy mode
    // (the default) closes it first and reconnects on the next subscribe.
    lazy: true,
  });
}

/** Subscriptions to the socket, everything else to ``http``. */
export function splitLink(http: ApolloLink, live: Client): ApolloLink {
  return ApolloLink.split(
    ({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION,
    new GraphQLWsLink(live),
    http,
  );
}
