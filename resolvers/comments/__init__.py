"""Comments: listing pages, single comments, and the writes on them."""
