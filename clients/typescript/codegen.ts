// graphql-codegen: typed documents for the operations in src/operations/, from the server's
// schema.graphql, and the persisted-documents manifest the server's TRUSTED_DOCUMENTS loads.
// `npm run codegen` writes src/gql/ (committed; the suite checks it is up to date);
// CODEGEN_OUT writes elsewhere (the check generates into a scratch directory).
import type { CodegenConfig } from '@graphql-codegen/cli';
import { addTypenameSelectionDocumentTransform } from '@graphql-codegen/client-preset';

const out = process.env.CODEGEN_OUT ?? './src/gql/';

const config: CodegenConfig = {
  schema: '../../schema.graphql',
  documents: ['src/operations/**/*.graphql'],
  ignoreNoDocuments: false,
  generates: {
    [out]: {
      preset: 'client',
      presetConfig: {
        // Plain objects in results (no useFragment() unmasking): the operations spread
        // fragments for reuse, not for component-level data masking.
        fragmentMasking: false,
        // persisted-documents.json: {"sha256:<hex>": "<document>"}, and every typed document
        // carries its hash in __meta__.hash (for Apollo's persisted-query link).
        persistedDocuments: { hashAlgorithm: 'sha256' },
      },
      config: {
        scalars: { DateTime: 'string' },
        enumsAsTypes: true,
        useTypeImports: true,
        // Apollo's InMemoryCache adds __typename to every selection before sending; the
        // manifest must hold the same documents, or a hash would run a document whose
        // results the cache cannot normalize.
      },
      documentTransforms: [addTypenameSelectionDocumentTransform],
    },
  },
};

export default config;
