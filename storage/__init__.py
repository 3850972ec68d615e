"""Storage for product comments on DynamoDB: keys, planner, executor, writes, counters.

Knows nothing of GraphQL. The names below are the layer's public surface; the modules
behind them stay small and private in spirit.
"""

from storage.client import ClientSettings, open_client
from storage.cursor import decode_cursor, encode_cursor
from storage.errors import (
    CommentNotFound,
    InvalidCommentId,
    InvalidCommentText,
    InvalidCursor,
    InvalidInput,
    InvalidLanguage,
    InvalidPageRequest,
    InvalidProductId,
    InvalidRating,
    NotAuthor,
    RetryableError,
    StorageError,
    StorageUnavailable,
    WriteConflict,
)
from storage.executor import ExecutedQuery, Page, execute
from storage.model import (
    Comment,
    Direction,
    ListingFilter,
    NewComment,
    PageRequest,
    RatingCounts,
)
from storage.planner import Plan, PlannedQuery, Strategy, Tuning, plan_listing
from storage.reads import (
    LeaderEntry,
    batch_get_comments,
    batch_get_counts,
    get_counts,
    leaderboard,
    list_comments,
)
from storage.table import Index, TableRef, create_table
from storage.types import DynamoClient
from storage.verify import Report, repair, verify
from storage.writes import CreateResult, create_comment, delete_comment, get_comment

__all__ = [
    "ClientSettings",
    "Comment",
    "CommentNotFound",
    "CreateResult",
    "Direction",
    "DynamoClient",
    "ExecutedQuery",
    "Index",
    "InvalidCommentId",
    "InvalidCommentText",
    "InvalidCursor",
    "InvalidInput",
    "InvalidLanguage",
    "InvalidPageRequest",
    "InvalidProductId",
    "InvalidRating",
    "LeaderEntry",
    "ListingFilter",
    "NewComment",
    "NotAuthor",
    "Page",
    "PageRequest",
    "Plan",
    "PlannedQuery",
    "RatingCounts",
    "Report",
    "RetryableError",
    "StorageError",
    "StorageUnavailable",
    "Strategy",
    "TableRef",
    "Tuning",
    "WriteConflict",
    "batch_get_comments",
    "batch_get_counts",
    "create_comment",
    "create_table",
    "decode_cursor",
    "delete_comment",
    "encode_cursor",
    "execute",
    "get_comment",
    "get_counts",
    "leaderboard",
    "list_comments",
    "open_client",
    "plan_listing",
    "repair",
    "verify",
]
