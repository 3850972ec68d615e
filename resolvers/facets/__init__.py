"""Facets: the filters a listing takes beyond language, ratings and verified purchase, the
shop's attribute definitions, and the summaries of answers and topics."""
