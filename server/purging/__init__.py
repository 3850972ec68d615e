"""Purging shared caches on change: the tags of each change of the table (the ones answers
carry, server.http.cache_tags) sent to the proxies and CDNs in front (``PURGE_URLS``),
once per change across the processes, so that they may keep answers long.
"""
