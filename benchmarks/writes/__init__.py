"""Write benchmarks: the capacity of each transition of a comment's life, helpful votes on a
hot comment, the import rate, and part 1's design of copies by stream."""
