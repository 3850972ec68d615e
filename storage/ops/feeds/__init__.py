"""Feeds of the shop's reviews for other services, written as files from a whole-table scan.

``google`` writes Google's product review feed (schema 2.4, ``product_reviews.xsd`` beside
it) one review at a time, escaping what XML cannot hold; ``urls`` expands and checks the
URL templates reviews and products are linked by; ``catalogue_index`` keeps the catalogue
file's product identifiers in a temporary SQLite file, so a catalogue of any size costs
disk, not memory; ``export`` scans the table in parallel segments into part files with a
checkpoint after every page and resumes an interrupted run; ``files`` keeps those part
files and the checkpoint, and assembles the feed atomically.

May import what ``storage.ops`` may import; nothing else in storage imports it.
"""
