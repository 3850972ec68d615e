"""Thin resolvers: GraphQL arguments in, storage requests out, storage values back.

They know nothing of Strawberry; the schema package wraps what they return in its types.
"""
