"""Comments in GraphQL: the Comment type, its keyset connection with EXPLAIN, and the
mutations that create and delete comments."""
