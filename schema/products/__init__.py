"""Products in GraphQL: Product with its counters and comments, and the leaderboard."""
